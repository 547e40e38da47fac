/// \file model.hpp
/// A transformer's shape (Narayanan et al. 2021 notation: l, h, a, s, V), its YAML loader and
/// command-line overrides. Read by kernels (the GEMM shapes of a layer), fitting and the
/// estimator.
#pragma once

#include "scalefit/core/collectives.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace scalefit {

/// How attention is computed. Unfused (Megatron 2022): scores (b a s s) written to HBM, softmax
/// and dropout as separate kernels, the s x s activations stored (Korthikanti et al. 2022,
/// Table 2, the 5 a s / h term). Fused (FlashAttention, Dao et al. 2022): one kernel, no s x s
/// matrix stored, only the output and the softmax statistics (one fp32 log-sum-exp per row and
/// head).
enum class Attention { fused, unfused };
/// "fused" or "unfused".
const char *attention_name(Attention a);
/// Parses "fused" / "unfused" (also "flash" for fused); nullopt otherwise.
std::optional<Attention> parse_attention(std::string_view name);

/// The MLP of a layer. gelu: fc1 (h -> f), GeLU, fc2 (f -> h) (GPT, Megatron 2022); relu2: the
/// same with squared ReLU (Nemotron-4, So et al. 2021 "Primer"); swiglu / geglu: gated, fc1 is
/// two h x f matrices (gate and up, fused as one h x 2f GEMM in Megatron-Core), act(gate) * up,
/// fc2 (f -> h) (Shazeer 2020 "GLU variants"; Llama, Mistral, Qwen).
enum class Mlp { gelu, relu2, swiglu, geglu };
/// "gelu", "relu2", "swiglu", "geglu".
const char *mlp_name(Mlp m);
/// Parses an Mlp name; nullopt otherwise.
std::optional<Mlp> parse_mlp(std::string_view name);
/// True for the gated MLPs (three h x f matrices).
inline bool mlp_gated(Mlp m) { return m == Mlp::swiglu || m == Mlp::geglu; }

/// Normalization: LayerNorm (gamma and beta, 2h parameters) or RMSNorm (gamma only, h; Zhang &
/// Sennrich 2019; Llama).
enum class Norm { layernorm, rmsnorm };
/// "layernorm" or "rmsnorm".
const char *norm_name(Norm n);
/// Parses a Norm name; nullopt otherwise.
std::optional<Norm> parse_norm(std::string_view name);

/// Position encoding: learned absolute embeddings (s x h parameters, GPT) or rotary (RoPE, Su et
/// al. 2021: no parameters, applied to q and k).
enum class Position { learned, rope };
/// "learned" or "rope".
const char *position_name(Position p);
/// Parses a Position name; nullopt otherwise.
std::optional<Position> parse_position(std::string_view name);

/// The attention softmax (Megatron-Core's --softmax-type, Transformer Engine's softmax_type):
/// vanilla exp(x_j) / sum exp(x_i); off_by_one adds 1 to the denominator (Miller 2023, "Attention
/// Is Off By One"); learnable adds exp(b_h) with one learned logit b_h per head (OpenAI's gpt-oss
/// "attention sinks", Xiao et al. 2023): a parameters per block, split with the heads under TP.
enum class Softmax { vanilla, off_by_one, learnable };
/// "vanilla", "off-by-one" or "learnable".
const char *softmax_name(Softmax s);
/// Parses a Softmax name ("off_by_one" is accepted as Megatron-Core's spelling); nullopt
/// otherwise.
std::optional<Softmax> parse_softmax(std::string_view name);

/// A decoder-only transformer (Narayanan et al. 2021 notation: l, h, a, s, V), GPT-style (2022
/// papers) or Llama-style (GQA, gated MLP, RMSNorm, RoPE, no biases, untied embeddings).
struct ModelConfig {
  std::string name;                      ///< label for tables ("gpt-13b")
  int layers = 0;                        ///< l, transformer layers
  int hidden = 0;                        ///< h (d in Cheng et al.), hidden size
  int heads = 0;                         ///< a, attention heads
  int sequence = 0;                      ///< s, tokens per sample
  int vocabulary = 0;                    ///< V, vocabulary size (padded as the run pads it)
  int ffn = 0;                           ///< MLP inner size; 4h when 0
  DType dtype = DType::half;             ///< training dtype of weights and activations
  int global_batch = 0;                  ///< default global batch B [samples]; 0 = none
  Attention attention = Attention::fused; ///< fused (flash) or unfused (Megatron 2022)
  bool tied_embeddings = true;           ///< LM head shares the input embedding (Megatron, GPT-2)
  int kv_heads = 0;                      ///< key/value heads g (GQA: g < a; MQA: 1); 0 = heads
  Mlp mlp = Mlp::gelu;                   ///< MLP kind
  Norm norm = Norm::layernorm;           ///< normalization
  Position position = Position::learned; ///< position encoding
  bool bias = true;                      ///< biases on every linear layer (GPT); false (Llama)
  bool qkv_bias = false;                 ///< biases on q, k, v only (Qwen2/2.5) when !bias
  bool dropout = true;                   ///< dropout layers (p > 0) store masks (GPT); false (Llama)
  /// GEMM inputs of the linear layers in FP8 (Transformer Engine's recipe: E4M3 per-tensor
  /// scaling; `dtype` is then bf16 and everything else stays bf16). Set by dtype "fp8".
  bool fp8 = false;
  int head_dim_override = 0;             ///< d when not h / a (Qwen3: 128 with h 2048, a 32)
  bool qk_norm = false;                  ///< RMSNorm of d on q and k per layer (Qwen3)
  Softmax softmax = Softmax::vanilla;    ///< attention softmax (gpt-oss: learnable sinks)
  // Mixture of experts (Shazeer et al. 2017; Fedus et al. 2022; Megatron-Core MoE).
  int experts = 0;          ///< E routed experts per MoE layer; 0 = a dense model
  int top_k = 0;            ///< k experts per token
  int moe_ffn = 0;          ///< f_e, each expert's MLP inner size (gated as `mlp`)
  int shared_experts = 0;   ///< shared experts (each of moe_ffn) every token passes through
  int moe_layer_freq = 1;   ///< every n-th block is an MoE block
  int first_dense_layers = 0; ///< dense blocks before the first MoE block (DeepSeek: 3)
  /// Multi-token prediction modules (DeepSeek-V3, arXiv 2412.19437, Sec. 2.2; Megatron-Core's
  /// --mtp-num-layers): each adds, after the `layers` blocks and on the last pipeline stage, two
  /// RMSNorms and a 2h x h projection of [norm(h); norm(embedding of the next token)], one block
  /// (an MoE block when the model has experts), and a second pass of the shared output head and
  /// loss. 0 = none (the model as published: DeepSeek-V3's 671B excludes its 14B MTP module).
  int mtp_layers = 0;
  /// Sliding-window attention (Mistral 7B, Gemma 2, gpt-oss; Megatron-Core's --window-size W,0):
  /// each query attends to itself and the W keys before it; 0 = full causal attention.
  int sliding_window = 0;
  /// Megatron-Core's --window-attn-skip-freq n: every n-th block (block numbers 1..layers) keeps
  /// full attention, the others are windowed (gpt-oss: 2, alternating); 0 = every block windowed.
  int window_skip_freq = 0;
  /// Expert capacity factor (Megatron's --moe-expert-capacity-factor; Fedus et al. 2022, Sec.
  /// 2.2): each expert takes at most capacity_factor * k T / E of the T tokens a router sees and
  /// drops the rest; 0 = none (dropless, Megatron's default).
  double capacity_factor = 0;
  /// Pad every expert's input to its capacity (Megatron's --moe-pad-expert-input-to-capacity):
  /// expert GEMMs and all-to-alls run at exactly capacity_factor times the balanced rows.
  bool pad_to_capacity = false;
  // Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1 and Appendix C;
  // DeepSeek-V3): keys and values from a compressed latent of kv_lora_rank, queries from one of
  // q_lora_rank (or straight from h), a decoupled RoPE key of qk_rope_head_dim shared by the heads.
  int q_lora_rank = 0;      ///< d_c' query latent; 0 = no query compression (V2-Lite)
  int kv_lora_rank = 0;     ///< d_c key/value latent; 0 = not MLA (multi-head / GQA attention)
  int qk_rope_head_dim = 0; ///< d_h^R decoupled RoPE dimension of each query head and the key
  int qk_nope_head_dim = 0; ///< d_h, the query/key dimension per head without RoPE
  int v_head_dim = 0;       ///< value dimension per head
  /// MLP inner size [elements]: ffn, or 4h when unset.
  int ffn_size() const { return ffn > 0 ? ffn : 4 * hidden; }
  /// Key/value heads g: kv_heads, or heads when unset.
  int kv_heads_count() const { return kv_heads > 0 ? kv_heads : heads; }
  /// Head dimension d: head_dim_override, or h / a.
  int head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  /// True for a mixture of experts.
  bool moe() const { return experts > 0; }
  /// True for multi-head latent attention (kv_lora_rank set).
  bool mla() const { return kv_lora_rank > 0; }
  /// Blocks with sliding-window attention: all but every window_skip_freq-th; 0 without a window.
  int windowed_layers() const {
    if (sliding_window <= 0)
      return 0;
    return window_skip_freq > 0 ? layers - layers / window_skip_freq : layers;
  }
  /// MoE blocks among the `layers` (every moe_layer_freq-th after first_dense_layers).
  int moe_layers() const {
    if (!moe() || layers <= first_dense_layers)
      return 0;
    const int f = moe_layer_freq > 0 ? moe_layer_freq : 1;
    return (layers - first_dense_layers + f - 1) / f;
  }
};

/// Per-field overrides from a command line: a value of 0 (or an empty string / nullopt) keeps
/// the model's own.
struct ModelOverrides {
  int layers = 0, hidden = 0, heads = 0, sequence = 0, vocabulary = 0, ffn = 0; ///< see ModelConfig
  std::string dtype;                    ///< "fp16", "bf16", "fp32", "fp8" (parse_dtype names too)
  std::string attention;                ///< "fused" or "unfused"
  int kv_heads = 0;                     ///< see ModelConfig::kv_heads
  int head_dim = 0;                     ///< see ModelConfig::head_dim_override
  int experts = 0, top_k = 0, moe_ffn = 0, shared_experts = -1; ///< MoE (shared: -1 keeps)
  double capacity_factor = -1;          ///< see ModelConfig; -1 keeps, 0 = dropless
  std::optional<bool> pad_to_capacity;  ///< see ModelConfig
  /// MLA (see ModelConfig); q_lora_rank -1 keeps (0 is a value: no query compression), the
  /// others 0 keeps.
  int q_lora_rank = -1, kv_lora_rank = 0, qk_rope_head_dim = 0, qk_nope_head_dim = 0,
      v_head_dim = 0;
  std::string mlp, norm, position;      ///< see Mlp, Norm, Position
  std::string softmax;                  ///< see Softmax (--softmax-type)
  std::optional<bool> bias;             ///< linear-layer biases
  /// Multi-token prediction modules, sliding window [keys] and skip frequency [blocks] (see
  /// ModelConfig); -1 keeps the model's. 0 means no modules, no window, or every block windowed;
  /// sliding_window 0 without window_skip_freq also clears the skip frequency.
  int mtp_layers = -1, sliding_window = -1, window_skip_freq = -1;
  /// True when all five of layers, hidden, heads, sequence, vocabulary are set (a model from
  /// flags alone).
  bool complete() const { return layers && hidden && heads && sequence && vocabulary; }
};

/// Applies `o` to `m` (fields left at 0/empty are kept). \throws InputError naming the flag
/// (--dtype, --attention) for an unknown name. Does not validate: call validate_model().
void apply_overrides(ModelConfig &m, const ModelOverrides &o);

/// Loads a model YAML (fields: name, layers, hidden, heads, sequence, vocabulary, and optional
/// ffn, kv_heads, head_dim, mlp, norm, position, bias, qkv_bias, dropout, experts, top_k, moe_ffn,
/// shared_experts, moe_layer_freq, first_dense_layers, capacity_factor (a number > 0 or none),
/// pad_to_capacity, q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim,
/// qk_norm, softmax_type (vanilla|off-by-one|learnable), mtp_layers, sliding_window,
/// window_skip_freq, dtype (fp16|bf16|fp32|fp8),
/// global_batch, attention: fused|unfused, tied_embeddings: bool).
/// \throws InputError naming the file, line and field of a missing or bad value.
ModelConfig load_model(const std::string &path);

/// The model of a YAML file (`path` may be empty) with `o` applied, validated. Without a file,
/// all five sizes must come from `o`. \throws InputError naming the file or flag.
ModelConfig build_model(const std::string &path, const ModelOverrides &o);

/// Checks a model's fields (positive sizes, heads divide hidden, dtype half/bfloat16/float).
/// \throws InputError naming `origin` (a file or "command line") and the field.
void validate_model(const ModelConfig &model, const std::string &origin);

}  // namespace scalefit
