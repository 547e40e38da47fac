/// \file architecture.hpp
/// Step 1 of the estimator (DESIGN.md, "The estimator as it grows"): a model config becomes the
/// operations of one transformer layer and of the model's ends (embedding, final norm, logits,
/// loss), layout-free. Computed once per model; steps 2-4 (estimator.cpp: shards and messages,
/// pricing, schedule and memory) divide and price them per layout.
///
/// Notation (Narayanan et al. 2021; Megatron-Core): l layers, h hidden, a query heads, g key/value
/// heads (GQA, Ainslie et al. 2023; g = a is multi-head, g = 1 multi-query), d = h / a head
/// dimension, f MLP inner size, s sequence, V vocabulary. Sizes are per token: a GEMM here is
/// y[T x n] = x[T x k] W[k x n] for the T tokens a rank holds.
#pragma once

#include "scalefit/core/model.hpp"

#include <array>

namespace scalefit::estimator {

/// How tensor parallelism divides a linear layer (Megatron-LM, Shoeybi et al. 2019, Sec. 3):
/// column-parallel layers split n (QKV, MLP up/gate), row-parallel layers split k (attention
/// output projection, MLP down); replicated layers are whole on every TP rank and run on the
/// rank's own tokens (MLA's down projections: Megatron-Core's TELinear with parallel_mode
/// "duplicated", T / t tokens with sequence parallelism, all T without).
enum class TpSplit { column, row, replicated };

/// One linear layer of a transformer block: W is k x n before tensor parallelism.
struct LinearOp {
  const char *what = ""; ///< "QKV", "attention projection", "MLP up", "MLP down", ...
  double n = 0;          ///< output features [elements]
  double k = 0;          ///< input features [elements]
  TpSplit split = TpSplit::column;
  bool input_from_norm = false; ///< its input is a norm's output (TE fuses norm and FP8 cast)
  bool mlp = false; ///< the dense MLP's (an MoE model's MoE blocks replace it: weighted 1 - phi)
  bool mla_up = false; ///< MLA's q or kv up projection (recompute module "mla_up_proj")
};

/// Maximum linear layers of one block (MLA: q down, q up, kv down, kv up, projection, MLP up
/// and down).
inline constexpr int kMaxLinear = 8;

/// Where an element-wise kernel's tensors live: the hidden region (s b h, divided by t only with
/// sequence parallelism) or the TP-split region (heads, MLP inner: divided by t).
enum class Region { hidden, inner };

/// One memory-bound (element-wise) kernel of a block: bytes per token moved forward and backward.
/// A byte count of 0 means no kernel that way.
struct ElementwiseOp {
  const char *what = "";
  double fwd_bytes = 0; ///< [B per token]
  double bwd_bytes = 0; ///< [B per token]
  Region region = Region::hidden;
  /// [B per token] of fwd_bytes / bwd_bytes that run inside the expert GEMMs' epilogues under
  /// Strategy::moe_fused_grouped_mlp (the routed experts' activation, fc2's input cast, fc1's
  /// output-gradient cast); 0 for the other ops.
  double fused_mlp_fwd = 0, fused_mlp_bwd = 0;
};

/// Maximum element-wise kernels of one block.
inline constexpr int kMaxElementwise = 14;

/// Activation bytes one block keeps for backward, per token, by region (Korthikanti et al. 2022,
/// Sec. 4.1 derivation generalized to GQA, gated MLPs, no-dropout models and FP8; docs/estimator.md
/// "Activation memory"). For GPT (g = a, f = 4h, GeLU, dropout, bf16) hidden = 10 h, inner = 24 h,
/// core = 5 a s: Korthikanti's Table 2 row s b h (34 + 5 a s / h).
struct BlockActivations {
  double hidden = 0;      ///< [B/token] divided by t only with SP: norm inputs, norm outputs
                          ///< feeding QKV and MLP up, dropout masks
  double inner = 0;       ///< [B/token] divided by t: q, k, v, attention output, MLP inner
  double core_per_s = 0;  ///< [B/token per sequence token] unfused attention's s x s tensors
                          ///< (softmax, dropout mask and output): 5 a (2 a without dropout)
  double flash_stats = 0; ///< [B/token] fused attention's fp32 log-sum-exp per head (4 a)
  /// [B/token, divided by t] MoE blocks' routed-token activations (permuted input, expert up
  /// output, down input for each of k routes), MoE-fraction weighted; times the layout's expert
  /// load (MoeOps::load: imbalance, capacity, padding).
  double routed = 0;
  // What Megatron-Core's selective --recompute-modules drop of the above (same units and
  // divisions as the term each is part of):
  double norms = 0;      ///< [hidden] outputs of norms that are modules of their own (MLA's
                         ///< input norm, the MoE blocks' pre-MLP norm): "layernorm"
  double mlp_hidden = 0; ///< [hidden] the dense MLP's saved norm output: "mlp"
  double mlp_inner = 0;  ///< [inner] the dense MLP's inner activations: "mlp"
  double mla_up = 0;     ///< [inner] MLA's up-projected q, k, v: "mla_up_proj"
  double shared = 0;     ///< [inner] the shared experts' inner activations: "shared_experts"
  double moe_act = 0;    ///< [routed] the routed experts' activation output: "moe_act"
  double moe_inner = 0;  ///< [inner] the MoE layer's own (shared experts, router logits): with
                         ///< all of `routed`, what "moe" drops (the layer keeps its input)
};

/// A mixture-of-experts MLP (Megatron-Core MoE layer): a router GEMM h x E and top-k, E experts
/// of gated (or not) MLPs of inner size f_e, shared experts every token passes through. Sizes per
/// MoE block.
struct MoeOps {
  double fraction = 0;    ///< MoE blocks / blocks (0: dense model)
  double experts = 0;     ///< E
  double top_k = 0;       ///< k
  double f_e = 0;         ///< expert inner size
  double up_n = 0;        ///< expert MLP up width (2 f_e gated)
  double f_shared = 0;    ///< shared experts' inner size in all (shared_experts x f_e)
  double expert_params = 0; ///< E experts' weights
  double router_params = 0; ///< h E
  double capacity_factor = 0; ///< ModelConfig::capacity_factor (0: dropless)
  /// [B per token of the rank, 16-bit elements] the block's memory-bound forward (permute,
  /// experts' activation, router softmax), MoE-fraction weighted: the elementwise op
  /// "MoE permute, activation, router" forward, run again by the "moe" recompute module
  double mem_fwd = 0;
  bool pad = false;           ///< ModelConfig::pad_to_capacity
  /// Tokens the busiest expert rank processes over the balanced share k T / E per expert, for a
  /// router load `imbalance` (Strategy::moe_imbalance): dropless takes all of them (imbalance);
  /// a capacity factor c drops those above c (min(imbalance, c)); padding to capacity runs
  /// exactly c (Megatron-Core's token dispatcher: capacity = ceil(c k T / E), moe_utils.py
  /// get_capacity; the rounding up is left out).
  double load(double imbalance) const noexcept {
    if (capacity_factor <= 0)
      return imbalance;
    if (pad)
      return capacity_factor;
    return imbalance < capacity_factor ? imbalance : capacity_factor;
  }
};

/// Multi-head latent attention sizes (DeepSeek-V2 Sec. 2.1.2-2.1.3): per token a query latent
/// c^Q = W^DQ h (q_lora wide; none when q_lora is 0, q = W^Q h), a key/value latent
/// c^KV = W^DKV h (kv_lora wide) and the shared RoPE key k^R = W^KR h (rope wide), both latents
/// RMS-normed; per head q = [q^C; q^R] (nope + rope), k = [k^C; k^R], v (v_dim); output
/// projection from a v_dim to h.
struct MlaOps {
  double q_lora = 0, kv_lora = 0, rope = 0, nope = 0, v_dim = 0; ///< 0 when not MLA
};

/// The operations of one transformer block and of the model's ends, layout-free.
struct ModelOps {
  /// QKV (MLA: q down, q up or q, kv down, kv up), projection, MLP up, MLP down, in order: the
  /// attention's first, its projection second to last before the MLP's two.
  std::array<LinearOp, kMaxLinear> linear{};
  int n_linear = 0;                                   ///< used entries
  std::array<ElementwiseOp, kMaxElementwise> elementwise{}; ///< norms, residuals, activation, RoPE
  int n_elementwise = 0;                              ///< used entries
  double q_heads = 0, kv_heads = 0;                   ///< a, g
  double head_dim = 0;   ///< d of queries and keys (MLA: nope + rope)
  double v_head_dim = 0; ///< d of values (= head_dim except MLA)
  MlaOps mla;            ///< MLA sizes (all 0 otherwise)
  BlockActivations act;                               ///< bf16 activations kept per block
  BlockActivations act_fp8;                           ///< the same with FP8 linear inputs
  double linear_flops_per_token = 0; ///< 2 * sum(n k) of the linear layers (forward)
  /// The average block's attention-core work relative to full causal attention: 1, or with
  /// sliding windows (1 - w) + w nz_W / nz_causal for the windowed fraction w of the blocks, nz
  /// the non-zeros of the mask (nz_causal = s (s + 1) / 2; nz_W = W (W + 1) / 2 + (s - W)(W + 1)
  /// with each query seeing itself and W keys before it, Megatron-Core's window (W, 0)).
  double attention_work = 1;
  /// The part of attention_work the windowed blocks contribute, w nz_W / nz_causal (0 without
  /// windows): priced at the window's kernel rate (ComputePricer::window_attention_s).
  double window_attention_work = 0;
  double block_params_split = 0;     ///< parameters of a block divided by TP (weights, biases)
  double block_params_replicated = 0; ///< parameters of a block every TP rank holds (norms,
                                      ///< row-parallel biases, MLA down projections)
  double block_matrix_params = 0;     ///< weight-matrix parameters of a block divided by TP
                                      ///< (FP8 copies), experts excluded
  double block_matrix_params_replicated = 0; ///< weight matrices every TP rank holds whole
  /// Expert parameters of an average block (MoE fraction x E experts): sharded over EP x ETP.
  double block_expert_params = 0;
  MoeOps moe;                         ///< the MoE MLP (moe.fraction 0 for dense models)
  double norm_params = 0;             ///< one norm's parameters (h or 2h)
  double embedding_params = 0;        ///< V h (+ s h learned positions)
  double head_params = 0;             ///< V h when untied, else 0
  double vocabulary = 0;              ///< V as configured (unpadded)
  /// One multi-token prediction module (ModelConfig::mtp_layers; DeepSeek-V3 Sec. 2.2; all 0
  /// without MTP). Its block is an MoE block when the model has experts (every field of this
  /// struct is exact for that block; the schedule prices its time as one average block).
  struct Mtp {
    double block_linear_flops = 0;  ///< 2 * sum(n k) of the block's linears per token (forward)
    double block_params = 0;        ///< the block's parameters (all experts)
    double block_active_params = 0; ///< the same with k of E routed experts
    /// The module's own parameters: the 2h x h projection and three norms (enorm, hnorm, its
    /// final norm); the embedding and output head are the model's, shared.
    double extra_params = 0;
  } mtp;
};

/// Builds the operations of `m` (validated). Sources per field in architecture.cpp. For an MoE
/// model the block's MLP fields describe its dense blocks and `moe` its MoE blocks; the
/// parameter, FLOP and activation fields are of an average block (MoE fraction weighted).
ModelOps describe_model(const ModelConfig &m);

/// Parameters of the model, as its published count has them (unpadded vocabulary; all experts):
/// l blocks
/// (QKV h (h + 2 g d), projection h^2, MLP 2 h f or 3 h f gated, biases when configured, two
/// norms of h (RMSNorm) or 2h (LayerNorm)), final norm, embedding V h, learned positions s h,
/// untied LM head V h. For GPT (g = a, f = 4h, biases, LayerNorm, tied) this is Narayanan et al.
/// 2021 Eq. 2 + the final LayerNorm: 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) + 2h.
double parameter_count(const ModelConfig &m);

/// Vocabulary as Megatron pads it: the smallest multiple of divisible_by * tp at or above V
/// (megatron/training/tokenizer `_vocab_size_with_padding`, make-vocab-size-divisible-by 128);
/// `divisible_by` 1 leaves V as is (PyTorch/Hugging Face models).
double padded_vocabulary(double V, int divisible_by, int tp);

/// FLOP conventions for an iteration.
struct IterationFlops {
  /// Megatron-LM's `num_floating_point_operations` (megatron/training/training.py): every GEMM
  /// 3 times (forward, data and weight gradient), attention counted non-causal (4 s h per token
  /// and layer forward), GQA and gated MLPs as they are, logits 2 h V_padded per token; no
  /// recomputation. What MFU and the published Megatron/NeMo TFLOP/s figures count.
  double megatron = 0;
  /// The same with causal attention counted as half (FlashAttention's convention, PaLM's MFU
  /// appendix counts the full s^2 instead; say which when comparing).
  double causal = 0;
  /// FLOPs executed with recomputation: full adds a forward of the blocks, selective the
  /// attention core's forward (Korthikanti et al. 2022), attention counted as `megatron` does.
  double hardware = 0;
};

/// FLOPs of one iteration of `batch` samples [FLOP]. \param vocab the (padded) vocabulary the
/// logits GEMM runs at; \param recompute_layers_fraction the fraction of blocks fully recomputed
/// (1 for full recompute of every block).
IterationFlops iteration_flops(const ModelConfig &m, double batch, double vocab, bool full,
                               bool selective, double recompute_layers_fraction = 1.0);
/// The same from the model's operations (describe_model(m)), without rebuilding them.
IterationFlops iteration_flops(const ModelOps &o, const ModelConfig &m, double batch,
                               double vocab, bool full, bool selective,
                               double recompute_layers_fraction = 1.0) noexcept;

} // namespace scalefit::estimator

namespace scalefit::estimator {
/// Parameters a token passes through (MoE: k of the E experts, the shared ones, the router;
/// equals parameter_count for dense models).
double active_parameter_count(const ModelConfig &m);
} // namespace scalefit::estimator
