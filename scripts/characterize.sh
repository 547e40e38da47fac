#!/usr/bin/env bash
# Characterize a cluster inside one allocation: collectives at 1, 2, 4, ... N nodes (world and
# inter-node groups at every node count; intra-node groups once, at the smallest), kernels on one
# GPU per node type, then fit and report, into results/<system>/ of the directory the job runs in.
# Resumable: a finished step leaves a marker in OUT/steps/ and is skipped when the job runs again
# (requeue, resubmit); a step cut off mid-way continues where it stopped (`scalefit-bench comm
# --resume`). Before each step a probe launch checks that the step got the rank layout it asked
# for (nodes x ranks per node, from the probe's context record), and the step's own records are
# checked again after. A failed step ends the sweep; what was measured is still fitted and
# reported, then the script exits 1 naming the failed steps. Bad variables: exit 2 naming them.
# Launched by scripts/slurm/characterize.sbatch (srun or mpirun) or scripts/pbs/characterize.pbs
# (mpiexec); see docs/characterize.md.
#
# Variables (environment; defaults in brackets; set-but-empty is an error unless noted):
#   LAUNCHER       srun | mpirun | mpiexec                             [set by the batch script]
#   SCALEFIT_HOME  the scalefit checkout (configs/, scripts/, build/)  [this script's ../]
#   SYSTEM         name recorded in every record and used for OUT      [hostname -s]
#   NODES          largest node count N of the sweep                   [all nodes of the allocation]
#   GPUS_PER_NODE  ranks per node: one per GPU (nccl), or MPI ranks per node (mpi)
#                  [Slurm: the job's --gpus-per-node, else its --ntasks-per-node; PBS: 4]
#   NODE_COUNTS    node counts to sweep, space-separated               [1 2 4 ... N (and N)]
#   INTRA_GROUPS   once | every: intra-node groups at the smallest node count only, or at every
#                  node count (they repeat the same node's groups; the fit refuses points
#                  measured twice with different results)                         [once]
#   BACKEND        nccl | mpi (host buffers, no GPU: CPU partitions)   [nccl]
#   OPS            scalefit-bench --ops list                           [all]
#   MIN_BYTES MAX_BYTES STEP_FACTOR  size range                        [8, 8G, 2]
#   DTYPES         scalefit-bench -d list                              [float]
#   POINT_TIME     adaptive time budget per point [s] (--max-time)     [1]
#   TIME_BUDGET    stop starting new node counts after this many seconds of the job (0: no limit;
#                  resubmit to continue)                               [0]
#   KERNELS_MODELS model YAMLs timed by `scalefit-bench kernels`; empty: no kernels step
#                  [nccl: configs/models/gpt-13b.yaml; mpi: configs/models/gpt-125m.yaml]
#   KERNELS_ENGINE KERNELS_DTYPES  engine and dtypes of the kernels    [nccl: cublas, "bf16 tf32";
#                                                                       mpi: cpu, fp32]
#   KERNELS_EP     --ep of the MoE models' kernels (experts per GPU = experts / KERNELS_EP)  [1]
#                  When KERNELS_MODELS has an MoE model (experts > 0), the collectives include
#                  alltoall and alltoallv (added to OPS when missing) and a second AllToAllv sweep
#                  with the skewed count matrix (--alltoallv-matrix skewed) per node count.
#   DRY_RUN        1: print each launch (and the steps) instead of running them; no binaries
#                  needed, nothing measured (job.env and logs written)  [0]
#   NODE_TYPES     one host per node type to time kernels on, space-separated [the first node]
#   BUILD_DIR      where bin/scalefit-bench and bin/scalefit are       [$SCALEFIT_HOME/build]
#   OUT            output folder                                       [results/$SYSTEM]
#   HOSTS          hosts of the allocation, one per line (PBS: from $PBS_NODEFILE; Slurm:
#                  scontrol show hostnames)
#   SRUN_MPI       srun's --mpi plugin (pmix, pmi2, ...)               [pmix]
#   SRUN_ARGS MPIRUN_ARGS  extra srun / mpirun arguments (may be empty) []
#   MPIEXEC_ARGS AFFINITY  mpiexec's binding and per-rank wrapper (PBS) [--cpu-bind depth --depth 8;
#                  scripts/pbs/set_affinity_gpu_polaris.sh]
#   COMM_ARGS KERNELS_ARGS REPORT_ARGS  extra arguments of scalefit-bench comm / kernels and
#                  scalefit report (may be empty)
# Relative BUILD_DIR, KERNELS_MODELS and AFFINITY are looked up in the directory the job runs in,
# then in SCALEFIT_HOME; a relative OUT is in the directory the job runs in.
# NCCL_*, UCX_*, FI_* and OMPI_* variables are recorded in OUT/job.env (and by scalefit-bench in
# every context record).
set -euo pipefail

bad() { echo "characterize: $*" >&2; exit 2; }
# setting NAME DEFAULT: NAME's value, DEFAULT when unset; set but empty is an error (an empty
# variable must not silently mean the default).
setting() {
  if [ -z "${!1+x}" ]; then
    printf -v "$1" '%s' "$2"
  elif [ -z "${!1}" ]; then
    bad "$1 is set but empty (unset it for the default: $2)"
  fi
}
positive_int() { [[ $2 =~ ^[1-9][0-9]*$ ]] || bad "$1='$2': expected a positive integer"; }

if [ -n "${SCALEFIT_HOME+x}" ]; then
  [ -f "$SCALEFIT_HOME/scripts/characterize.sh" ] ||
    bad "SCALEFIT_HOME='$SCALEFIT_HOME' is not a scalefit checkout (no scripts/characterize.sh)"
  SCALEFIT_HOME=$(cd "$SCALEFIT_HOME" && pwd)
else
  SCALEFIT_HOME=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fi
# project_path NAME VALUE: VALUE as an absolute path: itself, or found in the working directory,
# then in SCALEFIT_HOME; exit 2 naming NAME when it is in neither.
project_path() {
  case $2 in
    /*) [ -e "$2" ] || bad "$1: $2 not found"; printf '%s\n' "$2" ;;
    *) if [ -e "$2" ]; then printf '%s\n' "$PWD/$2"
       elif [ -e "$SCALEFIT_HOME/$2" ]; then printf '%s\n' "$SCALEFIT_HOME/$2"
       else bad "$1: $2 not found (looked in $PWD and SCALEFIT_HOME=$SCALEFIT_HOME)"; fi ;;
  esac
}

setting LAUNCHER ""  # no default: the batch script says
case $LAUNCHER in
  srun | mpirun | mpiexec) ;;
  *) bad "LAUNCHER='$LAUNCHER': expected srun, mpirun or mpiexec" ;;
esac
setting BACKEND nccl
case $BACKEND in
  nccl) kdef_models=configs/models/gpt-13b.yaml kdef_engine=cublas kdef_dtypes="bf16 tf32" ;;
  mpi) kdef_models=configs/models/gpt-125m.yaml kdef_engine=cpu kdef_dtypes=fp32 ;;
  *) bad "BACKEND='$BACKEND': expected nccl or mpi" ;;
esac
setting SYSTEM "$(hostname -s)"
setting OPS all
setting MIN_BYTES 8
setting MAX_BYTES 8G
setting STEP_FACTOR 2
setting DTYPES float
setting POINT_TIME 1
setting TIME_BUDGET 0
[[ $TIME_BUDGET =~ ^[0-9]+$ ]] || bad "TIME_BUDGET='$TIME_BUDGET': expected whole seconds (0: none)"
setting INTRA_GROUPS once
case $INTRA_GROUPS in once | every) ;; *) bad "INTRA_GROUPS='$INTRA_GROUPS': expected once or every" ;; esac
KERNELS_MODELS=${KERNELS_MODELS-$kdef_models}  # empty: no kernels step
setting KERNELS_ENGINE "$kdef_engine"
setting KERNELS_DTYPES "$kdef_dtypes"
setting KERNELS_EP 1
setting DRY_RUN 0
setting SRUN_MPI pmix
setting MPIEXEC_ARGS "--cpu-bind depth --depth 8"
setting AFFINITY scripts/pbs/set_affinity_gpu_polaris.sh
setting BUILD_DIR "$SCALEFIT_HOME/build"
SRUN_ARGS=${SRUN_ARGS-} MPIRUN_ARGS=${MPIRUN_ARGS-} COMM_ARGS=${COMM_ARGS-}
KERNELS_ARGS=${KERNELS_ARGS-} REPORT_ARGS=${REPORT_ARGS-}

# Ranks per node: GPUS_PER_NODE, else what the Slurm job was given (--gpus-per-node G, which may
# read "a100:4", else --ntasks-per-node R, which may read "4(x2)").
if [ -n "${GPUS_PER_NODE+x}" ]; then
  [ -n "$GPUS_PER_NODE" ] ||
    bad "GPUS_PER_NODE is set but empty (ranks per node: unset it to take the job's --gpus-per-node or --ntasks-per-node)"
  RANKS_FROM=GPUS_PER_NODE
elif [ -n "${SLURM_GPUS_PER_NODE:-}" ] && [ "${SLURM_GPUS_PER_NODE##*:}" != 0 ]; then
  GPUS_PER_NODE=${SLURM_GPUS_PER_NODE##*:} RANKS_FROM="the job's --gpus-per-node"
elif [ -n "${SLURM_NTASKS_PER_NODE:-}" ]; then
  GPUS_PER_NODE=${SLURM_NTASKS_PER_NODE%%(*} RANKS_FROM="the job's --ntasks-per-node"
else
  bad "ranks per node unknown: set GPUS_PER_NODE, or submit with --gpus-per-node=G (GPUs in Slurm's gres) or --ntasks-per-node=R"
fi
[[ $GPUS_PER_NODE =~ ^[1-9][0-9]*$ ]] ||
  bad "GPUS_PER_NODE='$GPUS_PER_NODE' (ranks per node, from $RANKS_FROM): expected a positive integer"
[[ $KERNELS_EP =~ ^[1-9][0-9]*$ ]] || bad "KERNELS_EP='$KERNELS_EP': expected a positive integer"

if [ "$DRY_RUN" != 1 ] || [ -e "$BUILD_DIR" ] || [ -e "$SCALEFIT_HOME/$BUILD_DIR" ]; then
  BUILD_DIR=$(project_path BUILD_DIR "$BUILD_DIR")
fi
bench="$BUILD_DIR/bin/scalefit-bench"
scalefit="$BUILD_DIR/bin/scalefit"
if [ "$DRY_RUN" != 1 ]; then
  for b in "$bench" "$scalefit"; do
    [ -x "$b" ] || bad "BUILD_DIR: $b not found: build first (scripts/setup.sh)"
  done
  # A CUDA build on a node without the CUDA libraries cannot even start.
  if missing=$(ldd "$bench" 2>/dev/null | awk '/not found/ { print $1 }' | paste -sd' ' -) &&
    [ -n "$missing" ]; then
    bad "BUILD_DIR: $bench cannot load on $(hostname): $missing not found; on nodes without CUDA use a CPU-only build (SCALEFIT_ENABLE_CUDA=OFF BUILD_DIR=build-cpu scripts/setup.sh) with BUILD_DIR=build-cpu BACKEND=mpi"
  fi
fi
[ "$LAUNCHER" != mpiexec ] || AFFINITY=$(project_path AFFINITY "$AFFINITY")
models=""
for model in $KERNELS_MODELS; do models+="$(project_path KERNELS_MODELS "$model") "; done
KERNELS_MODELS=${models% }

# model_field FILE KEY: a top-level integer field of a model YAML (0 when absent).
model_field() {
  awk -v k="$2:" '$1 == k { v = $2 + 0 } END { print v + 0 }' "$1"
}
# MoE models (experts > 0) in the kernels list: their all-to-all traffic is measured too.
MOE_MODELS=""
for model in $KERNELS_MODELS; do
  (($(model_field "$model" experts) > 0)) && MOE_MODELS+="$model "
done
MOE_MODELS=${MOE_MODELS% }
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
setting NODES "${SLURM_JOB_NUM_NODES:-$ALLOC_NODES}"
positive_int NODES "$NODES"
if [ -z "${NODE_COUNTS+x}" ]; then
  NODE_COUNTS=""
  for ((n = 1; n < NODES; n *= 2)); do NODE_COUNTS+="$n "; done
  NODE_COUNTS+="$NODES"
fi
[ -n "${NODE_COUNTS// /}" ] || bad "NODE_COUNTS is set but empty"
for n in $NODE_COUNTS; do positive_int "NODE_COUNTS entry" "$n"; done
setting NODE_TYPES "$(printf '%s\n' "$HOSTS" | head -n 1)"
# Intra-node groups: at the smallest node count the allocation holds (INTRA_GROUPS=once).
INTRA_AT=$(for n in $NODE_COUNTS; do ((n > ALLOC_NODES)) || echo "$n"; done | sort -n | head -n 1)
setting OUT "results/$SYSTEM"
mkdir -p "$OUT/steps" "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
start=$(date +%s)
job=${SLURM_JOB_ID:-${PBS_JOBID:-local}}
unit=GPUs
[ "$BACKEND" = mpi ] && unit=ranks

# What this job ran with: variables, hosts, network settings (appended per job: requeues show).
{
  echo "# job $job started $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) (restart ${SLURM_RESTART_COUNT:-0})"
  for v in LAUNCHER SCALEFIT_HOME SYSTEM NODES GPUS_PER_NODE RANKS_FROM NODE_COUNTS INTRA_GROUPS \
           BACKEND OPS MIN_BYTES MAX_BYTES STEP_FACTOR DTYPES POINT_TIME TIME_BUDGET \
           KERNELS_MODELS KERNELS_ENGINE KERNELS_DTYPES NODE_TYPES KERNELS_EP MOE_MODELS COMM_OPS \
           BUILD_DIR SRUN_MPI SRUN_ARGS MPIRUN_ARGS; do
    printf '%s=%q\n' "$v" "${!v}"
  done
  printf 'HOSTS=%q\n' "$(printf '%s\n' "$HOSTS" | tr '\n' ' ')"
  env | grep -E '^(NCCL|UCX|FI|OMPI_MCA|CUDA_VISIBLE|MPICH)_' | sort || true
} >>"$OUT/job.env"

# launch NNODES RANKS_PER_NODE FIRST_HOST_INDEX CMD...: runs CMD as NNODES x RANKS_PER_NODE
# ranks on NNODES nodes from host FIRST_HOST_INDEX on. The rank count is always explicit: inside
# the allocation srun would otherwise take the whole job's task count (Slurm 22.05).
launch() {
  local n=$1 rpn=$2 first=$3
  local np=$((n * rpn)) list
  shift 3
  list=$(printf '%s\n' "$HOSTS" | tail -n +"$((first + 1))" | head -n "$n")
  if [ "$DRY_RUN" = 1 ]; then
    echo "characterize: dry run: launch $n node(s) x $rpn from host $first: $*"
    return 0
  fi
  case $LAUNCHER in
    srun)
      # shellcheck disable=SC2086
      srun --mpi="$SRUN_MPI" $SRUN_ARGS -n "$np" -N "$n" --ntasks-per-node="$rpn" \
        --nodelist="$(paste -sd, - <<<"$list")" "$@" ;;
    mpirun) # OpenMPI: rpn slots on each host, rpn ranks per node
      # shellcheck disable=SC2086
      mpirun -np "$np" --map-by "ppr:$rpn:node" --host "$(sed "s/\$/:$rpn/" <<<"$list" | paste -sd, -)" \
        $MPIRUN_ARGS "$@" ;;
    mpiexec)
      local hf="$OUT/logs/hosts-$n-$first"
      printf '%s\n' "$list" >"$hf"
      # shellcheck disable=SC2086
      mpiexec -n "$np" --ppn "$rpn" --hostfile "$hf" $MPIEXEC_ARGS "$AFFINITY" "$@" ;;
  esac
}

# context_field FILE FIELD: an integer field of the last context record of a JSON Lines file.
context_field() {
  grep '"type": *"context"' "$1" 2>/dev/null | tail -n 1 |
    sed -n "s/.*\"$2\": *\([0-9][0-9]*\).*/\1/p"
}
# check_layout WHAT FILE NNODES RANKS_PER_NODE: the last run in FILE had the layout it asked for.
check_layout() {
  local what=$1 f=$2 n=$3 rpn=$4 got_np got_n got_rpn
  got_np=$(context_field "$f" nranks)
  if [ "$(grep -c '"schema": *"scalefit.kernels/1"' "$f" 2>/dev/null)" -gt 0 ]; then
    got_n=$n got_rpn=$rpn # the kernels' context has the rank count only
  else
    got_n=$(context_field "$f" nnodes) got_rpn=$(context_field "$f" ranks_per_node)
  fi
  if [ -z "$got_np" ]; then
    echo "characterize: $what: no context record in $f: cannot check the rank layout" >&2
    return 1
  fi
  if [ "$got_np" != $((n * rpn)) ] || [ "$got_n" != "$n" ] || [ "$got_rpn" != "$rpn" ]; then
    echo "characterize: $what: asked for $n node(s) x $rpn ranks ($((n * rpn)) ranks), got" \
         "nranks=$got_np nnodes=$got_n ranks_per_node=$got_rpn ($f); check the launcher's" \
         "arguments (SRUN_ARGS, MPIRUN_ARGS, MPIEXEC_ARGS) and the allocation" >&2
    return 1
  fi
}
# probe NAME NNODES RANKS_PER_NODE FIRST: a one-point launch of the step's shape, checked before
# the step measures anything.
probe() {
  local name=$1 n=$2 rpn=$3 first=$4 f="$OUT/logs/probe-$1.jsonl"
  [ "$DRY_RUN" = 1 ] && return 0
  rm -f "$f"
  launch "$n" "$rpn" "$first" "$bench" comm --backend "$BACKEND" --ops allreduce -b 8 -e 8 \
    --groups world --placement out -w 1 -n 1 --system "$SYSTEM" --out "$f" \
    >>"$OUT/logs/$name.log" 2>&1 || {
    echo "characterize: $name: the probe launch failed (log: $OUT/logs/$name.log)" >&2
    return 1
  }
  check_layout "$name (probe)" "$f" "$n" "$rpn"
}

# step NAME CMD...: runs CMD unless NAME is done; marks it done when CMD succeeds; a failure is
# remembered in FAILED and returns 1.
FAILED=()
step() {
  local name=$1 rc=0
  shift
  if [ -e "$OUT/steps/$name.done" ]; then
    echo "characterize: $name: done in an earlier run, skipped"
    return 0
  fi
  echo "characterize: $name: $*"
  "$@" || rc=$?
  if ((rc)); then
    echo "characterize: $name: failed (exit $rc)" >&2
    FAILED+=("$name")
    return 1
  fi
  [ "$DRY_RUN" = 1 ] && return 0
  date -u +%Y-%m-%dT%H:%M:%SZ >"$OUT/steps/$name.done"
}

over_budget() {
  [ "$TIME_BUDGET" != 0 ] && (($(date +%s) - start >= TIME_BUDGET))
}

groups_at() {
  local g=world
  if [ "$INTRA_GROUPS" = every ] || [ "$1" = "$INTRA_AT" ]; then g+=,intra; fi
  (($1 > 1)) && g+=,inter
  echo "$g"
}

# comm_sweep NAME NNODES FILE ARGS...: a probe, then the sweep into FILE, then its layout check.
comm_sweep() {
  local name=$1 n=$2 file=$3 rc
  shift 3
  probe "$name" "$n" "$GPUS_PER_NODE" 0 || return 1
  launch "$n" "$GPUS_PER_NODE" 0 "$bench" comm --backend "$BACKEND" "$@" -b "$MIN_BYTES" \
    -e "$MAX_BYTES" -f "$STEP_FACTOR" -d "$DTYPES" --max-time "$POINT_TIME" \
    --groups "$(groups_at "$n")" --system "$SYSTEM" --out "$file" --resume $COMM_ARGS \
    2>&1 | tee -a "$OUT/logs/$name.log"
  rc=${PIPESTATUS[0]}
  ((rc == 0)) || return "$rc"
  [ "$DRY_RUN" = 1 ] || check_layout "$name" "$file" "$n" "$GPUS_PER_NODE"
}

kernels_on() {
  local name=$1 host_index=$2 model=$3 dtype=$4 file=$5 moe=() rc
  # MoE models: the router and the grouped expert GEMMs of experts / KERNELS_EP experts per GPU
  (($(model_field "$model" experts) > 0)) && moe=(--ep "$KERNELS_EP")
  probe "$name" 1 1 "$host_index" || return 1
  # shellcheck disable=SC2086
  launch 1 1 "$host_index" "$bench" kernels --engine "$KERNELS_ENGINE" --model "$model" \
    -d "$dtype" "${moe[@]}" --system "$SYSTEM" --out "$file.part" $KERNELS_ARGS \
    2>&1 | tee -a "$OUT/logs/$name.log"
  rc=${PIPESTATUS[0]}
  [ "$DRY_RUN" = 1 ] && return "$rc"
  ((rc == 0)) || return "$rc"
  check_layout "$name" "$file.part" 1 1 || return 1
  mv "$file.part" "$file"
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
  step "comm-n$n" comm_sweep "comm-n$n" "$n" "$OUT/comm-n$n.jsonl" --ops "$COMM_OPS" || break
  if [ -n "$MOE_MODELS" ]; then
    # The skewed AllToAllv of MoE routing (Zipf shares; the uniform matrix is in the main sweep).
    step "comm-n$n-alltoallv-skewed" comm_sweep "comm-n$n-alltoallv-skewed" "$n" \
      "$OUT/comm-n$n-alltoallv-skewed.jsonl" --ops alltoallv --alltoallv-matrix skewed || break
  fi
done

# Kernels on one GPU of each node type (the host index in the allocation selects the node).
if [ -z "$stopped" ]; then
  for host in $NODE_TYPES; do
    idx=$(printf '%s\n' "$HOSTS" | grep -nx -- "$host" | head -n 1 | cut -d: -f1) ||
      bad "NODE_TYPES: host '$host' is not in the allocation ($(printf '%s\n' "$HOSTS" | paste -sd' ' -))"
    idx=$((idx - 1))
    for model in $KERNELS_MODELS; do
      if (($(model_field "$model" kv_lora_rank) > 0)); then
        # multi-head latent attention is not in scalefit-bench kernels' shape list yet
        echo "characterize: $model: MLA attention has no kernel list yet, skipped" >&2
        continue
      fi
      for dt in $KERNELS_DTYPES; do
        name="kernels-$host-$(basename "$model" .yaml)-$dt"
        step "$name" kernels_on "$name" "$idx" "$model" "$dt" "$OUT/$name.jsonl" || true
      done
    done
  done
fi

if [ "$DRY_RUN" = 1 ]; then
  echo "characterize: dry run: then fit and report $OUT"
  exit 0
fi

# failed_exit: after the fit and report of what was measured, name the failed steps.
failed_exit() {
  if ((${#FAILED[@]})); then
    local done_part="fitted and reported what was measured"
    [[ " ${FAILED[*]} " == *" fit "* || " ${FAILED[*]} " == *" report "* ]] && done_part="no complete fit and report"
    echo "characterize: failed step(s): ${FAILED[*]} (logs in $OUT/logs/); $done_part; run the job again to retry them (finished steps are skipped)" >&2
    exit 1
  fi
}

# Fit and report everything measured so far (cheap: redone every run).
shopt -s nullglob
comm=("$OUT"/comm-n*.jsonl)
kern=("$OUT"/kernels-*.jsonl)
if ((${#comm[@]} == 0)); then
  echo "characterize: nothing measured yet" >&2
  failed_exit
  exit 1
fi
if ! "$scalefit" fit "${comm[@]}" "${kern[@]}" -o "$OUT/fit.yaml" >"$OUT/logs/fit.log" 2>&1; then
  cat "$OUT/logs/fit.log"
  ((${#kern[@]})) || { echo "characterize: the fit failed (above)" >&2; FAILED+=(fit); failed_exit; }
  # A compute fit that fails (too few or too noisy kernels) must not cost the collectives' fit.
  echo "characterize: the fit with the kernels failed (above); fitting the collectives alone" >&2
  "$scalefit" fit "${comm[@]}" -o "$OUT/fit.yaml" >"$OUT/logs/fit.log" 2>&1 || {
    cat "$OUT/logs/fit.log"
    FAILED+=(fit)
    failed_exit
  }
fi
cat "$OUT/logs/fit.log"
# shellcheck disable=SC2086
"$scalefit" report "${comm[@]}" "${kern[@]}" --fit "$OUT/fit.yaml" -o "$OUT/report" \
  --title "scalefit: $SYSTEM, up to $NODES nodes x $GPUS_PER_NODE $unit" $REPORT_ARGS ||
  FAILED+=(report)
failed_exit
if [ -n "$stopped" ]; then
  echo "characterize: $stopped; run the job again to continue (finished steps are skipped)"
  exit 0
fi
echo "characterize: done in $(($(date +%s) - start)) s: $OUT/fit.yaml, $OUT/report/index.html"
