/// \file shapes.hpp
/// The GEMMs (and the softmax) one transformer layer runs per micro-batch under tensor parallelism,
/// in the Megatron-LM layout of Narayanan et al. 2021 ("Efficient Large-Scale Language Model
/// Training on GPU Clusters Using Megatron-LM", SC'21), whose forward count is
/// 24 b s h^2 + 4 b s^2 h FLOPs per layer (eq. 2's per-layer term, with ffn = 4h) plus
/// 2 b s h V for the logits, all divided by the TP degree t on each GPU.
///
/// Conventions: every GEMM is row-major C[m x n] = A[m x k] * B[k x n], `batch` independent
/// products; FLOPs = 2 m n k batch (a multiply-add counts 2). Tokens per micro-batch M = b s.
/// For a linear Y[M x N] = X[M x K] W[K x N] the backward pass runs dgrad dX = dY W^T
/// (m=M, n=K, k=N) and wgrad dW = X^T dY (m=K, n=N, k=M). The transposed operand layouts of the
/// backward GEMMs are not modelled: the engines time the same m, n, k without transposes.
#pragma once

#include "scalefit/core/model.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::kernels {

/// Forward or backward pass.
enum class Pass { fwd, bwd };
/// "fwd" / "bwd".
std::string_view pass_name(Pass p);

/// What an entry of the shape list runs.
enum class KernelKind {
  gemm,         ///< one GEMM (batch = 1)
  batched_gemm, ///< `batch` independent GEMMs of the same shape (strided)
  softmax,      ///< row softmax over `batch` matrices of m rows x n columns (k = 0)
  attention,    ///< fused causal attention of `batch` heads: m = n = s, k = d (attention.hpp)
  /// `batch` GEMMs (groups) sharing n (and k, or m) whose token dimension may differ per group:
  /// an MoE layer's experts, each over the tokens routed to it (Megatron-Core's GroupedMLP).
  /// Equal groups run as a strided batch; unequal ones (group_tokens) as GroupedGemmApi says.
  grouped_gemm,
};

/// How the cublas engine runs a grouped_gemm whose groups differ (an imbalanced MoE layer).
enum class GroupedGemmApi {
  /// One cublasGemmEx per group, in order on one stream: as Transformer Engine's GroupedLinear
  /// (Megatron-Core's TEGroupedMLP) runs its experts, one cuBLAS GEMM per local expert
  /// (TE spreads them over up to 4 streams; one stream is its upper bound for a few large
  /// experts). The default.
  per_expert,
  /// One cublasGemmGroupedBatchedEx call (cuBLAS 12.5+). On one H200 (cuBLAS 13.1, bf16,
  /// Mixtral 8x7B at EP 4, groups of 6144 and 4096 tokens) it ran 3.7x the balanced strided
  /// batch of 2 x 4096 where per-expert GEMMs run about 1.25x: it measures that API, not what
  /// the frameworks run.
  cublas_grouped,
};
/// "per-expert", "cublas-grouped".
std::string_view grouped_gemm_api_name(GroupedGemmApi a);
/// "gemm", "batched_gemm", "softmax", "attention", "grouped_gemm".
std::string_view kernel_kind_name(KernelKind k);

/// Which blocks of a model a per-layer kernel belongs to: every block (dense models, attention),
/// the dense blocks of an MoE model (its first_dense_layers, or the blocks between MoE ones), or
/// its MoE blocks.
enum class Blocks { all, dense, moe };
/// "all", "dense", "moe".
std::string_view blocks_name(Blocks b);

/// One GEMM of a grouped GEMM: C[m x n] = A[m x k] B[k x n] [elements].
struct GemmDims {
  std::int64_t m = 0, n = 0, k = 0;
};

/// One kernel of a layer's step.
struct KernelShape {
  std::string name;                   ///< "qkv.fwd", "attn_score.dgrad", "softmax.fwd", ...
  KernelKind kind = KernelKind::gemm; ///< what runs
  Pass pass = Pass::fwd;              ///< forward or backward
  std::int64_t m = 0;                 ///< rows of C (softmax: rows per matrix)
  std::int64_t n = 0;                 ///< columns of C (softmax: columns)
  std::int64_t k = 0;                 ///< inner dimension (softmax: 0)
  std::int64_t batch = 1;             ///< independent products (softmax: matrices)
  bool per_layer = true;              ///< false for the logits, which run once per model
  bool causal = false;                ///< attention: causal mask (key j > query i hidden)
  Blocks blocks = Blocks::all;        ///< the blocks it runs in (MoE models)
  /// grouped_gemm: tokens of each of the `batch` groups when they differ (the router's load
  /// imbalance); empty when every group has the balanced count. The token dimension is m
  /// (forward, dgrad) or, for a weight gradient, k (tokens_in_k). m (or k) holds the balanced
  /// count, the mean over groups rounded down.
  std::vector<std::int64_t> group_tokens;
  bool tokens_in_k = false; ///< grouped_gemm: the tokens are the inner dimension (wgrad)
  /// grouped_gemm with unequal groups: how the cublas engine runs them (the cpu engine computes
  /// each group in turn whatever this says).
  GroupedGemmApi grouped_api = GroupedGemmApi::per_expert;
  /// The GEMMs of a grouped_gemm (one per group, group_tokens applied); of any other GEMM kind,
  /// `batch` copies of (m, n, k).
  std::vector<GemmDims> groups() const;
  /// FLOPs the kernel executes [FLOP]. GEMMs: 2 m n k batch (grouped: the sum over groups). Softmax: 0 (not counted by
  /// Narayanan et al.). Fused attention forward: two s x s x d products per head, 4 s^2 d batch
  /// (= 4 b s^2 h / t), over the unmasked (i, j) pairs only when causal: 4 d batch s (s + 1) / 2,
  /// about half (FlashAttention's benchmarks halve it likewise). Backward: 2.5x the forward (five
  /// products: the recomputed S, dV, dP, dQ, dK; Dao 2023, FlashAttention-2, section 4.1
  /// benchmark convention).
  double flops() const;
  /// The model FLOPs Narayanan et al. count for the same work (MFU convention) [FLOP]: flops()
  /// for GEMMs; for attention 4 s^2 d batch forward and twice that backward, never halved for the
  /// causal mask and without the recomputation, so a fused layer's per-layer sum equals the
  /// unfused layer's (24 b s h^2 + 4 b s^2 h forward).
  double model_flops() const;
};


/// How an MoE layer's experts are laid out and loaded on the measured GPU.
struct MoeLayout {
  int ep = 1; ///< expert-parallel degree: the GPU holds E / ep experts (ep divides E)
  /// The busiest local expert's tokens over the balanced count (>= 1; Megatron-Core's dropless
  /// router under imbalance). 1: every expert gets the balanced tokens (a strided batch); above 1
  /// the first local expert gets round(imbalance x balanced) tokens (at most all the GPU's routed
  /// tokens) and the others the balanced count, so the groups differ (a grouped GEMM). With E / ep
  /// = 1 this is the estimator's MoeOps::load (the busiest rank's experts scaled).
  double imbalance = 1.0;
  /// How unequal expert groups run on the cublas engine (--grouped-gemm).
  GroupedGemmApi grouped_api = GroupedGemmApi::per_expert;
};

/// Tokens each expert receives when balanced, for a GPU of TP rank t (its b s / t tokens, as
/// Megatron-Core's sequence-parallel MoE layer dispatches them) in an EP group of `ep`: every
/// EP rank sends k routes per token, E experts share them:
/// k (b s / t) ep / E, rounded down (at least 1). A capacity factor c with padding runs exactly
/// ceil(c x that); without padding it caps the imbalanced expert at c x that.
std::int64_t expert_tokens(const ModelConfig &model, int tp, int micro_batch, int ep);

/// The kernels of one transformer layer (and the logits) for one micro-batch of `micro_batch`
/// samples on one GPU of a TP group of `tp` (Megatron-LM column/row-parallel split):
///   qkv          m=bs, n=3h/t,     k=h      (column parallel; GQA with g key/value heads and
///                head size d: n = (a/t + 2 ceil(g/t)) d, the k/v heads replicated when t > g)
///   attn_score   batch=b a/t of m=s, n=s, k=h/a          (Q K^T)
///   softmax      batch=b a/t of s x s                    (forward only)
///   attn_context batch=b a/t of m=s, n=h/a, k=s          (P V)
///   attn_proj    m=bs, n=h,        k=h/t    (row parallel; a d / t when d != h / a)
///   mlp_up       m=bs, n=ffn/t,    k=h      (column parallel)
///   mlp_down     m=bs, n=h,        k=ffn/t  (row parallel)
///   logits       m=bs, n=ceil(V/t), k=h     (per_layer = false; only when include_logits)
/// each GEMM as ".fwd" then, in backward order, ".dgrad" and ".wgrad" (attention: dgrad is the
/// gradient of the first operand, wgrad of the second; both m=s, n, k as the chain rule gives).
/// With `attention` fused (core/model.hpp: one causal flash kernel per pass), attn_score, softmax and attn_context (forward and backward) are
/// replaced by "attention.fwd" and "attention.bwd" (kind attention, batch = b a / t, m = n = s,
/// k = h / a, causal).
/// Gated MLPs (swiglu, geglu) run mlp_up as the fused gate+up GEMM of n = 2 ffn / t.
/// Mixture of experts (model.moe()): the MLP of an MoE block is (Megatron-Core's MoE layer):
///   router        m=bs/t, n=E, k=h                        (gemm, every rank's tokens)
///   expert_up     E/ep groups of m=r, n=up/1, k=h         (grouped_gemm; up = 2 f_e gated)
///   expert_down   E/ep groups of m=r, n=h, k=f_e          (grouped_gemm)
///   shared_up, shared_down  the shared experts as a TP-split dense MLP of shared x f_e
/// with r = expert_tokens() (the expert GEMMs are whole on the GPU: expert TP 1), backward as
/// the other linears (the wgrad of a grouped GEMM has the tokens as k). Those kernels have
/// blocks = moe; when the model also has dense blocks (first_dense_layers, moe_layer_freq > 1)
/// its dense MLP (mlp_up, mlp_down) follows with blocks = dense; attention kernels are
/// blocks = all. Multi-head latent attention (model.mla(); DeepSeek-V2 arXiv 2405.04434 Eq.
/// 9-19, Megatron-Core MLASelfAttention) replaces qkv with
///   q_down  m=bs, n=d_c', k=h   and  q_up m=bs, n=a/t (d_h + d_h^R), k=d_c'  (or q: k=h)
///   kv_down m=bs, n=d_c + d_h^R, k=h      kv_up m=bs, n=a/t (d_h + d_v), k=d_c
/// (the down projections replicated on every TP rank, the up projections split over heads),
/// the attention core at d_qk = d_h + d_h^R for QK^T and d_v for AV (the fused kernel at d_qk
/// for both: an upper bound), and attn_proj with k = a d_v / t.
/// Sum of forward per-layer model_flops() * t = layer_forward_flops(model, b) exactly when t
/// divides h, a and ffn (both attention implementations; dense models, GPT-style attention;
/// not MLA, whose down projections are replicated).
/// \throws InputError (field "--tp" / "--micro-batch") when tp < 1, tp does not divide
/// heads or ffn, or micro_batch < 1; the model must have passed validate_model.
std::vector<KernelShape> transformer_gemms(const ModelConfig &model, int tp,
                                           int micro_batch, bool include_logits = true,
                                           Attention attention = Attention::unfused,
                                           const MoeLayout &moe = {});

/// Forward FLOPs of one whole layer (all t GPUs together) for b samples: 2bs(4h^2 + 2h ffn) +
/// 4bs^2h, which is Narayanan et al.'s 24bsh^2 + 4bs^2h when ffn = 4h; gated MLPs 2bs(4h^2 +
/// 3h ffn) + 4bs^2h [FLOP]. The dense MLP (an MoE model's dense blocks). MLA: 2bs (the five
/// projections' k n + MLP) + 2bs^2 a (d_h + d_h^R + d_v) (non-causal, as Megatron-LM counts).
double layer_forward_flops(const ModelConfig &model, int micro_batch);

/// Forward FLOPs of an MoE block's MLP per token routed balanced (all GPUs together): 2 h E
/// (router) + k 2 h (up + f_e) + 2 h (up_s + f_s) for the shared experts [FLOP per token];
/// 0 for dense models. Without the router term this is the estimator's per-token MoE FLOPs.
double moe_mlp_forward_flops_per_token(const ModelConfig &model);

/// Forward FLOPs of the logits GEMM (all t GPUs together): 2 b s h V [FLOP].
double logits_forward_flops(const ModelConfig &model, int micro_batch);

/// Shapes shrunk for quick runs: m, n, k each multiplied by `factor` and rounded to the nearest
/// integer (at least 1; k stays 0 for the softmax); batch kept. FLOPs shrink by about factor^3.
/// \throws InputError (field "--scale") unless 0 < factor <= 1.
std::vector<KernelShape> scale_shapes(std::vector<KernelShape> shapes, double factor);

} // namespace scalefit::kernels
