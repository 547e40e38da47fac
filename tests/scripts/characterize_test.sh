#!/bin/bash
# The cluster launchers' logic on one machine: scripts/slurm/characterize.sbatch (fake srun,
# scontrol and mpirun) and scripts/pbs/characterize.pbs (fake mpiexec) sweep 1 and 2 nodes x 4
# ranks with the mpi backend, time kernels, fit and report.
#   - bad variables exit 2 naming them, before anything is launched;
#   - slurm: the job runs as Slurm runs it: a copy of the batch file in a spool folder, started in
#     a submit directory that is not the checkout; the checkout comes from `scontrol show job`
#     (Command=), results go to the submit directory's results/, ranks per node from
#     SLURM_NTASKS_PER_NODE; a launcher that ignores the asked rank count (srun without -n inside
#     a 2 x 4 job, Slurm 22.05) is caught by the probe before anything is measured;
#   - run 1: the comm launch at 2 nodes fails (a lost node) and the kernels launch fails: the
#     1-node collectives are still fitted and reported, and the job exits 1 naming both steps;
#   - run 2 (the requeue) skips the finished step, completes the rest; intra-node groups are
#     measured at 1 node only, so the fit takes the 2-node run (4 ranks per node);
#   - slurm: LAUNCHER=mpirun (OpenMPI's mpirun inside the allocation) with --host h:R lists.
# Usage: characterize_test.sh SOURCE_DIR BUILD_DIR slurm|pbs
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) kind=$3
tmp=$(mktemp -d /tmp/scalefit_characterize_XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
sh "$src/tests/scripts/fake_launchers.sh" "$tmp/bin"
export PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/launch.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export BUILD_DIR=$build SYSTEM=fakecluster BACKEND=mpi
export OPS=allreduce,allgather MIN_BYTES=8 MAX_BYTES=4K POINT_TIME=0.02 NCCL_DEBUG=WARN
export KERNELS_ENGINE=cpu KERNELS_DTYPES=fp32 KERNELS_MODELS=configs/models/gpt-125m.yaml
export KERNELS_ARGS="--scale 0.25 --max-time 0.1 -w 1"
unset OUT GPUS_PER_NODE SCALEFIT_HOME LAUNCHER SRUN_ARGS
py_ok=false
for p in python3 /usr/bin/python3; do "$p" -c "import matplotlib" 2>/dev/null && py_ok=true; done
$py_ok || export REPORT_ARGS=--data-only
fail() { echo "FAIL: $*"; echo "--- launch log:"; cat "$FAKE_LOG" 2>/dev/null; exit 1; }
# expect_exit CODE LOG PATTERN CMD...: CMD exits CODE and its output matches PATTERN.
expect_exit() {
  local code=$1 log=$2 pattern=$3 rc=0
  shift 3
  "$@" >"$log" 2>&1 || rc=$?
  [ "$rc" = "$code" ] || { cat "$log"; fail "$* exited $rc, expected $code"; }
  grep -q -- "$pattern" "$log" || { cat "$log"; fail "$* did not say '$pattern'"; }
}

submit=$tmp/submit  # where the job is submitted from: not the checkout
mkdir -p "$submit" "$tmp/spool"
if [ "$kind" = slurm ]; then
  export SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=8 SLURM_NTASKS_PER_NODE=4
  export SLURM_SUBMIT_DIR=$submit SLURM_JOB_NODELIST=nodeA,nodeB
  export FAKE_JOB_COMMAND=$src/scripts/slurm/characterize.sbatch
  cp "$src/scripts/slurm/characterize.sbatch" "$tmp/spool/slurm_script"  # as slurmd runs it
  job=(bash "$tmp/spool/slurm_script")
else
  printf 'nodeA\nnodeA\nnodeA\nnodeA\nnodeB\nnodeB\nnodeB\nnodeB\n' >"$tmp/nodefile"
  export PBS_JOBID=77.polaris PBS_NODEFILE=$tmp/nodefile PBS_O_WORKDIR=$submit SCALEFIT_HOME=$src
  cp "$src/scripts/pbs/characterize.pbs" "$tmp/spool/77.polaris.SC"
  job=(bash "$tmp/spool/77.polaris.SC")
fi
cd "$submit"
OUT=$submit/results/fakecluster

# Bad input: exit 2 naming the variable, nothing launched.
expect_exit 2 "$tmp/bad.log" "GPUS_PER_NODE is set but empty" env GPUS_PER_NODE= "${job[@]}"
expect_exit 2 "$tmp/bad.log" "BACKEND='cuda'" env BACKEND=cuda "${job[@]}"
expect_exit 2 "$tmp/bad.log" "MAX_BYTES is set but empty" env MAX_BYTES= "${job[@]}"
expect_exit 2 "$tmp/bad.log" "GPUS_PER_NODE='0' (ranks per node, from GPUS_PER_NODE): expected a positive integer" \
  env GPUS_PER_NODE=0 "${job[@]}"
expect_exit 2 "$tmp/bad.log" "KERNELS_MODELS: configs/models/nope.yaml not found" \
  env KERNELS_MODELS=configs/models/nope.yaml "${job[@]}"
expect_exit 2 "$tmp/bad.log" "SCALEFIT_HOME='$tmp' is not a scalefit checkout" \
  env SCALEFIT_HOME="$tmp" "${job[@]}"
# A build whose scalefit-bench cannot load here (a CUDA build on a node without CUDA): exit 2
# naming the missing library.
if command -v cc >/dev/null; then
  mkdir -p "$tmp/cudabuild/bin" "$tmp/lib"
  echo 'int sf_missing(void) { return 0; }' | cc -shared -fPIC -x c - -o "$tmp/lib/libsfmissing.so"
  echo 'int sf_missing(void); int main(void) { return sf_missing(); }' |
    cc -x c - -o "$tmp/cudabuild/bin/scalefit-bench" -L"$tmp/lib" -lsfmissing
  rm "$tmp/lib/libsfmissing.so"
  ln -s "$build/bin/scalefit" "$tmp/cudabuild/bin/scalefit"
  expect_exit 2 "$tmp/bad.log" "BUILD_DIR: .* cannot load on .*libsfmissing.so not found; on nodes without CUDA use a CPU-only build" \
    env BUILD_DIR="$tmp/cudabuild" "${job[@]}"
fi
if [ "$kind" = slurm ]; then
  expect_exit 2 "$tmp/bad.log" "ranks per node unknown: set GPUS_PER_NODE, or submit with --gpus-per-node" \
    env -u SLURM_NTASKS_PER_NODE "${job[@]}"
  # --gpus-per-node=a100:2 wins over --ntasks-per-node (dry run: the plan only)
  env SLURM_GPUS_PER_NODE=a100:2 DRY_RUN=1 OUT="$tmp/plan" "${job[@]}" >"$tmp/plan.log" 2>&1 ||
    { cat "$tmp/plan.log"; fail "dry run with SLURM_GPUS_PER_NODE"; }
  grep -q "launch 2 node(s) x 2 from host 0" "$tmp/plan.log" || fail "ranks not from --gpus-per-node"
  expect_exit 2 "$tmp/bad.log" "cannot find the scalefit checkout" \
    env FAKE_JOB_COMMAND='(null)' "${job[@]}"
  # srun that ignores -n (Slurm 22.05's inherited SLURM_NTASKS): caught before measuring.
  cat >"$tmp/bin/srun-ignores-n" <<'X'
#!/bin/sh
# drops -n NP: the step then takes the allocation's SLURM_NTASKS
a=""; skip=0
for x in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  [ "$x" = -n ] && { skip=1; continue; }
  a="$a '$x'"
done
eval exec srun-real $a
X
  mkdir -p "$tmp/bin2"
  cp "$tmp/bin/srun" "$tmp/bin2/srun-real"
  cp "$tmp/bin/fake-common.sh" "$tmp/bin2/"
  cp "$tmp/bin/srun-ignores-n" "$tmp/bin2/srun"
  chmod +x "$tmp/bin2/srun" "$tmp/bin2/srun-real"
  expect_exit 1 "$tmp/layout.log" "asked for 1 node(s) x 4 ranks (4 ranks), got nranks=8" \
    env PATH="$tmp/bin2:$PATH" OUT="$tmp/layout" "${job[@]}"
  [ ! -e "$tmp/layout/comm-n1.jsonl" ] || fail "a step with the wrong layout measured"
  grep -q "failed step(s): comm-n1" "$tmp/layout.log" || fail "the wrong layout did not name comm-n1"
  rm -f "$FAKE_LOG" "$FAKE_LOG.count"
fi

# Run 1: the 4th launch (comm at 2 nodes, after its probe) fails, as a lost node would, and so
# does every kernels launch: the 1-node collectives are fitted and reported all the same.
expect_exit 1 "$tmp/run1.log" "failed step(s): comm-n2 kernels-nodeA-gpt-125m-fp32" \
  env FAKE_FAIL_CALL=4 FAKE_FAIL_MATCH="kernels --engine" "${job[@]}"
[ -e "$OUT/steps/comm-n1.done" ] || fail "comm at 1 node not marked done (results not in the submit dir?)"
[ ! -e "$OUT/steps/comm-n2.done" ] || fail "comm at 2 nodes marked done after a failed launch"
[ ! -e "$OUT/steps/kernels-nodeA-gpt-125m-fp32.done" ] || fail "failed kernels marked done"
grep -Eq "allreduce:[a-z]*:4=1x4:float" "$OUT/fit.yaml" || fail "run 1 did not fit the 1-node run"
[ -s "$OUT/report/index.html" ] || fail "run 1 wrote no report"
lines1=$(wc -l <"$OUT/comm-n1.jsonl")
[ "$(grep -c '^=== job' "$tmp/run1.log")" = 1 ] || fail "no start line in the job log"

# Run 2 (the requeue): 1 node skipped, 2 nodes and kernels measured, fit and report written.
rm -f "$FAKE_LOG.count"
"${job[@]}" >"$tmp/run2.log" 2>&1 || { cat "$tmp/run2.log"; fail "run 2 failed"; }
grep -q "comm-n1: done in an earlier run, skipped" "$tmp/run2.log" || fail "run 2 redid 1 node"
[ "$(wc -l <"$OUT/comm-n1.jsonl")" = "$lines1" ] || fail "1-node records changed on rerun"
for s in comm-n1 comm-n2 kernels-nodeA-gpt-125m-fp32; do
  [ -e "$OUT/steps/$s.done" ] || fail "step $s not done"
done
grep -Eq "allreduce:[a-z]*:8=2x4:float" "$OUT/fit.yaml" || fail "no 2-node world curve in fit.yaml"
grep -Eq "allreduce:[a-z]*:2=2x1:float" "$OUT/fit.yaml" || fail "no inter-node curve in fit.yaml"
grep -Eq "allgather:[a-z]*:2=1x2:float" "$OUT/fit.yaml" || fail "no intra-node curve in fit.yaml"
# Intra-node groups once (INTRA_GROUPS=once): measured at 1 node, not again at 2.
grep -q '"kind": *"intra"' "$OUT/comm-n1.jsonl" || fail "no intra groups at 1 node"
! grep -q '"kind": *"intra"' "$OUT/comm-n2.jsonl" || fail "intra groups measured again at 2 nodes"
# Every step's records have the layout it asked for.
grep '"type": *"context"' "$OUT/comm-n2.jsonl" | grep -q '"nranks": *8.*' || fail "2-node context"
grep -q -- "--groups world,inter " "$FAKE_LOG" || fail "2-node sweep groups"
# The kernels' compute fit, or (CPU kernels too noisy on a loaded machine) the fallback that fits
# the collectives alone and says so.
grep -q "^compute:" "$OUT/fit.yaml" ||
  grep -q "fitting the collectives alone" "$tmp/run2.log" || fail "no compute section, no fallback"
[ -s "$OUT/report/index.html" ] || fail "no report"
[ "$(grep -c '^# job' "$OUT/job.env")" = 2 ] || fail "job.env should record both runs"
grep -q "^NCCL_DEBUG=WARN" "$OUT/job.env" || fail "NCCL settings not recorded"
grep -q "^MAX_BYTES=4K" "$OUT/job.env" || fail "variables not recorded"
grep -q "^SCALEFIT_HOME=$src\$" "$OUT/job.env" || fail "checkout not found or not recorded"
if [ "$kind" = slurm ]; then
  grep -q "^RANKS_FROM=the\\\\ job\\\\'s\\\\ --ntasks-per-node" "$OUT/job.env" || fail "ranks not from the job"
  grep -q -- "^srun --mpi=pmix -n 4 -N 1 --ntasks-per-node=4 --nodelist=nodeA .*comm" "$FAKE_LOG" || fail "no 1-node srun"
  grep -q -- "^srun --mpi=pmix -n 8 -N 2 --ntasks-per-node=4 --nodelist=nodeA,nodeB .*comm" "$FAKE_LOG" || fail "no 2-node srun"
  grep -q -- "^srun --mpi=pmix -n 1 -N 1 --ntasks-per-node=1 --nodelist=nodeA .*kernels" "$FAKE_LOG" || fail "no kernels srun"
  ! grep "^srun" "$FAKE_LOG" | grep -qv -- " -n [0-9]" || fail "an srun without -n"
  # SRUN_ARGS adds to --mpi=pmix; LAUNCHER=mpirun: OpenMPI's mpirun with per-host slots.
  rm -f "$FAKE_LOG" "$FAKE_LOG.count"
  LAUNCHER=mpirun NODE_COUNTS=2 OPS=allreduce MAX_BYTES=64 KERNELS_MODELS='' OUT="$tmp/mpirun" \
    "${job[@]}" >"$tmp/mpirun.log" 2>&1 || { cat "$tmp/mpirun.log"; fail "LAUNCHER=mpirun failed"; }
  grep -q -- "^mpirun -np 8 --map-by ppr:4:node --host nodeA:4,nodeB:4 .*comm" "$FAKE_LOG" || fail "no mpirun"
  env SRUN_ARGS="--exclusive" DRY_RUN=1 OUT="$tmp/plan2" "${job[@]}" >/dev/null 2>&1 || fail "SRUN_ARGS dry run"
  grep -q "^SRUN_ARGS=--exclusive" "$tmp/plan2/job.env" || fail "SRUN_ARGS not recorded"
  grep -q "^SRUN_MPI=pmix" "$tmp/plan2/job.env" || fail "SRUN_ARGS replaced --mpi=pmix"
  grep -q "^#SBATCH --open-mode=append" "$src/scripts/slurm/characterize.sbatch" || fail "log truncated on requeue"
  ! grep -q "^#SBATCH --gpus" "$src/scripts/slurm/characterize.sbatch" || fail "GPU gres in #SBATCH"
else
  grep -q -- "-n 4 --ppn 4 .*set_affinity_gpu_polaris.sh" "$FAKE_LOG" || fail "no 1-node mpiexec with affinity"
  grep -q "^hostfile nodeA nodeB $" "$FAKE_LOG" || fail "no 2-node hostfile"
  grep -q -- "-n 8 --ppn 4 " "$FAKE_LOG" || fail "no 2-node mpiexec"
  grep -q -- "-n 1 --ppn 1 .*kernels" "$FAKE_LOG" || fail "no 1-rank kernels mpiexec"
  # The affinity wrapper: local rank 1 of 4 GPUs gets GPU 2 (reverse order, as on Polaris).
  [ "$(PMI_LOCAL_RANK=1 "$src/scripts/pbs/set_affinity_gpu_polaris.sh" sh -c 'echo $CUDA_VISIBLE_DEVICES')" = 2 ] ||
    fail "affinity wrapper"
fi
echo "characterize ($kind): bad input refused; resumed after failed launches; fit and report written"
