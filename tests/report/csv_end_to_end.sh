#!/bin/sh
# --csv next to --out: scalefit-bench comm and kernels write one CSV row per JSONL record (same
# numbers), scalefit fit --csv one row per entry; pandas-style reading with Python's csv module.
# Usage: csv_end_to_end.sh BIN_DIR SOURCE_DIR
set -eu
bin=$1 src=$2
tmp=$(mktemp -d /tmp/scalefit_csv_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun --oversubscribe -np 2 "$bin/scalefit-bench" comm --backend mpi --ops allreduce,broadcast \
  -b 8 -e 64K -f 4 --max-time 0.01 --out "$tmp/c.jsonl" --csv "$tmp/c.csv" >/dev/null
mpirun --oversubscribe -np 1 "$bin/scalefit-bench" kernels --engine cpu \
  --model "$src/configs/models/gpt-125m.yaml" --scale 0.125 --max-time 0.02 -w 0 \
  --out "$tmp/k.jsonl" --csv "$tmp/k.csv" >/dev/null
"$bin/scalefit" fit "$tmp/c.jsonl" -o "$tmp/f.yaml" --csv "$tmp/f.csv" >/dev/null
python3 - "$tmp" <<'PY'
import csv, json, sys
d = sys.argv[1]
def jsonl(p, t):
    return [r for r in map(json.loads, open(p)) if r["type"] == t]
m, rows = jsonl(d + "/c.jsonl", "measurement"), list(csv.DictReader(open(d + "/c.csv")))
assert len(rows) == len(m) > 0, (len(rows), len(m))
for r, j in zip(rows, m):
    assert int(r["bytes_B"]) == j["bytes"] and r["op"] == j["op"], r
    assert abs(float(r["busbw_GBps"]) - j["busbw_gbps"]) <= 1e-9 * j["busbw_gbps"] + 1e-15, r
    assert abs(float(r["median_us"]) - j["stats"]["median_us"]) <= 1e-9 * j["stats"]["median_us"]
k, krows = jsonl(d + "/k.jsonl", "kernel"), list(csv.DictReader(open(d + "/k.csv")))
assert len(krows) == len(k) > 0 and all(r["name"] == j["name"] for r, j in zip(krows, k))
f = list(csv.DictReader(open(d + "/f.csv")))
entries = sum(1 for l in open(d + "/f.yaml") if l.startswith("  - id:"))
assert len(f) == entries > 0, (len(f), entries)  # one row per fitted curve
assert all(float(r["mape_pct"]) >= 0 and float(r["latency_us"]) > 0 for r in f)
print("csv: %d comm rows, %d kernel rows, %d fit rows match their records" % (len(rows), len(krows), len(f)))
PY
