#!/bin/sh
# End to end: scalefit fit/estimate/search/compare --json -> scalefit report -> every PNG a real,
# non-blank image of the stated size (check_pngs.py), plot.py's label and band logic
# (check_plot_logic.py), and, in `render` mode, index.html rendered
# by headless Chromium with every image loaded.
# Usage: report_end_to_end.sh SCALEFIT SOURCE_DIR [pngs|render]. Exit 77 (CTest: skipped) when no
# python3 with matplotlib (scripts/setup.sh installs python3-matplotlib) or, for render, no
# Chromium.
set -eu
bin=$1 src=$2 mode=${3:-pngs}
py=""
for p in "${SCALEFIT_PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$p" ] && "$p" -c "import matplotlib" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with matplotlib"; exit 77; }
browser=""
if [ "$mode" = render ]; then
  for b in chromium chromium-browser google-chrome chrome-headless-shell; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
  done
  [ -n "$browser" ] || { echo "SKIP: no headless Chromium installed"; exit 77; }
fi
tmp=$(mktemp -d /tmp/scalefit_report_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sys=$src/configs/systems model=$src/configs/models/gpt-13b.yaml
"$bin" fit "$src/tests/data/fitting/local_mpi_3curves.jsonl" -o "$tmp/fit.yaml" >/dev/null
"$bin" estimate --system "$sys/dgx-a100.yaml" --model "$model" --dp 8 --tp 4 --pp 2 --zero 1 \
  --json >"$tmp/estimate.json"
"$bin" search --system "$sys/dgx-a100.yaml" --model "$model" --gpus 64 --top 5 --json \
  >"$tmp/search.json"
"$bin" compare "$sys/polaris.yaml" "$sys/dgx-a100.yaml" --model "$model" --gpus 64 --json \
  >"$tmp/compare.json"
runs=$src/tests/data/published-runs
"$bin" validate --root "$src" "$runs/nemotron4-340b-report.jsonl" "$runs/fsdp-memory.jsonl" \
  "$runs/megatron-bridge-skills-recompute-h100.jsonl" --json >"$tmp/validate.json"
"$bin" report "$src/tests/data/fitting/local_mpi_3curves.jsonl" \
  "$src/tests/data/report/kernels_gpt-1.3b_bf16.jsonl" --fit "$tmp/fit.yaml" \
  --estimate "$tmp/estimate.json" --estimate "$tmp/search.json" --estimate "$tmp/compare.json" \
  --estimate "$tmp/validate.json" \
  --python "$py" -o "$tmp/report"

if [ "$mode" = pngs ]; then
  # 3 bandwidth + latency + kernels + attention + search + compare + estimate time + memory +
  # the published runs' parity plot.
  "$py" "$src/tests/report/check_pngs.py" "$tmp/report" 11
  # What a PNG check cannot see: significant digits, label placement, the --repeat band.
  "$py" "$src/tests/report/check_plot_logic.py" "$src/report/plot.py"
  # The checker itself must refuse a blank picture and a wrong stated size.
  mkdir "$tmp/blank"
  "$py" - "$tmp/blank" <<'PY'
import json, sys, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = sys.argv[1]
fig = plt.figure(figsize=(4, 3), dpi=100)
fig.savefig(d + "/blank.png", dpi=100)
json.dump([{"png": "blank.png", "width_px": 400, "height_px": 300}], open(d + "/plots.json", "w"))
open(d + "/index.html", "w").write('<img src="blank.png">')
PY
  if "$py" "$src/tests/report/check_pngs.py" "$tmp/blank" >/dev/null; then
    echo "FAIL: check_pngs.py accepted a blank image"; exit 1
  fi
  cp "$tmp/report/latency-local.png" "$tmp/blank/blank.png"
  if "$py" "$src/tests/report/check_pngs.py" "$tmp/blank" >/dev/null; then
    echo "FAIL: check_pngs.py accepted a wrong stated size"; exit 1
  fi
  echo "report: all PNGs real, sized as stated, not blank"
else
  n=$("$py" -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$tmp/report/plots.json")
  dom=$("$browser" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 \
        --dump-dom "file://$tmp/report/index.html" 2>/dev/null)
  echo "$dom" | grep -q "data-images-loaded=\"$n/$n\"" || {
    echo "FAIL: not every image loaded: $(echo "$dom" | grep -o 'data-images-loaded="[^"]*"')"
    exit 1
  }
  echo "report: index.html rendered with all $n images loaded"
fi
