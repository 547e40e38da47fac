#!/bin/sh
# Writes fake `srun`, `mpirun` (OpenMPI under Slurm), `mpiexec` and `scontrol` into directory $1
# for tests on one machine: each launcher logs its arguments to $FAKE_LOG, fails on its
# $FAKE_FAIL_CALL-th call (a node lost, a job preempted) or, for commands matching
# $FAKE_FAIL_MATCH, every time, and runs the command with the real
# `mpirun --oversubscribe -np RANKS`, adding `--emulate-nodes NODES` to `scalefit-bench comm` so
# the groups have the requested node count. Like srun inside a Slurm 22.05 job, the fake srun
# without -n takes the allocation's task count ($SLURM_NTASKS). `scontrol show job -o ID` prints
# Command=$FAKE_JOB_COMMAND.
set -eu
dir=$1
mkdir -p "$dir"
real_mpirun=$(command -v mpirun)
cat >"$dir/fake-common.sh" <<'COMMON'
# run_local NNODES NRANKS CMD...: the shared part of the fakes.
run_local() {
  n=$1 np=$2
  shift 2
  calls=$(( $(cat "$FAKE_LOG.count" 2>/dev/null || echo 0) + 1 ))
  echo "$calls" >"$FAKE_LOG.count"
  if [ "$calls" = "${FAKE_FAIL_CALL:-0}" ]; then
    echo "fake launcher: call $calls fails (FAKE_FAIL_CALL)" >&2
    exit 1
  fi
  case "$*" in
    *"${FAKE_FAIL_MATCH:-@none@}"*) echo "fake launcher: '$FAKE_FAIL_MATCH' fails (FAKE_FAIL_MATCH)" >&2; exit 1 ;;
  esac
  # Rebuild: insert --emulate-nodes after `scalefit-bench comm`.
  i=0 args_file=$(mktemp)
  prev=""
  for a in "$@"; do
    printf '%s\n' "$a" >>"$args_file"
    if [ "$a" = comm ] && [ "${prev##*/}" = scalefit-bench ]; then
      printf '%s\n%s\n' --emulate-nodes "$n" >>"$args_file"
    fi
    prev=$a
  done
  set --
  while IFS= read -r a; do set -- "$@" "$a"; done <"$args_file"
  rm -f "$args_file"
  exec REAL_MPIRUN --oversubscribe -np "$np" "$@"
}
COMMON
sed -i "s|REAL_MPIRUN|$real_mpirun|" "$dir/fake-common.sh"
cat >"$dir/srun" <<'SRUN'
#!/bin/sh
# fake srun: [-n NP] -N N --ntasks-per-node=R [--mpi=X] [--nodelist=L] CMD...
echo "srun $*" >>"$FAKE_LOG"
. "$(dirname "$0")/fake-common.sh"
n=1 r=1 np=""
while [ $# -gt 0 ]; do
  case $1 in
    -n) np=$2; shift 2 ;;
    -N) n=$2; shift 2 ;;
    --ntasks-per-node=*) r=${1#*=}; shift ;;
    --mpi=*|--nodelist=*|--exclusive) shift ;;
    -*) echo "fake srun: unexpected option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
# Slurm 22.05 inside an allocation: no -n means the job's SLURM_NTASKS, which it starts even
# when that is more than -N x --ntasks-per-node (a node with enough cores).
np=${np:-${SLURM_NTASKS:-$((n * r))}}
run_local "$n" "$np" "$@"
SRUN
cat >"$dir/mpirun" <<'MPIRUN'
#!/bin/sh
# fake mpirun (OpenMPI): -np NP --map-by ppr:R:node --host h1:R,h2:R CMD...
echo "mpirun $*" >>"$FAKE_LOG"
. "$(dirname "$0")/fake-common.sh"
np=1 hosts=1
while [ $# -gt 0 ]; do
  case $1 in
    -np) np=$2; shift 2 ;;
    --host) hosts=$(echo "$2" | tr ',' '\n' | grep -c .); shift 2 ;;
    --map-by) shift 2 ;;
    -*) echo "fake mpirun: unexpected option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
run_local "$hosts" "$np" "$@"
MPIRUN
cat >"$dir/scontrol" <<'SCONTROL'
#!/bin/sh
# fake scontrol: `show job -o ID` (the submitted script's path), `show hostnames LIST`
case "$1 $2" in
  "show job") echo "JobId=$4 JobName=fake Command=${FAKE_JOB_COMMAND:-(null)} WorkDir=/" ;;
  "show hostnames") echo "$3" | tr ',' '\n' ;;
  *) echo "fake scontrol: unexpected $*" >&2; exit 2 ;;
esac
SCONTROL
cat >"$dir/mpiexec" <<'MPIEXEC'
#!/bin/sh
# fake mpiexec (PBS Pro / Cray MPICH style): -n NP --ppn R --hostfile F [--cpu-bind X --depth D] CMD...
echo "mpiexec $*" >>"$FAKE_LOG"
. "$(dirname "$0")/fake-common.sh"
np=1 ppn=1 hosts=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) np=$2; shift 2 ;;
    --ppn) ppn=$2; shift 2 ;;
    --hostfile) hosts=$(grep -c . "$2"); echo "hostfile $(tr '\n' ' ' <"$2")" >>"$FAKE_LOG"; shift 2 ;;
    --cpu-bind|--depth) shift 2 ;;
    -*) echo "fake mpiexec: unexpected option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ "$np" -eq $((hosts * ppn)) ] || { echo "fake mpiexec: -n $np != hosts $hosts x ppn $ppn" >&2; exit 2; }
run_local "$hosts" "$np" "$@"
MPIEXEC
chmod +x "$dir/srun" "$dir/mpiexec" "$dir/mpirun" "$dir/scontrol"
