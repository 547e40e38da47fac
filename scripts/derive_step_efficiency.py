#!/usr/bin/env python3
"""Derive a system YAML's gemm_efficiency / hbm_efficiency rows from ONE measured training step.

For a GPU with no kernel measurements at hand (scripts/derive_spec_efficiency.py needs
scalefit.kernels/1 records), the step tables are Calculon's upper-bound tables (Isaev et al.,
SC'23: GEMM 95/90/60/10 % from 128/16/1/0 GFLOP, HBM 90/75/60/30 % from 100/10/1/0 MB) scaled
by ONE factor k, the fraction of the upper bound this machine achieves. k is the value for which
`scalefit estimate` of the given step predicts the measured iteration time (bisection; the
estimate's time falls as k grows). One step fixes one number; every other published or measured
step is then out of sample. Prints k and the two YAML rows to paste into configs/systems/*.yaml.

Usage: scripts/derive_step_efficiency.py --system S.yaml --seconds T [--scalefit BIN] -- ESTIMATE_ARGS...
  ESTIMATE_ARGS: the step's `scalefit estimate` arguments (model, layout, recompute, ...).
Exit 2 when the measured time lies outside what k in (0, 1.05] can predict.
"""
import argparse, json, os, subprocess, sys, tempfile

CALCULON_GEMM = [(128, 0.95), (16, 0.90), (1, 0.60), (0, 0.10)]
CALCULON_HBM = [(100, 0.90), (10, 0.75), (1, 0.60), (0, 0.30)]

ap = argparse.ArgumentParser()
ap.add_argument("--system", required=True)
ap.add_argument("--seconds", type=float, required=True, help="measured iteration time [s]")
ap.add_argument("--scalefit", default=os.path.join(os.environ.get("BUILD_DIR", "build"), "bin", "scalefit"))
ap.add_argument("estimate_args", nargs=argparse.REMAINDER)
a = ap.parse_args()
args = [x for x in a.estimate_args if x != "--"]
if not (a.seconds > 0):
    sys.exit("derive_step_efficiency: --seconds must be positive")


def row(table, k):
    return "[" + ", ".join("[%g, %.3f]" % (t, e * k) for t, e in table) + "]"


def scaled_system(k):
    out = []
    for line in open(a.system):
        key = line.strip().split(":")[0]
        if key == "gemm_efficiency":
            line = line[: line.index("gemm_efficiency")] + "gemm_efficiency: " + row(CALCULON_GEMM, k) + "\n"
        elif key == "hbm_efficiency":
            line = line[: line.index("hbm_efficiency")] + "hbm_efficiency: " + row(CALCULON_HBM, k) + "\n"
        out.append(line)
    return "".join(out)


def iteration_s(k):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(scaled_system(k))
    try:
        r = subprocess.run([a.scalefit, "estimate", "--system", f.name, *args, "--json"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            sys.exit(r.returncode)
        return json.loads(r.stdout)["time_s"]["iteration"]
    finally:
        os.unlink(f.name)


lo, hi = 0.05, 1.05
if not iteration_s(hi) <= a.seconds <= iteration_s(lo):
    print("derive_step_efficiency: %.4g s is outside what k in [%.2f, %.2f] predicts" % (a.seconds, lo, hi),
          file=sys.stderr)
    sys.exit(2)
for _ in range(40):
    mid = (lo + hi) / 2
    if iteration_s(mid) > a.seconds:
        lo = mid
    else:
        hi = mid
k = round((lo + hi) / 2, 4)
print("k = %.4f of Calculon's tables (step: %.4g s measured, %.4g s predicted)" % (k, a.seconds, iteration_s(k)))
print("  gemm_efficiency: " + row(CALCULON_GEMM, k))
print("  hbm_efficiency: " + row(CALCULON_HBM, k))
