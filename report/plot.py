#!/usr/bin/env python3
"""Draws the plots of `scalefit report` (matplotlib, Agg backend, no network, no display).

Usage: plot.py DIR/plots.json

plots.json lists the plots: name, kind, data_file (relative to DIR), png, width_px, height_px.
Each data file holds what `scalefit report` computed in C++ (docs/report.md): measured points,
fitted curves on a log2 grid, residuals, regime centres, trends, time and memory splits. This
script only draws; every number comes from the data file. Each PNG is written atomically
(a temporary file, then a rename) at exactly width_px x height_px pixels.
"""
import json
import math
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

DPI = 100
COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]
plt.rcParams.update({"font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                     "axes.titlesize": 10, "legend.fontsize": 7})
# Every text is drawn literally: names from the records (a system 'my$cluster$') must not go
# through mathtext, which draws or rejects them (matplotlib >= 3.5 has text.parse_math).
if "text.parse_math" in plt.rcParams:
    plt.rcParams["text.parse_math"] = False


def size_label(b):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while u < 4 and b >= 1024:
        b /= 1024.0
        u += 1
    return "%g %s" % (b, units[u])


def log2_size_axis(ax, lo, hi):
    """x on a log2 scale with ticks at powers of two labelled B/KiB/MiB/GiB (<= ~10 ticks)."""
    ax.set_xscale("log", base=2)
    if not (lo > 0 and hi > 0):
        return
    e0, e1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    step = max(1, math.ceil((e1 - e0) / 9))
    ticks = [2.0 ** e for e in range(e0, e1 + 1, step)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_xlim(2.0 ** (math.log2(lo) - 0.3), 2.0 ** (math.log2(hi) + 0.3))


def figure(spec):
    return plt.figure(figsize=(spec["width_px"] / DPI, spec["height_px"] / DPI), dpi=DPI)


def bandwidth(fig, spec, d):
    panels = d["panels"]
    n = len(panels)
    gs = fig.add_gridspec(2, n, height_ratios=[3, 1], hspace=0.08, wspace=0.25,
                          left=0.06, right=0.99, top=0.9, bottom=0.3)
    fig.suptitle(spec["title"], fontsize=12)
    for j, p in enumerate(panels):
        ax = fig.add_subplot(gs[0, j])
        ar = fig.add_subplot(gs[1, j], sharex=ax)
        lo, hi, handles, bands = float("inf"), 0.0, [], 0
        rmax, excl = 5.0, []  # residual range of the kept points; excluded points drawn clipped
        for i, s in enumerate(p["series"]):
            c = COLORS[i % len(COLORS)]
            b = s["bytes"]
            band = s.get("busbw_band")
            if band:  # run-to-run range of scalefit-bench comm --repeat N
                ax.fill_between(band["bytes"], band["min_gbps"], band["max_gbps"], color=c,
                                alpha=0.2, lw=0, step=None)
                bands = max(bands, band["runs"])
            if b:
                lo, hi = min(lo, min(b)), max(hi, max(b))
                ax.plot(b, s["busbw_gbps"], "o", color=c, ms=4)
                ax.plot(b, s["algbw_gbps"], "s", mfc="none", color=c, ms=4, alpha=0.7)
                ex = [k for k, e in enumerate(s["excluded"]) if e]
                if ex:
                    ax.plot([b[k] for k in ex], [s["busbw_gbps"][k] for k in ex], "x",
                            color="red", ms=9, mew=2)
            f = s.get("fit")
            name = "%s %s %s %s" % (s["system"], s["op"], s["dtype"], s["placement"])
            if f:
                lo, hi = min(lo, f["min_bytes"]), max(hi, f["max_bytes"])
                ax.plot(f["bytes"], f["busbw_gbps"], "-", color=c, lw=1.5)
                ax.plot(f["bytes"], f["algbw_gbps"], "--", color=c, lw=1, alpha=0.7)
                for m in f["regimes"]:
                    ax.axvline(m["bytes"], color=c, ls=":", lw=1, alpha=0.8)
                if b:
                    keep = [k for k, e in enumerate(s["excluded"]) if not e]
                    res = f["residual_pct"]
                    ar.plot([b[k] for k in keep], [res[k] for k in keep], "o-", color=c, ms=3,
                            lw=0.8)
                    rmax = max([rmax] + [abs(res[k]) for k in keep])
                    excl += [(b[k], res[k]) for k, e in enumerate(s["excluded"]) if e]
                name += " - %s, MAPE %.1f%%" % (f["model"], f["mape_pct"])
            handles.append(Line2D([], [], color=c, marker="o", label=name))
        handles += [Line2D([], [], color="gray", marker="o", ls="", label="busbw measured"),
                    Line2D([], [], color="gray", marker="s", mfc="none", ls="",
                           label="algbw measured"),
                    Line2D([], [], color="gray", ls="-", label="busbw fit"),
                    Line2D([], [], color="gray", ls="--", label="algbw fit"),
                    Line2D([], [], color="gray", ls=":", label="regime centre"),
                    Line2D([], [], color="red", marker="x", ls="", mew=2,
                           label="excluded by the fitter")]
        if bands:
            handles.append(Patch(color="gray", alpha=0.3,
                                 label="busbw min..max over %d runs (--repeat)" % bands))
        ax.set_title("%s: %s" % (d["op"], p["group"]))
        ax.set_ylabel("bandwidth [GB/s]" if j == 0 else "")
        ax.set_ylim(bottom=0)
        lim = rmax * 1.15
        ar.set_ylim(-lim, lim)
        for x, r in excl:
            ar.plot([x], [max(-lim, min(lim, r))], "x", color="red", ms=7, mew=2)
        ar.axhline(0, color="black", lw=0.8)
        ar.axhspan(-5, 5, color="green", alpha=0.08)
        ar.set_ylabel("residual [%]" if j == 0 else "")
        if hi > 0:
            log2_size_axis(ar, lo, hi)
        plt.setp(ax.get_xticklabels(), visible=False)
        ar.set_xlabel("message size")
        ar.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, -0.55), ncol=1,
                  frameon=False)


def latency(fig, spec, d):
    panels = d["panels"]
    n = len(panels)
    fig.suptitle(spec["title"], fontsize=12)
    for j, p in enumerate(panels):
        ax = fig.add_subplot(1, n, j + 1)
        lo, hi = float("inf"), 0.0
        for i, s in enumerate(p["series"]):
            ax.plot(s["bytes"], s["time_us"], "o-", ms=3, color=COLORS[i % len(COLORS)],
                    label="%s (%s, %s)" % (s["op"], s["dtype"], s["placement"]))
            lo, hi = min(lo, min(s["bytes"])), max(hi, max(s["bytes"]))
        log2_size_axis(ax, lo, hi)
        ax.set_ylim(bottom=0)
        ax.set_title(p["group"])
        ax.set_xlabel("message size")
        if j == 0:
            ax.set_ylabel("time per operation [µs]")
        ax.legend(loc="upper left")
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.2, top=0.86, wspace=0.2)


def scaling(fig, spec, d):
    ax = fig.add_subplot(1, 1, 1)
    fig.suptitle(spec["title"], fontsize=12)
    nmax = 1
    for i, s in enumerate(d["series"]):
        c = COLORS[i % len(COLORS)]
        mx = [m["nnodes"] for m in s["measured"]]
        my = [m["size_weighted"] for m in s["measured"]]
        ax.plot(mx, my, "o", color=c, ms=8, label=s["label"] + " (measured, size-weighted)")
        for k, m in enumerate(s["measured"]):
            if i > 0:  # per-band markers of the first series only: they would overlap
                break
            for band, e in sorted(m.get("bands", {}).items()):
                ax.plot([m["nnodes"]], [e], "_", color=c, ms=10, mew=2)
                ax.annotate(band, (m["nnodes"], e), xytext=(6, 0), textcoords="offset points",
                            fontsize=6, color=c, va="center")
        t = s["trend"]
        inside = [p for p in t if not p["extrapolated"]]
        ax.plot([p["nnodes"] for p in inside], [p["size_weighted"] for p in inside], "-",
                color=c, label="fitted trend")
        ext = [p for p in t if p["extrapolated"]]
        if ext:
            ext = ([inside[-1]] if inside else []) + ext
            ax.plot([p["nnodes"] for p in ext], [p["size_weighted"] for p in ext], "--",
                    color=c, label="fitted trend, extrapolated")
        nmax = max([nmax] + [p["nnodes"] for p in t] + mx)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ticks = [2 ** e for e in range(0, int(math.log2(nmax)) + 1)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("nodes n")
    ax.set_ylabel("eff(g -> n) = t(g) / t(n)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower left")


def pairs(fig, spec, d):
    """Pair matrices of `scalefit-bench comm --groups pairs`, one panel per size: busbw per pair,
    darker is slower."""
    fig.suptitle(spec["title"], fontsize=12)
    names = d["players"]
    n = len(names)
    panels = d["sizes"]
    for i, p in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        grid = [[float("nan") if v is None else v for v in row] for row in p["busbw_gbps"]]
        im = ax.imshow(grid, cmap="viridis", vmin=0, interpolation="nearest")
        cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        cb.set_label("busbw [GB/s]")
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xticklabels(names, rotation=90, fontsize=7)
        ax.set_yticklabels(names, fontsize=7)
        ax.set_title("%s (median pair %.3g GB/s)" % (size_label(p["bytes"]), p["median_gbps"]),
                     fontsize=9)
        if n <= 12:  # values in the cells while they stay readable
            for r in range(n):
                for c in range(n):
                    v = grid[r][c]
                    if v == v:  # not NaN
                        ax.text(c, r, "%.3g" % v, ha="center", va="center", fontsize=6,
                                color="white" if v < 0.5 * p["median_gbps"] else "black")


def kernels(fig, spec, d):
    ax = fig.add_subplot(1, 1, 1)
    fig.suptitle(spec["title"], fontsize=12)
    handles, labels = [], []
    for i, s in enumerate(d["sets"]):
        c = COLORS[i % len(COLORS)]
        for p in s["points"]:
            bwd = p["pass"] not in ("fwd", "")
            ax.plot([p["flops"]], [p["tflops"]], "o", color=c, ms=6,
                    mfc="none" if bwd else c)
            if i == 0 and not bwd:  # one label per shape: the forward GEMM of the first set
                labels.append(("%s %s" % (p["name"].replace(".fwd", ""), p["shape"]),
                               p["flops"], p["tflops"]))
            if p.get("fit_tflops") is not None:
                ax.plot([p["flops"]], [p["fit_tflops"]], "+", color="black", ms=8, mew=1.2)
        handles.append(Patch(color=c, label=s["label"]))
    styles = ["--", ":", "-.", (0, (5, 1))]
    for j, f in enumerate(d.get("compute_fits", [])):
        ax.axhline(f["tflops"], color="black", lw=0.8, ls=styles[j % len(styles)])
        handles.append(Line2D([], [], color="black", lw=0.8, ls=styles[j % len(styles)],
                              label="compute fit %s %s: R = %s TFLOP/s, MAPE %.1f%%"
                              % (f["dtype"], f["kind"], sig(f["tflops"]), f["mape_pct"])))
    if d.get("compute_fits"):
        handles.append(Line2D([], [], color="black", marker="+", ls="", ms=8,
                              label="compute fit prediction"))
    handles += [Line2D([], [], color="gray", marker="o", ls="", label="forward"),
                Line2D([], [], color="gray", marker="o", mfc="none", ls="", label="backward")]
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("FLOPs per call (2 m n k x batch)")
    ax.set_ylabel("achieved [TFLOP/s]")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    fig.subplots_adjust(left=0.06, right=0.7, bottom=0.1, top=0.92)
    place_labels(fig, ax, labels, fontsize=7)


def sig(x, digits=3):
    """x with `digits` significant digits ("0.0553", "745", "1.23e+03" never: 1230)."""
    if x == 0 or not math.isfinite(x):
        return "%g" % x
    if abs(x) >= 10 ** digits:
        return "%.0f" % x
    return "%.*g" % (digits, x)


def place_labels(fig, ax, labels, fontsize):
    """Annotates (text, x, y) points so that no two labels overlap: each label goes to the first
    offset (right of its point, then alternately above and below, then the same on its left)
    whose box, measured in display pixels, lies inside the axes and meets no box placed before;
    failing that, the first candidate inside the axes, else the first one."""
    fig.canvas.draw()  # fixes the limits and transforms the boxes are measured in
    placed = []
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    step = fontsize * 1.4
    offsets = []
    for dx in (5, -5):
        offsets.append((dx, 3))
        for k in range(1, 16):
            offsets += [(dx, 3 + k * step), (dx, 3 - k * step)]

    def draw(text, x, y, dx, dy):
        return ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                           fontsize=fontsize, color="black", ha="left" if dx >= 0 else "right",
                           arrowprops=None if dy == 3 else
                           dict(arrowstyle="-", color="gray", lw=0.5))

    for text, x, y in sorted(labels, key=lambda t: (t[1], t[2])):
        best, fallback = None, None
        for dx, dy in offsets:
            ann = draw(text, x, y, dx, dy)
            ann.update_positions(renderer)
            box = Text.get_window_extent(ann, renderer)  # the text alone, not its leader line
            ann.remove()
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
                      and box.y1 <= frame.y1)
            if inside and fallback is None:
                fallback = (dx, dy)
            if inside and not any(box.overlaps(b) for b in placed):
                best = (dx, dy)
                break
        dx, dy = best or fallback or offsets[0]
        ann = draw(text, x, y, dx, dy)
        ann.update_positions(renderer)
        placed.append(Text.get_window_extent(ann, renderer))


def attention(fig, spec, d):
    ax = fig.add_subplot(1, 1, 1)
    fig.suptitle(spec["title"], fontsize=12)
    names = []
    for s in d["sets"]:
        for k in s["kernels"]:
            if k["name"] not in names:
                names.append(k["name"])
    n = len(d["sets"])
    h = 0.8 / max(1, n)
    for i, s in enumerate(d["sets"]):
        t = {k["name"]: k["time_us"] for k in s["kernels"]}
        ys = [y + i * h for y in range(len(names))]
        ax.barh(ys, [t.get(nm, 0) for nm in names], height=h, color=COLORS[i % len(COLORS)],
                label=s["label"])
    ax.set_yticks([y + 0.4 - h / 2 for y in range(len(names))])
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlabel("time per call [µs]")
    ax.legend(loc="lower right")
    fig.subplots_adjust(left=0.16, right=0.98, bottom=0.1, top=0.92)


TIME_PARTS = [("compute_s", "compute", "#4c72b0"), ("exposed_comm_s", "exposed communication",
                                                   "#dd8452"), ("bubble_s", "bubble", "#8c8c8c")]
MEM_PARTS = [("weights", "#4c72b0"), ("gradients", "#55a868"), ("optimizer", "#c44e52"),
             ("activations", "#8172b2")]


def layout_name(l, with_system=True):
    s = "%s %s x%d: %s" % (l["system"], l["model"], l["gpus"], l["layout"])
    return s if with_system else l["layout"]


def time_bars(ax, layouts, labels):
    ys = list(range(len(layouts)))
    left = [0.0] * len(layouts)
    for key, name, c in TIME_PARTS:
        v = [l[key] for l in layouts]
        ax.barh(ys, v, left=left, color=c, label=name)
        left = [a + b for a, b in zip(left, v)]
    for y, l in zip(ys, layouts):
        ax.text(l["iteration_s"], y, " %.3f s" % l["iteration_s"], va="center", fontsize=7)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time per iteration [s]")
    ax.legend(loc="lower right")
    ax.set_xlim(0, max(l["iteration_s"] for l in layouts) * 1.18)


def memory_bars(ax, layouts, labels):
    ys = list(range(len(layouts)))
    left = [0.0] * len(layouts)
    for key, c in MEM_PARTS:
        v = [l["memory_gib"][key] for l in layouts]
        ax.barh(ys, v, left=left, color=c, label=key)
        left = [a + b for a, b in zip(left, v)]
    for y, l in zip(ys, layouts):
        ax.plot([l["device_gib"]] * 2, [y - 0.45, y + 0.45], color="black", lw=2)
    ax.plot([], [], color="black", lw=2, label="device memory")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("memory per GPU [GiB]")
    ax.legend(loc="lower right")


def estimate_time(fig, spec, d):
    ax = fig.add_subplot(1, 1, 1)
    fig.suptitle(spec["title"], fontsize=12)
    time_bars(ax, d["layouts"], [layout_name(l) for l in d["layouts"]])
    fig.subplots_adjust(left=0.38, right=0.97, bottom=0.12, top=0.9)


def estimate_memory(fig, spec, d):
    ax = fig.add_subplot(1, 1, 1)
    fig.suptitle(spec["title"], fontsize=12)
    memory_bars(ax, d["layouts"], [layout_name(l) for l in d["layouts"]])
    fig.subplots_adjust(left=0.38, right=0.97, bottom=0.12, top=0.9)


def search(fig, spec, d):
    fig.suptitle(spec["title"], fontsize=12)
    labels = ["#%d %s" % (i + 1, layout_name(l, False)) for i, l in enumerate(d["layouts"])]
    a1 = fig.add_subplot(1, 2, 1)
    time_bars(a1, d["layouts"], labels)
    a2 = fig.add_subplot(1, 2, 2)
    memory_bars(a2, d["layouts"], ["" for _ in labels])
    fig.subplots_adjust(left=0.2, right=0.98, bottom=0.12, top=0.9, wspace=0.08)


def compare(fig, spec, d):
    fig.suptitle(spec["title"], fontsize=12)
    ls = [d["a"], d["b"]]
    names = ["A: %s\n%s" % (l["system"], l["layout"]) for l in ls]
    a1 = fig.add_subplot(1, 3, 1)
    bottom = [0.0, 0.0]
    for key, name, c in TIME_PARTS:
        v = [l[key] for l in ls]
        a1.bar([0, 1], v, bottom=bottom, color=c, label=name, width=0.6)
        bottom = [a + b for a, b in zip(bottom, v)]
    names[1] = "B" + names[1][1:]
    a1.set_xticks([0, 1])
    a1.set_xticklabels(names, fontsize=7)
    a1.set_ylabel("time per iteration [s]")
    a1.set_title("iteration (B/A %.2fx)" % d["time_ratio"])
    a1.set_ylim(0, max(l["iteration_s"] for l in ls) * 1.3)
    a1.legend(loc="upper left")
    a2 = fig.add_subplot(1, 3, 2)
    bottom = [0.0, 0.0]
    for key, name, c in [("tp", "TP", "#937860"), ("pp", "PP", "#da8bc3"),
                         ("dp", "DP / ZeRO", "#dd8452")]:
        v = [l["comm_by_s"][key] for l in ls]
        a2.bar([0, 1], v, bottom=bottom, color=c, label=name, width=0.6)
        bottom = [a + b for a, b in zip(bottom, v)]
    for x, l in enumerate(ls):
        a2.text(x, l["communication_s"], "%.3f s\n(%.3f s exposed)"
                % (l["communication_s"], l["exposed_comm_s"]), ha="center", va="bottom",
                fontsize=7)
    a2.set_xticks([0, 1])
    a2.set_xticklabels(["A", "B"])
    a2.set_ylabel("communication per iteration [s]")
    a2.set_ylim(0, max([l["communication_s"] for l in ls] + [1e-9]) * 1.35)
    a2.set_title("communication (B/A %.2fx)" % d["comm_ratio"])
    a2.legend(loc="upper right")
    a3 = fig.add_subplot(1, 3, 3)
    bottom = [0.0, 0.0]
    for key, c in MEM_PARTS:
        v = [l["memory_gib"][key] for l in ls]
        a3.bar([0, 1], v, bottom=bottom, color=c, label=key, width=0.6)
        bottom = [a + b for a, b in zip(bottom, v)]
    for x, l in enumerate(ls):
        a3.plot([x - 0.4, x + 0.4], [l["device_gib"]] * 2, color="black", lw=2)
    a3.plot([], [], color="black", lw=2, label="device memory")
    a3.set_xticks([0, 1])
    a3.set_xticklabels(["A", "B"])
    a3.set_ylabel("memory per GPU [GiB]")
    a3.set_title("memory")
    a3.set_ylim(0, max([l["device_gib"] for l in ls] + [sum(l["memory_gib"].values())
                                                       for l in ls]) * 1.35)
    a3.legend(loc="upper left")
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.2, top=0.85, wspace=0.3)


MARKERS = "osD^v<>ph*"


def parity(ax, sources, pub_key, est_key, unit, what):
    """Estimated against published on log-log axes: the diagonal, +-5% and +-15% bands, one
    colour and marker per source (hollow: a calibration run, in sample)."""
    lo, hi, drawn = float("inf"), 0.0, False
    for i, src in enumerate(sources):
        runs = [r for r in src["runs"] if pub_key in r]
        if not runs:
            continue
        drawn = True
        c, m = COLORS[i % len(COLORS)], MARKERS[(i // len(COLORS)) % len(MARKERS)]
        for cal in (False, True):
            xs = [r[pub_key] for r in runs if r["calibration"] == cal]
            ys = [r[est_key] for r in runs if r["calibration"] == cal]
            if xs:
                ax.scatter(xs, ys, s=22, marker=m, color=c if not cal else "none",
                           edgecolors=c, linewidths=1.0, zorder=3)
        for r in runs:
            lo, hi = min(lo, r[pub_key], r[est_key]), max(hi, r[pub_key], r[est_key])
    if not drawn:
        ax.set_visible(False)
        return
    lo, hi = lo / 1.5, hi * 1.5
    grid = [lo, hi]
    ax.fill_between(grid, [g / 1.15 for g in grid], [g * 1.15 for g in grid], color="0.9",
                    zorder=1, label="+-15%")
    ax.fill_between(grid, [g / 1.05 for g in grid], [g * 1.05 for g in grid], color="0.78",
                    zorder=1, label="+-5%")
    ax.plot(grid, grid, color="black", lw=0.8, zorder=2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers at 1, 2, 5 x 10^n (no mathtext)
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("published %s [%s]" % (what, unit))
    ax.set_ylabel("estimated %s [%s]" % (what, unit))
    ax.legend(loc="upper left")


def validation(fig, spec, d):
    fig.suptitle(spec["title"], fontsize=12)
    srcs = d["sources"]
    memory = any("published_gib" in r for s in srcs for r in s["runs"])
    a1 = fig.add_subplot(1, 2 if memory else 1, 1)
    parity(a1, srcs, "published_s", "estimated_s", "s", "iteration time")
    a1.set_title("iteration time")
    if memory:
        a2 = fig.add_subplot(1, 2, 2)
        parity(a2, srcs, "published_gib", "estimated_gib", "GiB", "memory per GPU")
        a2.set_title("memory per GPU")
    handles = []
    for i, s in enumerate(srcs):
        label = "%s (%d run%s)" % (s["source"], len(s["runs"]), "" if len(s["runs"]) == 1 else "s")
        if s["out_of_sample"]:
            label += ": time mean %.1f%%, max %.1f%%" % (s["mean_time_pct"], s["max_time_pct"])
        if s["memory_runs"]:
            label += "; memory max %.1f%%" % s["max_memory_pct"]
        handles.append(Line2D([], [], ls="", marker=MARKERS[(i // len(COLORS)) % len(MARKERS)],
                              color=COLORS[i % len(COLORS)], label=label))
    fig.legend(handles=handles, loc="lower center", ncol=2 if len(handles) > 6 else 1,
               fontsize=7, frameon=False)
    rows = math.ceil(len(handles) / (2 if len(handles) > 6 else 1))
    fig.subplots_adjust(left=0.06, right=0.98, top=0.92, wspace=0.25,
                        bottom=min(0.5, 0.06 + rows * 16.0 / spec["height_px"]))


def shrink(path):
    """Re-encodes a PNG with a 256-colour palette (about 4x smaller, no visible change on these
    flat-colour plots) when Pillow is there (python3-matplotlib depends on python3-pil)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as im:
        q = im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    q.save(path, format="PNG", optimize=True)


DRAW = {"bandwidth": bandwidth, "latency": latency, "scaling": scaling, "pairs": pairs,
        "kernels": kernels,
        "attention": attention, "estimate_time": estimate_time,
        "estimate_memory": estimate_memory, "search": search, "compare": compare,
        "validation": validation}


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: plot.py DIR/plots.json\n")
        return 2
    manifest = argv[1]
    root = os.path.dirname(os.path.abspath(manifest))
    with open(manifest) as f:
        plots = json.load(f)
    for p in plots:
        with open(os.path.join(root, p["data_file"])) as f:
            spec = json.load(f)
        if spec["kind"] not in DRAW:
            sys.stderr.write("plot.py: unknown plot kind '%s' in %s\n" % (spec["kind"],
                                                                           p["data_file"]))
            return 2
        fig = figure(spec)
        DRAW[spec["kind"]](fig, spec, spec["data"])
        out = os.path.join(root, p["png"])
        if os.path.islink(out):
            sys.stderr.write("plot.py: %s is a symbolic link; not writing through it\n" % out)
            return 2
        # A fresh temporary file of our own (O_EXCL: a link planted at a fixed name is never
        # followed), then a rename over the PNG (which replaces a link rather than its target).
        fd, tmp = tempfile.mkstemp(prefix="." + p["png"] + ".", suffix=".tmp.png", dir=root)
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # as a plain open() would (mkstemp makes 0600)
        try:
            with os.fdopen(fd, "wb") as f:
                fig.savefig(f, dpi=DPI, format="png")
            plt.close(fig)
            shrink(tmp)
            os.replace(tmp, out)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
