#!/usr/bin/env python3
"""Price Megatron-LM's measured MoE layers with `scalefit estimate`, out of sample.

Megatron-LM's MoE layer performance test (tests/functional_tests/test_cases/common/moe_perf, copied
to tests/data/moe-layers/ with its provenance in that README) times ONE MoELayer on 8 H100s: 4096
tokens per rank, TP 1, EP 8, force-balanced routing, the router, the token dispatch (all-to-all,
DeepEP or HybridEP), the experts' grouped GEMMs, the combine and the shared expert, forward and
backward (CUDA events, mean of 20 iterations), in bf16 and in FP8 with the blockwise recipe.

The estimator prices whole transformer blocks, so a layer is priced as the difference of two
one-block estimates on the same layout: the proxy model's block (attention + MoE layer) minus its
dense twin (the same block with a dense MLP 8 wide: the attention, the norms and the residual
adds cancel; the twin's MLP costs microseconds), plus the EP all-to-alls the MoE block's estimate
lists (dispatch and combine, forward and backward: exposed, as the isolated layer runs them).
What is compared is forward + backward time of one layer [ms]. Nothing is fitted: the system file
(dgx-h100.yaml) and its constants are the shipped ones, derived from other runs.

Usage:
  scripts/validate_moe_layers.py [--scalefit build/bin/scalefit] [--data tests/data/moe-layers]
      [--system configs/systems/dgx-h100.yaml] [--bound-bf16-alltoall F] [--bound-any F] [--json]

--bound-bf16-alltoall F / --bound-any F: exit 1 when a bf16 all-to-all layer's |error| (or any
layer's) exceeds the fraction F (tests/CMakeLists.txt holds the recorded errors). Bad input (a
missing file, malformed JSON, a case name not of the form MODEL_DISPATCHER_tp1ep8_PRECISION, a
non-finite or non-positive time) is exit 2 naming the file and field; a failing `scalefit
estimate` is exit 2 with its message.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

DISPATCHERS = {"a2a": "alltoall", "deepep": "deepep", "hybridep": "hybridep"}
MODELS = {"mixtral": "mixtral-proxy.yaml", "deepseek": "deepseek-proxy.yaml"}
MOE_KEYS = ("experts", "top_k", "moe_ffn", "shared_experts")


def fail(msg, code=2):
    print(f"validate_moe_layers: {msg}", file=sys.stderr)
    sys.exit(code)


def dense_twin(src, dst):
    """The proxy's block with its MoE layer replaced by a dense MLP 8 wide."""
    out = []
    for line in open(src):
        key = line.split(":", 1)[0].strip()
        if key in MOE_KEYS:
            continue
        if key == "ffn":
            line = "ffn: 8\n"
        elif key == "name":
            line = "name: dense-twin\n"
        out.append(line)
    with open(dst, "w") as f:
        f.writelines(out)


def estimate(args, model, ep, extra):
    """(layer GEMMs + memory-bound layer kernels [s], EP all-to-all time [s]) of one block."""
    cmd = [args.scalefit, "estimate", "--system", args.system, "--model", model, "--dp", "8",
           "--ep", str(ep), "--micro-batch", "1", "--global-batch", "8", "--zero", "1",
           "--json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    terms = {t["what"]: t["seconds"] for t in d["compute_terms"]}
    ep_s = sum(m["count"] * m["time_us"] * 1e-6 for m in d["messages"] if m["by"] == "EP")
    return terms["layer GEMMs"] + terms["memory-bound (layers)"], ep_s


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scalefit", default="build/bin/scalefit")
    ap.add_argument("--data", default="tests/data/moe-layers")
    ap.add_argument("--system", default="configs/systems/dgx-h100.yaml")
    ap.add_argument("--bound-bf16-alltoall", type=float)
    ap.add_argument("--bound-any", type=float)
    ap.add_argument("--json", action="store_true", help="rows as JSON instead of a table")
    args = ap.parse_args()
    path = os.path.join(args.data, "megatron-lm-moe-perf-h100.json")
    try:
        cases = json.load(open(path))
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}: {e.msg}")
    if not isinstance(cases, dict) or not cases:
        fail(f"{path}: expected an object of cases")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(cases):
            m = re.fullmatch(r"(mixtral|deepseek)_(a2a|deepep|hybridep)_tp1ep8_(bf16|fp8)", name)
            if not m:
                fail(f"{path}: field '{name}': not MODEL_DISPATCHER_tp1ep8_PRECISION")
            case = cases[name]
            times = []
            for f in ("forward_ms", "backward_ms"):
                v = case.get(f) if isinstance(case, dict) else None
                if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                    fail(f"{path}: field '{name}.{f}': expected a finite positive time, got {v!r}")
                times.append(v)
            model, disp, prec = m.groups()
            proxy = os.path.join(args.data, MODELS[model])
            twin = os.path.join(tmp, model + "-dense.yaml")
            if not os.path.exists(twin):
                dense_twin(proxy, twin)
            fp8 = ["--dtype", "fp8", "--fp8-recipe", "blockwise"] if prec == "fp8" else []
            moe, a2a = estimate(args, proxy, 8, fp8 + ["--moe-dispatcher", DISPATCHERS[disp]])
            dense, _ = estimate(args, twin, 1, fp8)
            est = (moe - dense + a2a) * 1e3
            meas = sum(times)
            rows.append({"case": name, "measured_ms": meas, "estimated_ms": est,
                         "compute_ms": (moe - dense) * 1e3, "alltoall_ms": a2a * 1e3,
                         "error": est / meas - 1})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'case (fwd + bwd)':30s} {'measured':>9s} {'estimated':>10s} "
              f"{'(compute':>9s} {'a2a)':>6s} {'error':>7s}")
        for r in rows:
            print(f"{r['case']:30s} {r['measured_ms']:7.2f} ms {r['estimated_ms']:7.2f} ms "
                  f"{r['compute_ms']:8.2f} {r['alltoall_ms']:6.2f} {100 * r['error']:+6.1f}%")
        for label, sel in (("bf16", "_bf16"), ("fp8 (blockwise)", "_fp8"), ("all", "")):
            errs = [abs(r["error"]) for r in rows if r["case"].endswith(sel)]
            print(f"{label}: mean |error| {100 * statistics.mean(errs):.1f}%, "
                  f"max {100 * max(errs):.1f}% ({len(errs)} layers)")
    bad = []
    if args.bound_bf16_alltoall is not None:
        bad += [r for r in rows if "_a2a_" in r["case"] and r["case"].endswith("_bf16")
                and abs(r["error"]) > args.bound_bf16_alltoall]
    if args.bound_any is not None:
        bad += [r for r in rows if abs(r["error"]) > args.bound_any]
    for r in bad:
        print(f"validate_moe_layers: {r['case']}: error {100 * r['error']:+.1f}% beyond its bound",
              file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
