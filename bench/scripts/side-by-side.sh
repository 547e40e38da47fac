#!/usr/bin/env bash
# Precision per machine-second: the same sweep (NP ranks, six collectives, 8 B .. 64 MiB, RUNS
# repetitions) timed by scalefit-bench (default rule: 95% CI of the mean within 1%, a shared
# --budget, out-of-place; the same reporting the median, --stat median; and without buffer
# rotation, --hot, as IMB and OSU run by default), by scalefit-bench with its pre-2026-11 rule (noise < 1% or 0.05 s per
# point, both placements, no buffer rotation: "legacy"), and by IMB-MPI1 when it is on PATH (or
# $IMB). For each tool: wall time per sweep and the median over points of the run-to-run spread
# max/min of a point's time across the runs. Prints the machine and every command.
#
#   bench/scripts/precision-vs-imb.sh [BIN] [RUNS] [NP] [BUDGET_S]
#   (defaults: build/bin/scalefit-bench 3 4 15; run from the repository root)
#
# IMB is not packaged in Debian 12 and the OSU micro-benchmarks are not either: build them
# yourself and put IMB-MPI1 on PATH (or IMB=/path/IMB-MPI1) to include them.
set -euo pipefail
BIN=${1:-build/bin/scalefit-bench}
RUNS=${2:-3}
NP=${3:-4}
BUDGET=${4:-15}
IMB=${IMB:-$(command -v IMB-MPI1 || true)}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
OUT=$(mktemp -d /tmp/precision-vs-imb.XXXXXX)
OPS=allreduce,allgather,reducescatter,reduce,broadcast,alltoall
MPIRUN="mpirun --oversubscribe -np $NP"

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr)"
echo "# $(mpirun --version 2>&1 | head -1); $BIN $($BIN --version 2>/dev/null || true)"
echo "# results in $OUT"

run_timed() { # name run command...
  local name=$1 run=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$OUT/$name.$run.txt" 2> "$OUT/$name.$run.err" || { echo "failed: $*"; cat "$OUT/$name.$run.err"; exit 1; }
  t1=$(date +%s.%N)
  echo "$name $run $(echo "$t1 - $t0" | bc)" >> "$OUT/wall.txt"
}

declare -A CMDS
CMDS[scalefit]="$MPIRUN $BIN comm --backend mpi --ops $OPS -b 8 -e 64M -f 2 --budget $BUDGET"
CMDS[scalefit-median]="$MPIRUN $BIN comm --backend mpi --ops $OPS -b 8 -e 64M -f 2 --budget $BUDGET --stat median"
CMDS[scalefit-hot]="$MPIRUN $BIN comm --backend mpi --ops $OPS -b 8 -e 64M -f 2 --budget $BUDGET --hot"
CMDS[legacy]="$MPIRUN $BIN comm --backend mpi --ops $OPS -b 8 -e 64M -f 2 --max-ci 0 --max-noise 0.01 --min-samples 3 --max-time 0.05 --placement both --hot"
if [[ -n "$IMB" ]]; then
  CMDS[imb]="$MPIRUN $IMB -npmin $NP -msglog 3:26 -mem 2 Allreduce Allgather Reduce_scatter_block Reduce Bcast Alltoall"
fi
for name in "${!CMDS[@]}"; do echo "# $name: ${CMDS[$name]} [--out FILE for scalefit]"; done
[[ -z "$IMB" ]] && echo "# imb: IMB-MPI1 not found (not in Debian 12; set IMB=...): skipped"

for run in $(seq 1 "$RUNS"); do
  for name in "${!CMDS[@]}"; do
    if [[ $name == imb ]]; then
      run_timed "$name" "$run" ${CMDS[$name]}
    else
      run_timed "$name" "$run" ${CMDS[$name]} --out "$OUT/$name.$run.jsonl"
    fi
  done
done

python3 - "$OUT" "$RUNS" <<'PY'
import json, re, statistics, sys, collections
out, runs = sys.argv[1], int(sys.argv[2])
wall = collections.defaultdict(list)
for line in open(f"{out}/wall.txt"):
    n, r, t = line.split(); wall[n].append(float(t))

def scalefit_points(path):
    pts = {}
    for line in open(path):
        j = json.loads(line)
        if j.get("type") == "measurement" and j["placement"] == "out-of-place":
            pts[(j["op"], j["bytes"])] = j["time_us"]
    return pts

def imb_points(path):
    pts, op = {}, None
    for line in open(path):
        m = re.match(r"# Benchmarking (\S+)", line)
        if m: op = m.group(1); continue
        f = line.split()
        if op and len(f) >= 5 and f[0].isdigit():
            pts[(op, int(f[0]))] = float(f[4])  # t_avg[usec]
    return pts

print(f"{'tool':10} {'points':>6} {'wall s (per sweep)':>28} {'median spread max/min':>22} {'p90 spread':>10}")
for name in sorted(wall):
    per_run = [(imb_points if name == "imb" else scalefit_points)(
        f"{out}/{name}.{r}.{'txt' if name == 'imb' else 'jsonl'}") for r in range(1, runs + 1)]
    keys = set.intersection(*(set(p) for p in per_run))
    spreads = sorted(max(p[k] for p in per_run) / min(p[k] for p in per_run)
                     for k in keys if min(p[k] for p in per_run) > 0)
    w = wall[name]
    print(f"{name:10} {len(keys):6d} {statistics.mean(w):10.1f} ({', '.join(f'{x:.1f}' for x in w)})"
          f" {statistics.median(spreads):22.3f} {spreads[int(0.9 * (len(spreads) - 1))]:10.3f}")
PY
