#!/bin/bash
# scripts/slurm/characterize.sbatch on a real Slurm (Debian's slurm-wlm and munge): a throwaway
# cluster of its own (munged, slurmctld, and two slurmd on this host as nodes n1 and n2, 2 CPUs
# each, in a temporary folder with its own ports and slurm.conf), the mpi backend, small sizes:
#   1. a 1-node job (sbatch -N 1 --ntasks-per-node=2) runs to the end: collectives, kernels, fit,
#      report; requeued (scontrol requeue), it runs again, skipping every step, and appends to its
#      log;
#   2. a 2-node job (sbatch -N 2 --ntasks-per-node=2) is cancelled (scancel) in the middle of its
#      2-node sweep, then submitted again: the new job skips the finished 1-node step and resumes
#      the 2-node one;
# and asserts: fit files and reports exist; every context record has the rank layout its step
# asked for, and each rank of a 2-node step ran on the node Slurm put it on (n1 or n2); no point
# is lost or duplicated across the cancel; the job's Slurm log holds the start line. It stops
# exactly the daemons it started (by their process ids), also on failure.
# What two slurmd on one host need (this test's business, not the job scripts'): a spool folder
# and a PMIx temporary folder per daemon (SlurmdSpoolDir=.../spool-%n, TmpFS=.../tmp-%n: with one
# TmpFS both daemons' slurmstepd create the same spmix_appdir_<uid>_<job>.<step> and the second
# fails, "File exists"), and OpenMPI over TCP (OMPI_MCA_btl=self,tcp: ranks of "different nodes"
# on one host; OpenMPI takes the node of each rank from PMIx, so scalefit-bench sees 2 nodes).
# A wrapper build folder's scalefit-bench logs each rank's Slurm node (SLURMD_NODENAME) before
# running the real one.
# Skips (exit 77) without slurmctld, slurmd, munged, sbatch or root.
# Usage: slurm_real_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
for b in slurmctld slurmd munged sbatch srun scancel squeue scontrol sinfo mpirun python3; do
  command -v "$b" >/dev/null || { echo "SKIP: $b not installed (scripts/setup.sh installs slurm-wlm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd needs root"; exit 77; }
t0=$(date +%s)
tmp=$(mktemp -d /tmp/scalefit_slurm_XXXXXX)
chmod 755 "$tmp"
pids=()
stop_cluster() {
  local rc=$?
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${ctld_pid:-}" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    # jobs first (their slurmstepd would outlive slurmd), then the daemons, newest first
    scancel --quiet -p test 2>/dev/null
    for _ in $(seq 30); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 1; done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && { echo "slurm test: pid $p did not stop on TERM, killing"; kill -9 "$p"; }
  done
  if ((rc)) && [ -d "$tmp/log" ]; then
    for f in "$tmp"/log/* "$tmp"/submit/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap stop_cluster EXIT
trap 'echo "slurm test: interrupted (or over its 300 s limit)"; exit 1' INT TERM
# Its own limit, below CTest's (400 s): a hung job ends in stop_cluster, not in a CTest kill that
# would leave the daemons running.
(
  trap 'kill "$sp" 2>/dev/null; exit 0' TERM
  sleep 300 &
  sp=$!
  wait "$sp" && kill -TERM $$
) >/dev/null 2>&1 &
pids+=($!)
fail() { echo "FAIL: $*"; exit 1; }

# The cluster: munge with its own key and socket; slurmctld and two slurmd on free ports.
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/log" "$tmp/submit" "$tmp"/{spool,tmp}-n{1,2}
chmod 711 "$tmp/munge"
head -c 1024 /dev/urandom >"$tmp/munge/key"
chmod 400 "$tmp/munge/key"
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Below the kernel's ephemeral range: a port there can be the local end of another test's TCP
# connection (Open MPI's tcp BTL), which a connect probe calls free but slurmd cannot bind (CI,
# 2026-11-23: "Unable to bind listen port (48256): Address already in use").
eph_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
eph_low=${eph_low:-32768}
for _ in $(seq 20); do
  base=$((10000 + RANDOM % (eph_low - 10003)))
  port_free "$base" && port_free $((base + 1)) && port_free $((base + 2)) && break
done
host=$(hostname)
node() {
  echo "NodeName=$1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$2 CPUs=2 Sockets=1" \
       "CoresPerSocket=2 ThreadsPerCore=1 RealMemory=500 State=UNKNOWN"
}
cat >"$tmp/slurm.conf" <<CONF
ClusterName=scalefittest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool-%n
TmpFS=$tmp/tmp-%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd-%n.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=2
$(node n1 $((base + 1)))
$(node n2 $((base + 2)))
PartitionName=test Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
munged -F --force --key-file="$tmp/munge/key" --socket="$tmp/munge/sock" --pid-file="$tmp/munge/pid" \
  --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/seed" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge/sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
pids+=("$ctld_pid")
for n in n1 n2; do
  slurmd -D -N "$n" -f "$SLURM_CONF" >"$tmp/log/slurmd-$n.out" 2>&1 &
  pids+=($!)
done
for _ in $(seq 60); do
  [ "$(sinfo -h -o %t 2>/dev/null | sort -u)" = idle ] && [ "$(sinfo -h -o %D)" = 2 ] && break
  sleep 0.5
done
[ "$(sinfo -h -o %t | sort -u)" = idle ] || fail "the test cluster did not come up: $(sinfo 2>&1)"
echo "slurm test: cluster up in $(($(date +%s) - t0)) s (ports $base-$((base + 2)))"

# The build as the job sees it: scalefit as is; scalefit-bench logs the Slurm node of each rank.
mkdir -p "$tmp/build/bin"
ln -s "$build/bin/scalefit" "$tmp/build/bin/scalefit"
cat >"$tmp/build/bin/scalefit-bench" <<WRAP
#!/bin/bash
echo "\${SLURM_JOB_ID:-} \${SLURM_STEP_ID:-} \${SLURM_STEP_NUM_NODES:-} \${SLURM_STEP_NUM_TASKS:-} \${SLURMD_NODENAME:-} \${SLURM_PROCID:-} \$1" >>"$tmp/ranks.log"
exec "$build/bin/scalefit-bench" "\$@"
WRAP
chmod +x "$tmp/build/bin/scalefit-bench"

# The jobs' settings (sbatch exports the environment): mpi backend, small sizes.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_pml=ob1
export BUILD_DIR=$tmp/build BACKEND=mpi OPS=allreduce,allgather,broadcast DTYPES=float
export MIN_BYTES=8 MAX_BYTES=16K POINT_TIME=0.05 KERNELS_MODELS=configs/models/gpt-125m.yaml
export KERNELS_ARGS="--scale 0.125 --max-time 0.05 -w 1" REPORT_ARGS=--data-only
unset GPUS_PER_NODE OUT SCALEFIT_HOME LAUNCHER SRUN_ARGS NODE_COUNTS NODES
cd "$tmp/submit" # not the checkout: the job finds it from the path it was submitted as
sbatch_job() { # sbatch_job SYSTEM NODES: the job id
  SYSTEM=$1 sbatch --parsable -N "$2" --ntasks-per-node=2 -J "sf-$1" "$src/scripts/slurm/characterize.sbatch"
}
wait_job() { # wait_job ID SECONDS: until it leaves the queue
  for _ in $(seq "$2"); do
    [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] && return 0
    sleep 1
  done
  fail "job $1 still queued or running after $2 s: $(squeue -j "$1" 2>&1)"
}
job_state() { scontrol show job -o "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

# 1. One node, to the end.
j1=$(sbatch_job one 1)
wait_job "$j1" 120
[ "$(job_state "$j1")" = COMPLETED ] || { cat "scalefit-characterize-$j1.out"; fail "1-node job $j1: $(job_state "$j1")"; }
echo "slurm test: 1-node job done at $(($(date +%s) - t0)) s"
# Requeued (scontrol requeue), it runs again: every step skipped, fit and report redone, the log
# appended to (--open-mode=append) with a second start line.
requeue_now() {
  scontrol requeue "$1"
  # a requeued job waits about 2 minutes before it is eligible again (its BeginTime): not here
  for _ in $(seq 20); do
    [ "$(squeue -h -j "$1" -o %T)" = PENDING ] && scontrol update JobId="$1" StartTime=now 2>/dev/null && break
    sleep 0.5
  done
  wait_job "$1" 120
}
requeue_now "$j1"
# Slurm itself can fail to relaunch a requeued batch job on a loaded host (state FAILED and no
# second start line: the script never ran); that is not the job script's failure: once more.
if [ "$(job_state "$j1")" != COMPLETED ] &&
   [ "$(grep -c "^=== job $j1 start" "scalefit-characterize-$j1.out")" = 1 ]; then
  echo "slurm test: Slurm did not relaunch requeued job $j1 ($(job_state "$j1")); requeued again"
  requeue_now "$j1"
fi
[ "$(job_state "$j1")" = COMPLETED ] || { cat "scalefit-characterize-$j1.out"; fail "requeued job $j1: $(job_state "$j1")"; }
[ "$(grep -c "^=== job $j1 start .*restart [1-9][0-9]*," "scalefit-characterize-$j1.out")" = 1 ] &&
  [ "$(grep -c "^characterize: done in" "scalefit-characterize-$j1.out")" = 2 ] ||
  { cat "scalefit-characterize-$j1.out"; fail "the requeued job's log was not appended to"; }
grep -q "comm-n1: done in an earlier run, skipped" "scalefit-characterize-$j1.out" || fail "requeue redid comm-n1"
echo "slurm test: requeued 1-node job done at $(($(date +%s) - t0)) s"

# 2. Two nodes, cancelled in the middle of the 2-node sweep, then submitted again.
j2=$(sbatch_job two 2)
for _ in $(seq 240); do
  [ -e results/two/steps/comm-n1.done ] && [ "$(grep -c '"measurement"' results/two/comm-n2.jsonl 2>/dev/null)" -ge 5 ] && break
  sleep 0.5
done
[ "$(grep -c '"measurement"' results/two/comm-n2.jsonl 2>/dev/null)" -ge 5 ] ||
  { cat "scalefit-characterize-$j2.out"; fail "job $j2 did not reach the 2-node sweep"; }
scancel "$j2"
wait_job "$j2" 60
[ ! -e results/two/steps/comm-n2.done ] || fail "cancelled too late: the 2-node sweep finished"
before=$(grep -c '"measurement"' results/two/comm-n2.jsonl)
echo "slurm test: job $j2 cancelled with $before 2-node points, at $(($(date +%s) - t0)) s"
j3=$(sbatch_job two 2)
wait_job "$j3" 150
[ "$(job_state "$j3")" = COMPLETED ] || { cat "scalefit-characterize-$j3.out"; fail "resubmitted job $j3: $(job_state "$j3")"; }
grep -q "comm-n1: done in an earlier run, skipped" "scalefit-characterize-$j3.out" || fail "job $j3 redid 1 node"
echo "slurm test: resubmitted 2-node job done at $(($(date +%s) - t0)) s"

# Fit files and reports, in the submit directory's results/.
for s in one two; do
  [ -s "results/$s/fit.yaml" ] || fail "no results/$s/fit.yaml"
  [ -s "results/$s/report/index.html" ] || [ -s "results/$s/report/data.json" ] ||
    [ -n "$(ls "results/$s/report" 2>/dev/null)" ] || fail "no results/$s/report"
done
grep -Eq "allreduce:[a-z]*:4=2x2:float" results/two/fit.yaml || fail "no 2-node world curve"
grep -Eq "allreduce:[a-z]*:2=2x1:float" results/two/fit.yaml || fail "no inter-node curve"
for j in "$j1" "$j3"; do
  grep -q "^=== job $j start" "scalefit-characterize-$j.out" || fail "no start line in job $j's log"
done

# Layouts, points, nodes (python3: JSON).
python3 - "$tmp/submit/results" "$tmp/ranks.log" "$MIN_BYTES" "$MAX_BYTES" <<'PY' || fail "records"
import json, sys, os, collections
root, ranks_log = sys.argv[1], sys.argv[2]
def size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s)
sizes = []
b = size(sys.argv[3])
while b <= size(sys.argv[4]):
    sizes.append(b); b *= 2
bad = []
keys = {}
want = {"comm-n1.jsonl": (2, 1, 2), "comm-n2.jsonl": (4, 2, 2)}
for system in ("one", "two"):
    d = os.path.join(root, system)
    for f in sorted(os.listdir(d)):
        if not f.endswith(".jsonl"): continue
        recs = [json.loads(l) for l in open(os.path.join(d, f)) if l.strip()]
        ctx = [r for r in recs if r.get("type") == "context"]
        if not ctx: bad.append(f"{system}/{f}: no context record")
        if f.startswith("kernels-"):
            for c in ctx:
                if c.get("nranks") != 1: bad.append(f"{system}/{f}: kernels context nranks {c.get('nranks')}")
            continue
        for c in ctx:
            got = (c.get("nranks"), c.get("nnodes"), c.get("ranks_per_node"))
            if got != want[f]: bad.append(f"{system}/{f}: context layout {got}, asked {want[f]}")
        seen, series = collections.Counter(), collections.defaultdict(set)
        for m in (r for r in recs if r.get("type") == "measurement"):
            g = m["group"]
            s = (m["op"], g["kind"], g["nranks"], g["nnodes"], g["ranks_per_node"], m["dtype"],
                 m["placement"], m.get("method", ""), m.get("redop", ""), m.get("root", -1))
            seen[s + (m["bytes"],)] += 1
            series[s].add(m["bytes"])
        for k, c in seen.items():
            if c > 1: bad.append(f"{system}/{f}: point {k} {c} times")
        for s, got in series.items():
            # the whole size range, less the sizes too small to split among the ranks (float)
            least = 4 * s[2] if s[0] in ("allgather", "reducescatter", "alltoall", "alltoallv") else 4
            want_sizes = [b for b in sizes if b >= least]
            if sorted(got) != want_sizes:
                bad.append(f"{system}/{f}: {s}: sizes {sorted(got)} != {want_sizes}")
        keys[(system, f)] = set(seen)
        kinds = {s[1] for s in series}
        # 2 ranks per node: the 1-node intra group is the world group (listed once, as world)
        exp = {"world"} if f == "comm-n1.jsonl" else {"world", "inter"}
        if kinds != exp: bad.append(f"{system}/{f}: group kinds {kinds}, expected {exp} (intra groups once)")
        ops = {s[0] for s in series}
        if ops != {"allreduce", "allgather", "broadcast"}: bad.append(f"{system}/{f}: ops {ops}")
        print(f"{system}/{f}: {len(ctx)} context(s), {sum(seen.values())} points, {len(series)} series")
# The same 1-node sweep in both jobs: the same points.
if keys.get(("one", "comm-n1.jsonl")) != keys.get(("two", "comm-n1.jsonl")):
    bad.append("the 1-node sweeps of the two jobs measured different points")
# Each rank of a step on the node Slurm gave it: 2-node steps put 2 ranks on n1 and 2 on n2.
steps = collections.defaultdict(list)
for line in open(ranks_log):
    p = line.split()
    if len(p) == 7: steps[(p[0], p[1])].append(p)
for (job, step), rows in steps.items():
    nn, nt = int(rows[0][2]), int(rows[0][3])
    if len(rows) != nt: bad.append(f"job {job} step {step}: {len(rows)} ranks started, {nt} asked")
    per = collections.Counter(r[4] for r in rows)
    if len(per) != nn or any(c != nt // nn for c in per.values()):
        bad.append(f"job {job} step {step}: ranks per node {dict(per)} for {nn} x {nt // nn}")
print(f"{len(steps)} steps' ranks checked")
for b in bad: print("BAD:", b)
sys.exit(1 if bad else 0)
PY
echo "slurm test: passed in $(($(date +%s) - t0)) s"
