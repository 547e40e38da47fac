#!/usr/bin/env python3
"""Check the published-runs JSONL files: every line parses, ids are unique across files,
layout multiplies out, iteration_time_s matches the stated conversion within 0.5%, and a memory
printed in GB (1e9 B) matches its memory_gib within 0.1%."""
import glob, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def recompute(r):
    c = r["conversion"]
    p = r["published"]
    m = r["model"]
    if c.startswith("T = published"):
        return p.get("step_time_s", p.get("iteration_time_s"))
    if c.startswith("T = GBS*seq/(gpus*tokens_per_s_per_gpu)"):
        return r["global_batch"] * m["seq"] / (r["gpus"] * p["tokens_per_s_per_gpu"])
    if c.startswith("T = micro_batch*seq/tokens_per_s_per_gpu"):
        return r["micro_batch"] * m["seq"] / p["tokens_per_s_per_gpu"]
    if "NeMo llama2 model-FLOPs formula" in c:
        s, l, h, a, g, f, V = m["seq"], m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["ffn"], m["vocab"]
        F = s * l * h * h * (12 + 12 * g / a + 18 * f / h + 12 * s / h + 6 * V / (l * h))
        return r["global_batch"] * F / (r["gpus"] * p["tflops_per_gpu"] * 1e12)
    if "causal attention counted as half: F = seq*F_tok" in c:  # Megatron-MoE-ModelZoo long context
        s, l, h, a, d, g = m["seq"], m["layers"], m["hidden"], m["heads"], m["head_dim"], m["kv_heads"]
        k, fe, V = m["top_k"], m["moe_ffn"], m["vocab"]
        f_tok = 6 * (l * (h * (a * d + 2 * g * d) + a * d * h + 3 * k * h * fe) + h * V)
        F = s * f_tok + 6 * s * s * a * d * l
        return r["global_batch"] * F / (r["gpus"] * p["tflops_per_gpu"] * 1e12)
    if "Megatron model FLOPs 12*B*s*l*h^2" in c:
        B, s, l, h, V = r["global_batch"], m["seq"], m["layers"], m["hidden"], m["vocab"]
        F = 12 * B * s * l * h * h * (2 + s / h + 4 + V / (2 * l * h))  # as the shared file states (ffn=4h)
        return F / (r["gpus"] * p["tflops_per_gpu"] * 1e12)
    raise ValueError("unknown conversion: " + c[:60])


def main():
    ids = {}
    bad = 0
    for fn in sorted(glob.glob(os.path.join(HERE, "*.jsonl"))):
        n = 0
        for i, line in enumerate(open(fn), 1):
            try:
                r = json.loads(line)
            except Exception as e:
                print(f"{fn}:{i}: parse error {e}"); bad += 1; continue
            n += 1
            if r["id"] in ids:
                print(f"{fn}:{i}: duplicate id {r['id']} (also in {ids[r['id']]})"); bad += 1
            ids[r["id"]] = os.path.basename(fn)
            prod = r["tp"] * r["pp"] * r["cp"] * r["dp"]
            if prod != r["gpus"]:
                print(f"{fn}:{i}: tp*pp*cp*dp={prod} != gpus={r['gpus']}"); bad += 1
            pub = r.get("published", {})
            if "peak_allocated_gb" in pub:  # torch's GB (1e9 B) as printed, memory_gib its GiB
                g = pub["peak_allocated_gb"] * 1e9 / 2**30
                if abs(g - pub["memory_gib"]) / g > 0.001:
                    print(f"{fn}:{i}: {r['id']}: memory_gib {pub['memory_gib']} vs {g:.4f}"); bad += 1
            if r.get("no_time"):  # memory-only record: no time to recompute
                continue
            t = recompute(r)
            if abs(t - r["iteration_time_s"]) / r["iteration_time_s"] > 0.005:
                print(f"{fn}:{i}: {r['id']}: iteration_time_s {r['iteration_time_s']} vs recomputed {t:.4f}"); bad += 1
        print(f"{os.path.basename(fn)}: {n} runs")
    print("OK" if not bad else f"{bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
