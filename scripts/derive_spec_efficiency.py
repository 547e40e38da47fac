#!/usr/bin/env python3
"""Derive a system YAML's gemm_efficiency / hbm_efficiency rows from scalefit.kernels/1 records.

Usage: scripts/derive_spec_efficiency.py --peak-tflops 989 --hbm-gbps 3350 FILE.jsonl...
GEMM rows: for each GFLOP threshold (128, 16, 1, 0), the median achieved fraction of peak of the
16-byte-aligned dense GEMMs (kind gemm) in [threshold, next larger threshold). Memory rows: the
median achieved fraction of HBM bandwidth of the softmax kernels (read + write of m*n*batch
elements), per MB threshold (100, 10, 1, 0); thresholds without measurements are printed as
"no data" and must be set by hand. Prints YAML rows to paste into configs/systems/*.yaml.
"""
import argparse, json, statistics, sys

ap = argparse.ArgumentParser()
ap.add_argument("--peak-tflops", type=float, required=True)
ap.add_argument("--hbm-gbps", type=float, required=True)
ap.add_argument("files", nargs="+")
a = ap.parse_args()
el = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4, "fp64": 8}
gemm, mem = [], []
for f in a.files:
    for line in open(f):
        r = json.loads(line)
        if r.get("type") != "kernel":
            continue
        e = el.get(r["dtype"], 4)
        if r["kind"] == "gemm" and all((r[x] * e) % 16 == 0 for x in ("m", "n", "k")):
            gemm.append((r["flops"] * 1e-9, r["flops"] / (r["time_us"] * 1e-6) / 1e12 / a.peak_tflops))
        if r["kind"] == "softmax":
            b = 2 * r["m"] * r["n"] * r["batch"] * e
            mem.append((b * 1e-6, b / (r["time_us"] * 1e-6) / 1e9 / a.hbm_gbps))

def rows(points, thresholds):
    out, upper = [], float("inf")
    for t in thresholds:
        sel = [f for s, f in points if t <= s < upper]
        out.append((t, round(statistics.median(sel), 2) if sel else None, len(sel)))
        upper = t
    return out

for name, pts, th in (("gemm_efficiency", gemm, (128, 16, 1, 0)), ("hbm_efficiency", mem, (100, 10, 1, 0))):
    print(f"{name}:")
    for t, f, n in rows(pts, th):
        print(f"  [{t}, {f if f is not None else 'no data'}]  # {n} kernels")
