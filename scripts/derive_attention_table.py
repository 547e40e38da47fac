#!/usr/bin/env python3
"""Derive a system YAML's `fused_attention_efficiency` rows from measured cuDNN attention kernels.

Input: a results CSV of the cuDNN frontend's training SDPA benchmark
(NVIDIA/cudnn-frontend, benchmark/sdpa_benchmark_training: `python -m
benchmark.sdpa_benchmark_training.runner --config llama`), one row per (mask, sequence, pass) with
the kernel's time and TFLOP/s. The benchmark counts FLOPs as 4 b h s_q s_kv d (forward; causal
masks halve it) and 2.5 times that backward, the convention of scalefit's attention pricing
(pricing.hpp attention_s), so a row's TFLOP/s over the device's dense 16-bit peak is the table's
efficiency at that sequence length:
  forward            causal (`top_left`) forward
  backward           causal backward, non-deterministic (what training runs)
  forward_noncausal  unmasked forward (ring attention's steps over other ranks' K,V)
  forward_window     causal forward over a sliding window, keyed by the window W in tokens: the
  backward_window    median over the measured sequence lengths (a windowed kernel touches W keys
                     per query whatever the sequence; the benchmark counts the mask's non-zeros)
  forward_fp8, ...   with --fp8-peak: the fp8 (per-tensor) and mxfp8 causal rows as fractions of
                     the FP8 peak (forward_fp8 / backward_fp8, forward_mxfp8 / backward_mxfp8;
                     those of the recipes measured: Hopper has no MXFP8)
  forward_window_fp8, backward_window_fp8, forward_window_mxfp8, backward_window_mxfp8
                     with --fp8-peak: the same windowed rows in FP8, keyed by the SEQUENCE length
                     (window FLOPs over the FP8 peak): cuDNN's FP8 windowed backward does not
                     skip the tiles outside the window (gpt_oss_gb200.csv, W = 128: 0.54, 1.73,
                     6.18, 23.2, 90.3 ms at 2k-32k tokens, x3.2-3.9 per doubling, where bf16's
                     grows x2), so its rate depends on the sequence, not on W; below the
                     shortest measured length, its value

Lengths below the shortest measured one: the measurement's value there times the ratio the
reference table (--shape-from, default dgx-h100.yaml: FlashAttention-3's cuDNN figures down to
512 tokens) has between those lengths and the shortest measured one. Said in the output.

Usage:
  scripts/derive_attention_table.py --csv tests/data/kernels/cudnn-sdpa/llama3.1_gb200.csv \
      --csv tests/data/kernels/cudnn-sdpa/gpt_oss_gb200.csv --peak 2500
  scripts/derive_attention_table.py --csv ... --peak 2500 --check configs/systems/gb200-nvl72.yaml

--check compares the derived rows with those of the given system YAML instead of printing (rows
the CSVs do not give are not compared): exit 1 and the differing rows when any efficiency differs
by more than 0.0005 (tests/CMakeLists.txt runs it on the
shipped files). Bad input (missing file or column, no matching rows, a non-finite or non-positive
number): exit 2 naming the file, line and field.
"""
import argparse
import csv
import math
import re
import statistics
import sys

ROWS = ("forward", "backward", "forward_noncausal", "forward_window", "backward_window")
FP8_ROWS = {"fp8": ("forward_fp8", "backward_fp8"), "mxfp8": ("forward_mxfp8", "backward_mxfp8")}


def by_seq(pts):
    """[(seq, eff)...] by descending sequence length, the shortest's value carried to 0, at four
    significant digits (the FP8 windowed backward runs at a thousandth of the peak)."""
    rows = sorted(pts.items(), reverse=True)
    return [(s, float(f"{e:.4g}")) for s, e in rows + [(0, rows[-1][1])]]


def fail(msg, code=2):
    print(f"derive_attention_table: {msg}", file=sys.stderr)
    sys.exit(code)


def number(text, path, line, field):
    try:
        v = float(text)
    except ValueError:
        fail(f"{path}:{line}: field '{field}': expected a number, got '{text}'")
    if not math.isfinite(v) or v <= 0:
        fail(f"{path}:{line}: field '{field}': expected a finite positive number, got '{text}'")
    return v


def measured(path, dtype, backend, peak, out, window_by_seq=False):
    """Add {row name: {seq or window: [efficiency...]}} of one results CSV to `out` (both of the
    benchmark's schemas: one row per pass with `tflops`, or `profile_pass` both with
    `fwd_tflops` and `bwd_tflops`); windowed rows keyed by the window, or by the sequence with
    `window_by_seq` (the FP8 kernels, above)."""
    try:
        f = open(path, newline="")
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    with f:
        rd = csv.DictReader(f)
        need = {"backend", "data_type", "attn_mask", "q_seqlen", "kv_seqlen", "profile_pass"}
        missing = need - set(rd.fieldnames or [])
        if missing:
            fail(f"{path}:1: missing column(s) {', '.join(sorted(missing))}")
        for row in rd:
            line = rd.line_num
            if row["backend"] != backend or row["data_type"] != dtype:
                continue
            if row.get("success", "True") != "True" or row.get("deterministic_bwd", "False") != "False":
                continue
            window = row.get("sliding_window_size") or None
            if window is not None:
                window = int(number(window, path, line, "sliding_window_size"))
            seq = number(row["q_seqlen"], path, line, "q_seqlen")
            if number(row["kv_seqlen"], path, line, "kv_seqlen") != seq:
                continue
            causal = row["attn_mask"] == "top_left"
            if not causal and row["attn_mask"] != "no_mask":
                continue
            if window is not None and not causal:
                continue
            passes = ([("fwd", "tflops")] if row["profile_pass"] == "fwd" else
                      [("bwd", "tflops")] if row["profile_pass"] == "bwd" else
                      [("fwd", "fwd_tflops"), ("bwd", "bwd_tflops")])
            for p, col in passes:
                if col not in row:
                    fail(f"{path}:{line}: missing field '{col}'")
                eff = number(row[col], path, line, col) / peak
                if window is not None and window_by_seq:
                    eff = window_rate(row, p, col, window, path, line) / peak
                if window is not None:
                    out["forward_window" if p == "fwd" else "backward_window"].setdefault(
                        int(seq) if window_by_seq else window, []).append(eff)
                    continue
                name = ("forward" if causal else "forward_noncausal") if p == "fwd" else (
                    "backward" if causal else None)
                if name:
                    out[name].setdefault(int(seq), []).append(eff)


def window_rate(row, p, col, window, path, line):
    """TFLOP/s of a windowed row from its time: the benchmark's printed rate is rounded to whole
    TFLOP/s, too coarse for the FP8 windowed backward (6 TFLOP/s at 32k tokens). FLOPs as the
    benchmark counts a window, the mask's non-zeros: 4 b h d (s W - W (W - 1) / 2) forward, 2.5
    times that backward; checked against the printed rate (within its rounding and 1%), exit 2
    naming the row where they disagree."""
    tcol = "time_ms" if "time_ms" in row else f"{p}_time_ms"
    need = ("batch_size", "num_q_heads", "head_dim_qk", tcol)
    for f in need:
        if f not in row:
            fail(f"{path}:{line}: missing field '{f}'")
    b, h, d, t = (number(row[f], path, line, f) for f in need)
    seq = number(row["q_seqlen"], path, line, "q_seqlen")
    nonzeros = seq * window - window * (window - 1) / 2
    flops = 4 * b * h * d * nonzeros * (2.5 if p == "bwd" else 1.0)
    rate = flops / (t * 1e-3) / 1e12
    printed = number(row[col], path, line, col)
    if abs(rate - printed) > 0.5 + 0.01 * printed:
        fail(f"{path}:{line}: field '{tcol}': {t} ms gives {rate:.1f} TFLOP/s by the mask's "
             f"non-zeros (x2.5 backward), the row prints {printed}")
    return rate


def table_rows(text, path):
    """{row name: [(seq, eff)...]} of the fused_attention_efficiency block of a system YAML."""
    m = re.search(r"^  fused_attention_efficiency:\n((?:    .*\n|\s*#.*\n)+)", text, re.M)
    if not m:
        fail(f"{path}: no device.fused_attention_efficiency block")
    rows = {}
    for name, body in re.findall(r"^    (\w+): \[(.*)\]\s*$", m.group(1), re.M):
        rows[name] = [(int(a), float(b))
                      for a, b in re.findall(r"\[(\d+),\s*([0-9.]+(?:e-?\d+)?)\]", body)]
    return rows


def derive(meas, shape):
    """Rows sorted by descending length, each [(seq, eff)...], extended below the shortest
    measured length by the reference table's shape."""
    out = {}
    for name in ROWS:
        pts = {k: statistics.median(v) for k, v in meas[name].items()}
        if not pts:
            continue
        if name.endswith("_window"):
            out[name] = [(w, round(e, 3)) for w, e in sorted(pts.items(), reverse=True)]
            continue
        lo = min(pts)
        ref = dict(shape.get(name, []))
        rows = sorted(pts.items(), reverse=True)
        if lo in ref:
            rows += [(s, pts[lo] * e / ref[lo]) for s, e in sorted(ref.items(), reverse=True) if s < lo]
        elif lo > 0:
            rows.append((0, pts[lo]))
        out[name] = [(s, round(e, 3)) for s, e in rows]
    return out


def fmt(rows):
    return "[" + ", ".join(f"[{s}, {e:.3f}]" if e >= 0.1 else f"[{s}, {e:.4g}]"
                           for s, e in rows) + "]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, action="append",
                    help="cuDNN frontend SDPA benchmark results CSV (repeatable)")
    ap.add_argument("--peak", required=True, type=float, help="dense 16-bit peak [TFLOP/s]")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--backend", default="cudnn")
    ap.add_argument("--shape-from", default="configs/systems/dgx-h100.yaml",
                    help="system YAML whose table shapes the rows below the shortest measured length")
    ap.add_argument("--fp8-peak", type=float,
                    help="dense FP8 peak [TFLOP/s]: also derive the fp8 and mxfp8 rows")
    ap.add_argument("--check", metavar="SYSTEM_YAML", help="compare with this file's rows")
    a = ap.parse_args()
    if not math.isfinite(a.peak) or a.peak <= 0:
        fail(f"field '--peak': expected a finite positive TFLOP/s, got {a.peak}")
    try:
        shape = table_rows(open(a.shape_from).read(), a.shape_from)
    except OSError as e:
        fail(f"{a.shape_from}: {e.strerror}")
    meas = {r: {} for r in ROWS}
    for path in a.csv:
        measured(path, a.dtype, a.backend, a.peak, meas)
    if not any(meas.values()):
        fail(f"{', '.join(a.csv)}: no {a.backend} {a.dtype} rows")
    got = derive(meas, shape)
    if a.fp8_peak is not None:
        if not math.isfinite(a.fp8_peak) or a.fp8_peak <= 0:
            fail(f"field '--fp8-peak': expected a finite positive TFLOP/s, got {a.fp8_peak}")
        for dtype, (fwd, bwd) in FP8_ROWS.items():
            m8 = {r: {} for r in ROWS}
            for path in a.csv:
                measured(path, dtype, a.backend, a.fp8_peak, m8, window_by_seq=True)
            d8 = derive({"forward": m8["forward"], "backward": m8["backward"],
                         **{r: {} for r in ROWS[2:]}}, shape)
            if "forward" not in d8 or "backward" not in d8:
                continue  # Hopper has no MXFP8: the recipes measured, at least one (below)
            got[fwd], got[bwd] = d8["forward"], d8["backward"]
            for p in ("forward", "backward"):
                pts = {k: statistics.median(v) for k, v in m8[p + "_window"].items()}
                if pts:
                    got[f"{p}_window_{dtype}"] = by_seq(pts)
        if not any(r in got for pair in FP8_ROWS.values() for r in pair):
            fail(f"{', '.join(a.csv)}: no causal {a.backend} fp8 or mxfp8 forward and backward rows")
    csvs = " ".join(a.csv)
    if not a.check:
        below = f"; below {min(meas['forward'])} tokens shaped by {a.shape_from}" if meas["forward"] else ""
        print(f"  # from {csvs} ({a.backend} {a.dtype}, TFLOP/s / {a.peak:g}){below}")
        print("  fused_attention_efficiency:")
        for name, rows in got.items():
            print(f"    {name}: {fmt(rows)}")
        return
    try:
        have = table_rows(open(a.check).read(), a.check)
    except OSError as e:
        fail(f"{a.check}: {e.strerror}")
    bad = [n for n in got if n not in have or len(have[n]) != len(got[n]) or any(
        s1 != s2 or abs(e1 - e2) > min(5e-4, 1e-3 * e2) for (s1, e1), (s2, e2) in zip(have[n], got[n]))]
    for n in bad:
        print(f"{a.check}: fused_attention_efficiency.{n}: has {fmt(have.get(n, []))}, "
              f"{csvs} gives {fmt(got[n])}", file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"{a.check}: fused_attention_efficiency.{{{','.join(got)}}} match {csvs}")


if __name__ == "__main__":
    main()
