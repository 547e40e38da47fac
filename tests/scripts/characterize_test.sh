#!/bin/bash
# The cluster launchers' logic on one machine: scripts/slurm/characterize.sbatch (fake srun) and
# scripts/pbs/characterize.pbs (fake mpiexec) sweep 1 and 2 nodes x 2 ranks with the mpi backend,
# time kernels, fit and report; a launch that fails mid-way (FAKE_FAIL_CALL) stops the job, and
# the rerun skips the finished steps and completes the rest (requeue).
# Usage: characterize_test.sh SOURCE_DIR BUILD_DIR slurm|pbs
set -euo pipefail
src=$1 build=$(cd "$2" && pwd) kind=$3
tmp=$(mktemp -d /tmp/scalefit_characterize_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sh "$src/tests/scripts/fake_launchers.sh" "$tmp/bin"
export PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/launch.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export BUILD_DIR=$build OUT=$tmp/out SYSTEM=fakecluster GPUS_PER_NODE=2 BACKEND=mpi
export OPS=allreduce,allgather MIN_BYTES=8 MAX_BYTES=4K POINT_TIME=0.02 NCCL_DEBUG=WARN
export KERNELS_ENGINE=cpu KERNELS_DTYPES=fp32 KERNELS_MODELS=configs/models/gpt-125m.yaml
export KERNELS_ARGS="--scale 0.25 --max-time 0.1 -w 1"
py_ok=false
for p in python3 /usr/bin/python3; do "$p" -c "import matplotlib" 2>/dev/null && py_ok=true; done
$py_ok || export REPORT_ARGS=--data-only
fail() { echo "FAIL: $*"; echo "--- launch log:"; cat "$FAKE_LOG" 2>/dev/null; exit 1; }

if [ "$kind" = slurm ]; then
  export SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 SLURM_SUBMIT_DIR=$src HOSTS=$'nodeA\nnodeB'
  job=(bash "$src/scripts/slurm/characterize.sbatch")
else
  printf 'nodeA\nnodeA\nnodeB\nnodeB\n' >"$tmp/nodefile"
  export PBS_JOBID=77.polaris PBS_NODEFILE=$tmp/nodefile PBS_O_WORKDIR=$src
  job=(bash "$src/scripts/pbs/characterize.pbs")
fi

# Run 1: the second launch (comm at 2 nodes) fails, as a preempted job would.
if FAKE_FAIL_CALL=2 "${job[@]}" >"$tmp/run1.log" 2>&1; then fail "run 1 should fail"; fi
[ -e "$OUT/steps/comm-n1.done" ] || fail "comm at 1 node not marked done"
[ ! -e "$OUT/steps/comm-n2.done" ] || fail "comm at 2 nodes marked done after a failed launch"
lines1=$(wc -l <"$OUT/comm-n1.jsonl")

# Run 2 (the requeue): 1 node skipped, 2 nodes and kernels measured, fit and report written.
rm -f "$FAKE_LOG.count"
"${job[@]}" >"$tmp/run2.log" 2>&1 || { cat "$tmp/run2.log"; fail "run 2 failed"; }
grep -q "comm-n1: done in an earlier run, skipped" "$tmp/run2.log" || fail "run 2 redid 1 node"
[ "$(wc -l <"$OUT/comm-n1.jsonl")" = "$lines1" ] || fail "1-node records changed on rerun"
for s in comm-n1 comm-n2 kernels-nodeA-gpt-125m-fp32; do
  [ -e "$OUT/steps/$s.done" ] || fail "step $s not done"
done
grep -Eq "allreduce:[a-z]*:4=2x2:float" "$OUT/fit.yaml" || fail "no 2-node world curve in fit.yaml"
grep -Eq "allreduce:[a-z]*:2=2x1:float" "$OUT/fit.yaml" || fail "no inter-node curve in fit.yaml"
grep -Eq "allgather:[a-z]*:2=1x2:float" "$OUT/fit.yaml" || fail "no intra-node curve in fit.yaml"
# The kernels' compute fit, or (CPU kernels too noisy on a loaded machine) the fallback that fits
# the collectives alone and says so.
grep -q "^compute:" "$OUT/fit.yaml" ||
  grep -q "fitting the collectives alone" "$tmp/run2.log" || fail "no compute section, no fallback"
[ -s "$OUT/report/index.html" ] || fail "no report"
[ "$(grep -c '^# job' "$OUT/job.env")" = 2 ] || fail "job.env should record both runs"
grep -q "^NCCL_DEBUG=WARN" "$OUT/job.env" || fail "NCCL settings not recorded"
grep -q "^MAX_BYTES=4K" "$OUT/job.env" || fail "variables not recorded"
if [ "$kind" = slurm ]; then
  grep -q -- "-N 1 --ntasks-per-node=2 --nodelist=nodeA " "$FAKE_LOG" || fail "no 1-node srun"
  grep -q -- "-N 2 --ntasks-per-node=2 --nodelist=nodeA,nodeB " "$FAKE_LOG" || fail "no 2-node srun"
  grep -q -- "-N 1 --ntasks-per-node=1 --nodelist=nodeA .*kernels" "$FAKE_LOG" || fail "no kernels srun"
else
  grep -q -- "-n 2 --ppn 2 .*set_affinity_gpu_polaris.sh" "$FAKE_LOG" || fail "no 1-node mpiexec with affinity"
  grep -q "^hostfile nodeA nodeB $" "$FAKE_LOG" || fail "no 2-node hostfile"
  grep -q -- "-n 4 --ppn 2 " "$FAKE_LOG" || fail "no 2-node mpiexec"
  # The affinity wrapper: local rank 1 of 4 GPUs gets GPU 2 (reverse order, as on Polaris).
  [ "$(PMI_LOCAL_RANK=1 "$src/scripts/pbs/set_affinity_gpu_polaris.sh" sh -c 'echo $CUDA_VISIBLE_DEVICES')" = 2 ] ||
    fail "affinity wrapper"
fi
echo "characterize ($kind): resumed after a failed launch; fit and report written"
