#!/usr/bin/env bash
# Run-to-run precision per machine-second, side by side with IMB and OSU: the same sweep (NP
# ranks; allreduce, allgather, reducescatter, reduce, broadcast, alltoall; 8 B .. 64 MiB by powers
# of 2; RUNS repetitions, the tools interleaved within each repetition) timed by
#   scalefit       scalefit-bench comm --backend mpi with its defaults under a shared --budget
#                  (median of samples, claimed interval <= 1%, buffers rotated through warm pages)
#   scalefit-mean  the same reporting the mean (the default before issue 20)
#   scalefit-sync  the same with --sync barrier (OSU's and IMB's timing definition)
#   scalefit-r3    the same budget spent on three passes over the sweep (--repeat 3): each point
#                  is its median pass, three visits seconds apart (VARIANTS=all; off by default)
#   imb            IMB-MPI1 (on PATH or $IMB): -msglog 3:26 -mem 2, its t_avg
#   osu            OSU micro-benchmarks 7.x (osu_allreduce ... on PATH or in $OSU_DIR): -m 8:64M,
#                  its avg latency
# For each tool: wall time per sweep and, over the points every run measured, the median and p90
# of the run-to-run spread max/min of a point's time; for scalefit, how many precision claims
# (stop "precision", ci_rel <= 2% in every run) held across runs (spread <= 1 + 2 x 2%).
# LOAD=N starts N busy loops on the machine for the whole run (a loaded machine; default 0).
# VARIANTS=all adds scalefit-r3.
# Prints the machine, the load and every command.
#
#   bench/scripts/side-by-side.sh [BIN] [RUNS] [NP] [BUDGET_S]
#   (defaults: build/bin/scalefit-bench 3 4 15; run from the repository root)
#
# Neither IMB nor OSU is packaged in Debian 12. Build IMB from github.com/intel/mpi-benchmarks
# (src_cpp: make IMB-MPI1 CXX=mpicxx after dropping its -O0/-Werror flags) and the OSU blocking
# collectives from their public source with mpicc (c/mpi/collective/blocking/osu_<op>.c with
# c/util/osu_util{,_mpi,_graph,_papi}.c); put them on PATH, or set IMB= and OSU_DIR=.
set -euo pipefail
BIN=${1:-build/bin/scalefit-bench}
RUNS=${2:-3}
NP=${3:-4}
BUDGET=${4:-15}
LOAD=${LOAD:-0}
IMB=${IMB:-$(command -v IMB-MPI1 || true)}
OSU_DIR=${OSU_DIR:-$(dirname "$(command -v osu_allreduce || echo ./none)")}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
OUT=$(mktemp -d /tmp/side-by-side.XXXXXX)
OPS=allreduce,allgather,reducescatter,reduce,broadcast,alltoall
OSU_OPS="allreduce allgather reduce_scatter reduce bcast alltoall"
MPIRUN="mpirun --oversubscribe -np $NP"

loaders=()
stop_load() { for p in "${loaders[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_load EXIT
for _ in $(seq 1 "$LOAD"); do
  (while :; do :; done) &
  loaders+=($!)
done

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr); LOAD=$LOAD busy loops"
echo "# $(mpirun --version 2>&1 | head -1); $BIN $($BIN --version 2>/dev/null || true)"
echo "# results in $OUT"

run_timed() { # name run command...
  local name=$1 run=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >> "$OUT/$name.$run.txt" 2>> "$OUT/$name.$run.err" || { echo "failed: $*"; cat "$OUT/$name.$run.err"; exit 1; }
  t1=$(date +%s.%N)
  echo "$name $run $(echo "$t1 - $t0" | bc)" >> "$OUT/wall.txt"
}

declare -A CMDS
SWEEP="comm --backend mpi --ops $OPS -b 8 -e 64M -f 2 --budget $BUDGET"
CMDS[scalefit]="$MPIRUN $BIN $SWEEP"
CMDS[scalefit-mean]="$MPIRUN $BIN $SWEEP --stat mean"
CMDS[scalefit-sync]="$MPIRUN $BIN $SWEEP --sync barrier"
[[ ${VARIANTS:-} == all ]] && CMDS[scalefit-r3]="$MPIRUN $BIN $SWEEP --repeat 3"
if [[ -n "$IMB" ]]; then
  CMDS[imb]="$MPIRUN $IMB -npmin $NP -msglog 3:26 -mem 2 Allreduce Allgather Reduce_scatter_block Reduce Bcast Alltoall"
fi
have_osu=false
[[ -x "$OSU_DIR/osu_allreduce" ]] && have_osu=true
for name in "${!CMDS[@]}"; do echo "# $name: ${CMDS[$name]} [--out FILE for scalefit]"; done
$have_osu && echo "# osu: for op in $OSU_OPS: $MPIRUN $OSU_DIR/osu_\$op -m 8:67108864"
[[ -z "$IMB" ]] && echo "# imb: IMB-MPI1 not found (set IMB=...): skipped"
$have_osu || echo "# osu: osu_allreduce not found (set OSU_DIR=...): skipped"

for run in $(seq 1 "$RUNS"); do
  for name in "${!CMDS[@]}"; do
    if [[ $name == imb ]]; then
      run_timed "$name" "$run" ${CMDS[$name]}
    else
      run_timed "$name" "$run" ${CMDS[$name]} --out "$OUT/$name.$run.jsonl"
    fi
  done
  if $have_osu; then
    t0=$(date +%s.%N)
    for op in $OSU_OPS; do
      echo "# Benchmarking $op" >> "$OUT/osu.$run.txt"
      $MPIRUN "$OSU_DIR/osu_$op" -m 8:67108864 >> "$OUT/osu.$run.txt" 2>> "$OUT/osu.$run.err" ||
        { echo "failed: osu_$op"; cat "$OUT/osu.$run.err"; exit 1; }
    done
    echo "osu $run $(echo "$(date +%s.%N) - $t0" | bc)" >> "$OUT/wall.txt"
  fi
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

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
            claim = j.get("stop") == "precision" and (j.get("ci_rel") or 1) <= 0.02
            pts[(j["op"], j["bytes"])] = (j["time_us"], claim)
    return pts

def table_points(path):  # IMB (t_avg, 5th column) and OSU (avg latency, 2nd column)
    pts, op = {}, None
    for line in open(path):
        m = re.match(r"# Benchmarking (\S+)", line)
        if m: op = m.group(1); continue
        f = line.split()
        if op and len(f) >= 2 and f[0].isdigit() and int(f[0]) > 0:
            try:
                pts[(op, int(f[0]))] = (float(f[4] if len(f) >= 5 else f[1]), False)
            except ValueError:
                pass
    return pts

print(f"{'tool':14} {'points':>6} {'wall s per sweep (runs)':>30} {'median spread':>13} {'p90 spread':>10} {'claims held':>12}")
for name in sorted(wall):
    scalefit = name.startswith("scalefit")
    per_run = [(scalefit_points if scalefit else table_points)(
        f"{out}/{name}.{r}.{'jsonl' if scalefit else 'txt'}") for r in range(1, runs + 1)]
    keys = set.intersection(*(set(p) for p in per_run))
    spreads, held, claims = [], 0, 0
    for k in keys:
        t = [p[k][0] for p in per_run]
        if min(t) <= 0: continue
        s = max(t) / min(t); spreads.append(s)
        if all(p[k][1] for p in per_run):
            claims += 1; held += s <= 1.04
    spreads.sort()
    w = wall[name]
    claim_text = f"{held}/{claims}" if scalefit else "-"
    print(f"{name:14} {len(keys):6d} {statistics.mean(w):8.1f} ({', '.join(f'{x:.1f}' for x in w)})"
          f" {statistics.median(spreads):13.3f} {spreads[int(0.9 * (len(spreads) - 1))]:10.3f} {claim_text:>12}")
PY
