#!/usr/bin/env python3
"""Checks plot.py's drawing decisions that a PNG check cannot see (issue 17 §3, issue 18 §4):
the compute fit's rate keeps its significant digits (a CPU's 0.0553 TFLOP/s is not "0"), the
kernel shape labels of clustered points do not overlap, and a bandwidth series with a --repeat
band is drawn with a filled band. Usage: check_plot_logic.py PLOT_PY. Exit 1 on a failure."""
import importlib.util
import sys

import matplotlib

matplotlib.use("Agg")
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.text import Text  # noqa: E402

spec = importlib.util.spec_from_file_location("plot", sys.argv[1])
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


# Significant digits, not decimals: every rate keeps 3 of them (or all of an integer part).
for x in (0.0553, 0.000123456, 7.891, 745.3, 1234.4):
    s = plot.sig(x)
    expect(s != "0" and abs(float(s) - x) <= 0.005 * x + 0.5 * (x >= 1000), "sig(%r) = %s" % (x, s))
expect(plot.sig(0.0553) == "0.0553", "sig(0.0553) = " + plot.sig(0.0553))

# Eight shapes whose points nearly coincide: their labels must not overlap.
points = [{"name": "gemm%d.fwd" % i, "shape": "4096x4096x%d" % (1024 + i), "pass": "fwd",
           "flops": 1e10 * (1 + 0.03 * i), "tflops": 0.05 + 0.0003 * i} for i in range(8)]
spec_k = {"title": "kernels", "width_px": 1200, "height_px": 700}
data = {"sets": [{"label": "cpu float", "points": points}],
        "compute_fits": [{"dtype": "float", "kind": "gemm", "tflops": 0.0553, "mape_pct": 3.2}]}
fig = plot.figure(spec_k)
plot.kernels(fig, spec_k, data)
ax = fig.axes[0]
renderer = fig.canvas.get_renderer()
boxes = []
for t in ax.texts:
    t.update_positions(renderer)
    boxes.append(Text.get_window_extent(t, renderer))
expect(len(boxes) == 8, "%d shape labels, expected 8" % len(boxes))
for i in range(len(boxes)):
    for j in range(i):
        expect(not boxes[i].overlaps(boxes[j]), "labels %d and %d overlap" % (j, i))
legend = [t.get_text() for t in ax.get_legend().get_texts()]
expect(any("R = 0.0553 TFLOP/s" in t for t in legend), "legend: %s" % legend)

# A bandwidth series with a --repeat band is drawn with a filled band and a legend entry.
b = [1024.0 * 4 ** i for i in range(4)]
bus = [0.1 * (i + 1) for i in range(4)]
series = {"system": "local", "op": "allreduce", "dtype": "float", "placement": "out-of-place",
          "bytes": b, "time_us": [1.0] * 4, "algbw_gbps": bus, "busbw_gbps": bus,
          "excluded": [False] * 4, "fit": None,
          "busbw_band": {"runs": 3, "bytes": b, "min_gbps": [0.9 * x for x in bus],
                         "max_gbps": [1.1 * x for x in bus]}}
spec_b = {"title": "bw", "width_px": 900, "height_px": 700}
for with_band in (True, False):
    s = dict(series)
    if not with_band:
        s["busbw_band"] = None
    fig = plot.figure(spec_b)
    plot.bandwidth(fig, spec_b, {"op": "allreduce", "panels": [{"group": "world", "series": [s]}]})
    bands = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    expect(len(bands) == (1 if with_band else 0), "band drawn %d times (with_band=%s)"
           % (len(bands), with_band))
    texts = [t.get_text() for a in fig.axes if a.get_legend() for t in a.get_legend().get_texts()]
    expect(any("over 3 runs" in t for t in texts) == with_band, "band legend: %s" % texts)

if failures:
    print("FAIL: " + "; ".join(failures))
    sys.exit(1)
print("plot logic: rates with significant digits, kernel labels apart, --repeat band drawn")
