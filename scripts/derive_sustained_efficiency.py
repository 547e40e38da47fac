#!/usr/bin/env python3
"""Derive one system constant from ONE published training step, as scripts/derive_step_efficiency.py
derives the A100 tables: bisect `device.<key>` of a system YAML until `scalefit validate` estimates
the chosen run's published iteration time, and print the value. Every other run of the same
sources is then predicted out of sample with it.

Usage:
  scripts/derive_sustained_efficiency.py --scalefit build/bin/scalefit \
      --runs tests/data/published-runs/dgxc-benchmarking-v24.11.1-h100.jsonl \
      --id dgxc-v24.11.1-llama3.1-8b-bf16-8g --key sustained_efficiency

key: sustained_efficiency (every compute rate), fp8_relative_efficiency (FP8 GEMMs),
mxfp8_relative_efficiency (an MXFP8 step's FP8 GEMMs relative to per-tensor FP8's: derive it from
an FP8-MX run whose FP8-CS twin the sustained efficiency came from) or overlap_efficiency (the
hidden fraction of overlapped collectives). The system
file is the run's own `system`; the value found is printed, not written: put it in the YAML with
this command as its source.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def estimate(scalefit, root, runs, run_id):
    out = subprocess.run([scalefit, "validate", runs, "--root", root, "--json"], check=True,
                         capture_output=True, text=True).stdout
    for r in json.loads(out):
        if r["id"] == run_id:
            if "skipped" in r:
                sys.exit(f"run {run_id} skipped: {r['skipped']}")
            return r["estimated_s"], r["published_s"]
    sys.exit(f"no run {run_id} in {runs}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scalefit", default="build/bin/scalefit")
    ap.add_argument("--runs", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--key", required=True,
                    choices=["sustained_efficiency", "fp8_relative_efficiency", "mxfp8_relative_efficiency",
                             "overlap_efficiency"])
    ap.add_argument("--root", default=".")
    a = ap.parse_args()
    run = next((json.loads(l) for l in open(a.runs) if json.loads(l)["id"] == a.id), None)
    if run is None:
        sys.exit(f"no run {a.id} in {a.runs}")
    if a.key == "sustained_efficiency":
        # `scalefit validate --calibrate-on` runs the same bisection (published.hpp
        # calibrate_sustained); the other keys are not of the device's sustained rate.
        out = subprocess.run([a.scalefit, "validate", a.runs, "--root", a.root, "--json",
                              "--calibrate-on", a.id], check=True, capture_output=True,
                             text=True).stdout
        r = next(r for r in json.loads(out) if r["id"] == a.id)
        print(f"{a.key}: {r['calibrated_sustained_efficiency']:.4f}   # {a.id}: estimated "
              f"{r['estimated_s']:.4f} s, published {r['published_s']:.4f} s")
        return
    system = run["system"]
    text = open(os.path.join(a.root, system)).read()
    tmp = tempfile.mkdtemp(prefix="sf_derive_")
    try:
        os.makedirs(os.path.join(tmp, os.path.dirname(system)))
        pattern = re.compile(r"^  " + a.key + r":.*\n", re.M)

        def with_value(v):
            body = pattern.sub("", text)
            if a.key == "overlap_efficiency":  # communication section
                body = body.replace("\n  intra:", f"\n  {a.key}: {v:.6f}\n  intra:", 1)
            else:
                body = body.replace("\n  kernel_launch_us:", f"\n  {a.key}: {v:.6f}\n  kernel_launch_us:", 1)
            with open(os.path.join(tmp, system), "w") as f:
                f.write(body)
            return estimate(a.scalefit, tmp, a.runs, a.id)

        lo, hi = (0.0, 1.0) if a.key == "overlap_efficiency" else (0.05, 1.0)
        for _ in range(40):  # time falls as the efficiency rises
            mid = (lo + hi) / 2
            est, pub = with_value(mid)
            lo, hi = (mid, hi) if est > pub else (lo, mid)
        est, pub = with_value((lo + hi) / 2)
        print(f"{a.key}: {(lo + hi) / 2:.4f}   # {a.id}: estimated {est:.4f} s, published {pub:.4f} s")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
