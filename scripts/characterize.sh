#!/usr/bin/env bash
# Characterize a cluster inside one allocation: collectives at 1, 2, 4, ... N nodes (one rank per
# GPU; world, intra and inter groups), kernels on one GPU per node type, then fit and report,
# into results/<system>/. Resumable: a finished step leaves a marker in results/<system>/steps/
# and is skipped when the job runs again (requeue, resubmit); a step cut off mid-way continues
# where it stopped (`scalefit-bench comm --resume`). Launched by scripts/slurm/characterize.sbatch
# (srun) or scripts/pbs/characterize.pbs (mpiexec); see docs/characterize.md.
#
# Variables (environment; defaults in brackets):
#   LAUNCHER       srun | mpiexec                                      [set by the batch script]
#   SYSTEM         name recorded in every record and used for results/<SYSTEM>/     [hostname -s]
#   NODES          largest node count N of the sweep                   [all nodes of the allocation]
#   GPUS_PER_NODE  ranks per node, one per GPU                         [8 Slurm, 4 PBS]
#   NODE_COUNTS    node counts to sweep, space-separated               [1 2 4 ... N (and N)]
#   BACKEND        nccl | mpi                                          [nccl]
#   OPS            scalefit-bench --ops list                           [all]
#   MIN_BYTES MAX_BYTES STEP_FACTOR  size range                        [8, 8G, 2]
#   DTYPES         scalefit-bench -d list                              [float]
#   POINT_TIME     adaptive time budget per point [s] (--max-time)     [1]
#   TIME_BUDGET    stop starting new node counts after this many seconds of the job (0: no limit;
#                  resubmit to continue)                               [0]
#   KERNELS_MODELS model YAMLs timed by `scalefit-bench kernels`       [configs/models/gpt-13b.yaml]
#   KERNELS_ENGINE KERNELS_DTYPES  engine and dtypes of the kernels    [cublas, "bf16 tf32"]
#   KERNELS_EP     --ep of the MoE models' kernels (experts per GPU = experts / KERNELS_EP)  [1]
#                  When KERNELS_MODELS has an MoE model (experts > 0), the collectives include
#                  alltoall and alltoallv (added to OPS when missing) and a second AllToAllv sweep
#                  with the skewed count matrix (--alltoallv-matrix skewed) per node count.
#   DRY_RUN        1: print each launch (and the steps) instead of running them; no binaries
#                  needed, nothing measured (job.env and logs written)  [0]
#   NODE_TYPES     one host per node type to time kernels on, space-separated [the first node]
#   BUILD_DIR      where bin/scalefit-bench and bin/scalefit are       [build]
#   OUT            output folder                                       [results/$SYSTEM]
#   HOSTS          hosts of the allocation, one per line (PBS: from $PBS_NODEFILE)
#   SRUN_ARGS MPIEXEC_ARGS AFFINITY  launcher arguments [--mpi=pmix; --cpu-bind depth --depth 8;
#                  scripts/pbs/set_affinity_gpu_polaris.sh]
#   COMM_ARGS KERNELS_ARGS REPORT_ARGS  extra arguments of scalefit-bench comm / kernels and
#                  scalefit report
# NCCL_*, UCX_*, FI_* and OMPI_* variables are recorded in OUT/job.env (and by scalefit-bench in
# every context record).
set -euo pipefail
cd "$(dirname "$0")/.."

LAUNCHER=${LAUNCHER:?set LAUNCHER=srun or LAUNCHER=mpiexec}
SYSTEM=${SYSTEM:-$(hostname -s)}
BUILD_DIR=${BUILD_DIR:-build}
BACKEND=${BACKEND:-nccl}
OPS=${OPS:-all}
MIN_BYTES=${MIN_BYTES:-8}
MAX_BYTES=${MAX_BYTES:-8G}
STEP_FACTOR=${STEP_FACTOR:-2}
DTYPES=${DTYPES:-float}
POINT_TIME=${POINT_TIME:-1}
TIME_BUDGET=${TIME_BUDGET:-0}
KERNELS_MODELS=${KERNELS_MODELS:-configs/models/gpt-13b.yaml}
KERNELS_ENGINE=${KERNELS_ENGINE:-cublas}
KERNELS_DTYPES=${KERNELS_DTYPES:-bf16 tf32}
KERNELS_EP=${KERNELS_EP:-1}
DRY_RUN=${DRY_RUN:-0}
OUT=${OUT:-results/$SYSTEM}
GPUS_PER_NODE=${GPUS_PER_NODE:?set GPUS_PER_NODE}
bench="$BUILD_DIR/bin/scalefit-bench"
scalefit="$BUILD_DIR/bin/scalefit"
if [ "$DRY_RUN" != 1 ]; then
  for b in "$bench" "$scalefit"; do
    [ -x "$b" ] || { echo "characterize: $b not found: build first (scripts/setup.sh)" >&2; exit 2; }
  done
fi

# model_field FILE KEY: a top-level integer field of a model YAML (0 when absent).
model_field() {
  [ -f "$1" ] || { echo 0; return; } # scalefit-bench names a missing model itself
  awk -v k="$2:" '$1 == k { v = $2 + 0 } END { print v + 0 }' "$1"
}
# MoE models (experts > 0) in the kernels list: their all-to-all traffic is measured too.
MOE_MODELS=""
for model in $KERNELS_MODELS; do
  [ -f "$model" ] && (($(model_field "$model" experts) > 0)) && MOE_MODELS+="$model "
done
COMM_OPS=$OPS
if [ -n "$MOE_MODELS" ] && [ "$OPS" != all ]; then
  # expert-parallel dispatch and combine: AllToAll, and AllToAllv for uneven routing
  [[ ",$COMM_OPS," == *,alltoall,* ]] || COMM_OPS+=",alltoall"
  [[ ",$COMM_OPS," == *,alltoallv,* ]] || COMM_OPS+=",alltoallv"
fi

# Hosts of the allocation (PBS: $PBS_NODEFILE; Slurm: scontrol; else this host).
if [ -z "${HOSTS:-}" ]; then
  if [ -n "${PBS_NODEFILE:-}" ]; then
    HOSTS=$(awk '!seen[$0]++' "$PBS_NODEFILE")
  elif [ -n "${SLURM_JOB_NODELIST:-}" ] && command -v scontrol >/dev/null; then
    HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
  else
    HOSTS=$(hostname)
  fi
fi
ALLOC_NODES=$(printf '%s\n' "$HOSTS" | grep -c .)
NODES=${NODES:-${SLURM_JOB_NUM_NODES:-$ALLOC_NODES}}
if [ -z "${NODE_COUNTS:-}" ]; then
  NODE_COUNTS=""
  for ((n = 1; n < NODES; n *= 2)); do NODE_COUNTS+="$n "; done
  NODE_COUNTS+="$NODES"
fi
NODE_TYPES=${NODE_TYPES:-$(printf '%s\n' "$HOSTS" | head -n 1)}

mkdir -p "$OUT/steps" "$OUT/logs"
start=$(date +%s)
job=${SLURM_JOB_ID:-${PBS_JOBID:-local}}

# What this job ran with: variables, hosts, network settings (appended per job: requeues show).
{
  echo "# job $job started $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  for v in LAUNCHER SYSTEM NODES GPUS_PER_NODE NODE_COUNTS BACKEND OPS MIN_BYTES MAX_BYTES \
           STEP_FACTOR DTYPES POINT_TIME TIME_BUDGET KERNELS_MODELS KERNELS_ENGINE KERNELS_DTYPES \
           NODE_TYPES KERNELS_EP MOE_MODELS COMM_OPS; do
    printf '%s=%q\n' "$v" "${!v}"
  done
  printf 'HOSTS=%q\n' "$(printf '%s\n' "$HOSTS" | tr '\n' ' ')"
  env | grep -E '^(NCCL|UCX|FI|OMPI_MCA|CUDA_VISIBLE|MPICH)_' | sort || true
} >>"$OUT/job.env"

# launch NNODES RANKS_PER_NODE FIRST_HOST_INDEX CMD...: runs CMD on NNODES nodes.
launch() {
  local n=$1 rpn=$2 first=$3
  shift 3
  if [ "$DRY_RUN" = 1 ]; then
    echo "characterize: dry run: launch $n node(s) x $rpn from host $first: $*"
    return 0
  fi
  case $LAUNCHER in
    srun)
      local list
      list=$(printf '%s\n' "$HOSTS" | tail -n +"$((first + 1))" | head -n "$n" | paste -sd, -)
      # shellcheck disable=SC2086
      srun ${SRUN_ARGS:---mpi=pmix} -N "$n" --ntasks-per-node="$rpn" --nodelist="$list" "$@" ;;
    mpiexec)
      local hf="$OUT/logs/hosts-$n-$first"
      printf '%s\n' "$HOSTS" | tail -n +"$((first + 1))" | head -n "$n" >"$hf"
      # shellcheck disable=SC2086
      mpiexec -n "$((n * rpn))" --ppn "$rpn" --hostfile "$hf" ${MPIEXEC_ARGS:---cpu-bind depth --depth 8} \
        ${AFFINITY:-scripts/pbs/set_affinity_gpu_polaris.sh} "$@" ;;
    *) echo "characterize: unknown LAUNCHER '$LAUNCHER'" >&2; exit 2 ;;
  esac
}

# step NAME CMD...: runs CMD unless NAME is done; marks it done when CMD succeeds.
step() {
  local name=$1
  shift
  if [ -e "$OUT/steps/$name.done" ]; then
    echo "characterize: $name: done in an earlier run, skipped"
    return 0
  fi
  echo "characterize: $name: $*"
  "$@"
  [ "$DRY_RUN" = 1 ] && return 0
  date -u +%Y-%m-%dT%H:%M:%SZ >"$OUT/steps/$name.done"
}

over_budget() {
  [ "$TIME_BUDGET" != 0 ] && (($(date +%s) - start >= TIME_BUDGET))
}

comm_at() {
  local n=$1 groups=world,intra
  ((n > 1)) && groups=world,intra,inter
  launch "$n" "$GPUS_PER_NODE" 0 "$bench" comm --backend "$BACKEND" --ops "$COMM_OPS" \
    -b "$MIN_BYTES" -e "$MAX_BYTES" -f "$STEP_FACTOR" -d "$DTYPES" --max-time "$POINT_TIME" \
    --groups "$groups" --system "$SYSTEM" --out "$OUT/comm-n$n.jsonl" --resume \
    ${COMM_ARGS:-} 2>&1 | tee "$OUT/logs/comm-n$n.log"
  return "${PIPESTATUS[0]}"
}

# The skewed AllToAllv of MoE routing (Zipf shares; the uniform matrix is in the main sweep).
comm_skewed_at() {
  local n=$1 groups=world,intra
  ((n > 1)) && groups=world,intra,inter
  launch "$n" "$GPUS_PER_NODE" 0 "$bench" comm --backend "$BACKEND" --ops alltoallv \
    --alltoallv-matrix skewed -b "$MIN_BYTES" -e "$MAX_BYTES" -f "$STEP_FACTOR" -d "$DTYPES" \
    --max-time "$POINT_TIME" --groups "$groups" --system "$SYSTEM" \
    --out "$OUT/comm-n$n-alltoallv-skewed.jsonl" --resume ${COMM_ARGS:-} \
    2>&1 | tee "$OUT/logs/comm-n$n-alltoallv-skewed.log"
  return "${PIPESTATUS[0]}"
}

kernels_on() {
  local host_index=$1 model=$2 dtype=$3 file=$4 moe=()
  # MoE models: the router and the grouped expert GEMMs of experts / KERNELS_EP experts per GPU
  (($(model_field "$model" experts) > 0)) && moe=(--ep "$KERNELS_EP")
  launch 1 1 "$host_index" "$bench" kernels --engine "$KERNELS_ENGINE" --model "$model" \
    -d "$dtype" "${moe[@]}" --system "$SYSTEM" --out "$file.part" ${KERNELS_ARGS:-} \
    2>&1 | tee "$OUT/logs/$(basename "$file" .jsonl).log"
  local rc=${PIPESTATUS[0]}
  [ "$DRY_RUN" = 1 ] && return "$rc"
  ((rc == 0)) && mv "$file.part" "$file"
  return "$rc"
}

stopped=""
for n in $NODE_COUNTS; do
  if ((n > ALLOC_NODES)); then
    echo "characterize: $n nodes: more than the $ALLOC_NODES allocated, skipped" >&2
    continue
  fi
  if over_budget; then
    stopped="time budget of $TIME_BUDGET s reached before $n nodes"
    break
  fi
  step "comm-n$n" comm_at "$n"
  if [ -n "$MOE_MODELS" ]; then
    step "comm-n$n-alltoallv-skewed" comm_skewed_at "$n"
  fi
done

# Kernels on one GPU of each node type (the host index in the allocation selects the node).
if [ -z "$stopped" ]; then
  for host in $NODE_TYPES; do
    idx=$(printf '%s\n' "$HOSTS" | grep -nx -- "$host" | head -n 1 | cut -d: -f1)
    idx=$((${idx:-1} - 1))
    for model in $KERNELS_MODELS; do
      if (($(model_field "$model" kv_lora_rank) > 0)); then
        # multi-head latent attention is not in scalefit-bench kernels' shape list yet
        echo "characterize: $model: MLA attention has no kernel list yet, skipped" >&2
        continue
      fi
      for dt in $KERNELS_DTYPES; do
        name="kernels-$host-$(basename "$model" .yaml)-$dt"
        step "$name" kernels_on "$idx" "$model" "$dt" "$OUT/$name.jsonl"
      done
    done
  done
fi

if [ "$DRY_RUN" = 1 ]; then
  echo "characterize: dry run: then fit and report $OUT"
  exit 0
fi

# Fit and report everything measured so far (cheap: redone every run).
shopt -s nullglob
comm=("$OUT"/comm-n*.jsonl)
kern=("$OUT"/kernels-*.jsonl)
if ((${#comm[@]} == 0)); then
  echo "characterize: nothing measured yet" >&2
  exit 1
fi
if ! "$scalefit" fit "${comm[@]}" "${kern[@]}" -o "$OUT/fit.yaml" >"$OUT/logs/fit.log" 2>&1; then
  cat "$OUT/logs/fit.log"
  ((${#kern[@]})) || exit 1
  # A compute fit that fails (too few or too noisy kernels) must not cost the collectives' fit.
  echo "characterize: the fit with the kernels failed (above); fitting the collectives alone" >&2
  "$scalefit" fit "${comm[@]}" -o "$OUT/fit.yaml" >"$OUT/logs/fit.log" 2>&1 || {
    cat "$OUT/logs/fit.log"
    exit 1
  }
fi
cat "$OUT/logs/fit.log"
# shellcheck disable=SC2086
"$scalefit" report "${comm[@]}" "${kern[@]}" --fit "$OUT/fit.yaml" -o "$OUT/report" \
  --title "scalefit: $SYSTEM, up to $NODES nodes x $GPUS_PER_NODE GPUs" ${REPORT_ARGS:-}
if [ -n "$stopped" ]; then
  echo "characterize: $stopped; run the job again to continue (finished steps are skipped)"
  exit 0
fi
echo "characterize: done in $(($(date +%s) - start)) s: $OUT/fit.yaml, $OUT/report/index.html"
