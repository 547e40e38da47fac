#!/bin/sh
# Writes fake `srun` and `mpiexec` into directory $1 for tests on one machine: each logs its
# arguments to $FAKE_LOG, fails on its $FAKE_FAIL_CALL-th call (a node lost, a job preempted),
# and runs the command with `mpirun --oversubscribe -np NODES*RANKS_PER_NODE`, adding
# `--emulate-nodes NODES` to `scalefit-bench comm` so the groups have the requested node count.
set -eu
dir=$1
mkdir -p "$dir"
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
  exec mpirun --oversubscribe -np "$np" "$@"
}
COMMON
cat >"$dir/srun" <<'SRUN'
#!/bin/sh
# fake srun: -N N --ntasks-per-node=R [--mpi=X] [--nodelist=L] CMD...
echo "srun $*" >>"$FAKE_LOG"
. "$(dirname "$0")/fake-common.sh"
n=1 r=1
while [ $# -gt 0 ]; do
  case $1 in
    -N) n=$2; shift 2 ;;
    --ntasks-per-node=*) r=${1#*=}; shift ;;
    --mpi=*|--nodelist=*|--exclusive) shift ;;
    -*) echo "fake srun: unexpected option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
run_local "$n" $((n * r)) "$@"
SRUN
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
chmod +x "$dir/srun" "$dir/mpiexec"
