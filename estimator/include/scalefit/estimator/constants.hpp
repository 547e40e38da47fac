/// \file constants.hpp
/// Every hand-set constant of the estimator that no YAML or fit file sets, in one place, each
/// with its source. Measured figures (peaks, HBM, efficiency tables) live in configs/systems;
/// fitted ones in fit files (compute, framework sections).
#pragma once

namespace scalefit::estimator::constants {

/// Fused (flash) attention without a compute fit: achieved fraction of the dense matrix peak
/// for forward + backward. Source: PyTorch scaled_dot_product_attention (flash backend), causal,
/// GPT-13B shape (b 1, a 40, s 1024, d 128) on H100: 317 us forward + backward for
/// 3.5 * 2 b s^2 h = 37.6 GFLOP -> 118.6 TFLOP/s = 0.12 of 989 (../shared/data/h100/README.md).
inline constexpr double kFusedAttentionEfficiency = 0.12;

/// FlashAttention backward FLOPs relative to forward: 5 matrix products against 2 (Dao et al.
/// 2022, Sec. 3.1 / Algorithm 4), so backward = 2.5 x forward.
inline constexpr double kFlashBackwardFactor = 2.5;

/// Causal masking: flash attention skips the blocks above the diagonal, about half the s x s
/// products (Dao et al. 2022); unfused (Megatron 2022) computes them all.
inline constexpr double kCausalFraction = 0.5;

/// Head dimensions flash attention's kernels are built for: multiples of 32 up to 256
/// (FlashAttention-2's `flash_fwd_hdim{32,64,96,...,256}` instantiations, which PyTorch's flash
/// backend of scaled_dot_product_attention compiles in). A head of d = h / a runs in the kernel
/// of the next multiple (d 80 in the d 96 kernel), at the work of that size.
inline constexpr double kFlashHeadDimStep = 32;

/// Softmax statistics flash attention keeps per row and head for backward: one fp32 log-sum-exp
/// [bytes] (Dao et al. 2022, Algorithm 2: m and l, stored as L = m + log l).
inline constexpr double kFlashStatsBytes = 4;

// ---- PyTorch eager step (Framework::pytorch), as ../shared/data/h100/pytorch_gpt_step.py runs
// it: bf16 autocast over fp32 weights, pre-LN blocks with biases, flash SDPA, GELU(tanh) MLP,
// untied LM head, fp32 cross-entropy, fused AdamW. Byte and kernel counts read off the script's
// operators (what each reads and writes), not fitted to any measurement.

/// Memory-bound kernels of one block's forward and the bytes each moves per token and hidden
/// element (s b h elements): LN1 (fp32 in/out, 8), autocast cast to bf16 (6), SDPA output
/// transpose copy (4), residual add fp32 + bf16 -> fp32 (10), LN2 (8), cast (6), residual add
/// (10); GELU moves 4 per element of the 4h MLP (kEagerGeluBytes).
inline constexpr double kEagerFwdBytesPerTh = 8 + 6 + 4 + 10 + 8 + 6 + 10;
inline constexpr int kEagerFwdKernels = 8; ///< the 7 above and GELU
/// The same block run wholly in bf16, no autocast (FSDP MixedPrecision(param_dtype=bf16),
/// pure bf16): forward per s b h element LN1 (2 + 2), the SDPA output transpose copy (4), a bf16
/// residual add (2 + 2 + 2), LN2 (4), the second residual add (6); no casts.
inline constexpr double kEagerBf16FwdBytesPerTh = 4 + 4 + 6 + 4 + 6;
inline constexpr int kEagerBf16FwdKernels = 6; ///< the 5 above and GELU
/// Its backward: two residual-gradient adds (6 each), two LayerNorm backward (6 each), the
/// transpose copy (4), the bias-gradient reductions (18); no casts.
inline constexpr double kEagerBf16BwdBytesPerTh = 12 + 12 + 4 + 18;
inline constexpr int kEagerBf16BwdKernels = 2 + 4 + 1 + 4 + 1; ///< + GELU backward
/// GELU forward, per MLP inner element: read and write bf16.
inline constexpr double kEagerGeluBytes = 4;
/// Backward of one block per s b h element: two residual-gradient adds (12 each), two casts to
/// bf16 at the autocast boundary (6 each), two casts of LN-output gradients to fp32 (6 each), two
/// LayerNorm backward (12 each), the transpose copy (4), bias-gradient reductions over tokens
/// (2 bytes per output of qkv 3h, proj h, up 4h, down h: 18).
inline constexpr double kEagerBwdBytesPerTh = 24 + 12 + 12 + 24 + 4 + 18;
inline constexpr int kEagerBwdKernels = 2 + 2 + 2 + 4 + 1 + 4 + 1; ///< + GELU backward
/// GELU backward per MLP inner element: read input and gradient, write gradient (bf16).
inline constexpr double kEagerGeluBwdBytes = 6;
/// Autocast casts each fp32 weight to bf16 once per forward (read 4, write 2) and its bf16
/// weight gradient to the fp32 .grad (read 2, write 4): bytes per matrix parameter each way.
inline constexpr double kEagerCastBytesPerParam = 6;
/// Cross-entropy in fp32 over the logits, bytes per logit (b s V): .float() (6), log_softmax
/// (8), its backward (12), NLL backward zero fill and scatter (4), the cast of the logits
/// gradient back to bf16 (6).
inline constexpr double kEagerXentBytesPerLogit = 6 + 8 + 12 + 4 + 6;
inline constexpr int kEagerXentKernels = 7; ///< the kernels above and the NLL forward
/// Live fp32 buffers per logit at the cross-entropy backward, the memory peak: the saved
/// log-probabilities, their gradient and the logits gradient (4 bytes each).
inline constexpr double kEagerXentLiveBytesPerLogit = 12;
/// Fused AdamW (torch.optim.AdamW(fused=True)) per parameter: reads weight, gradient, m, v
/// (16 bytes), writes weight, m, v (12 bytes).
inline constexpr double kAdamWBytesPerParam = 28;
/// Elements one multi_tensor_apply launch of the fused optimizer covers: 320 blocks of 65536
/// (PyTorch's MultiTensorApply.cuh kChunkSize and block limit).
inline constexpr double kAdamWElementsPerLaunch = 320.0 * 65536;
/// Embedding and position embedding forward (two gathers, one add: 8 + 8 + 12) and backward
/// (scatter-add of the fp32 gradient: 8) per s b h element; final LayerNorm and its cast (14
/// forward, 30 backward).
inline constexpr double kEagerEmbedBytesPerTh = 8 + 8 + 12 + 8 + 14 + 30;
inline constexpr int kEagerEmbedKernels = 3 + 4 + 2 + 4; ///< gathers, add, scatters, zero fills, LN

// ---- PyTorch eager Llama-style blocks (Framework::pytorch with rmsnorm, rope or a gated MLP):
// what the composite modules of plain PyTorch model code move instead of pytorch_gpt_step.py's
// fused LayerNorm and GELU. Read off foundation-model-stack (fms) at e3eaae3d (2024-02-21, the
// model code of the fms-fsdp runs in tests/data/published-runs): LayerNormParameterized with
// use_high_precision_pow (fms/modules/layernorm.py; Hugging Face's LlamaRMSNorm runs the same
// kernels), RotaryEmbedding.adjusted_qk (fms/modules/positions.py), GatedLinearUnit
// (fms/modules/feedforward.py). Bytes per element of the tensor each acts on; not fitted.

/// RMSNorm forward per hidden element (bf16 in and out): x.float() (read 2, write 4), pow(2)
/// (4 + 4), mean (4), xf * rsqrt (4 + 4), type_as (4 + 2), weight * x (2 + 2).
inline constexpr double kEagerRmsNormFwdBytes = 6 + 8 + 4 + 8 + 6 + 4;
inline constexpr int kEagerRmsNormFwdKernels = 6; ///< the six above (the per-token rsqrt aside)
/// RMSNorm backward per hidden element, autograd of the forward above: weight * x (grad * w:
/// 2 + 2; the weight gradient's grad * x and its token sum: 2 + 2 + 2 + 2), type_as (2 + 4),
/// xf * rsqrt (grad * r: 4 + 4; grad * xf and its row sum: 4 + 4 + 4 + 4), pow (2 x: 4 + 4, times
/// the expanded row gradient: 4 + 4), the two paths into xf added (4 + 4 + 4), x.float() (4 + 2).
inline constexpr double kEagerRmsNormBwdBytes = 4 + 8 + 6 + 8 + 16 + 16 + 12 + 6;
inline constexpr int kEagerRmsNormBwdKernels = 10;
/// fms's rotary embedding per element of q and of k (fp32 2x2 rotation): q.float() (2 + 4),
/// the broadcast product with the 2x2 frequency matrices (4 + 8), its sum over the pair (8 + 4),
/// type_as (4 + 2), contiguous (2 + 2). Meta's reference apply_rotary_emb (complex multiply)
/// moves about half of it.
inline constexpr double kEagerRopeFwdBytes = 6 + 12 + 12 + 6 + 4;
inline constexpr int kEagerRopeFwdKernels = 2 * 5; ///< for q and for k
/// Its backward per element: type_as (2 + 4), the product's gradient (4 + 8) summed over the
/// broadcast pair (8 + 4), the cast back (4 + 2), the copy into the projection's layout (2 + 2).
inline constexpr double kEagerRopeBwdBytes = 6 + 12 + 12 + 6 + 4;
inline constexpr int kEagerRopeBwdKernels = 2 * 5;
/// Gated MLP a(x W_g) * (x W_1) per inner element f: the activation (2 + 2) and the product
/// (2 + 2 + 2) forward; backward the product's two gradients (2 + 2 + 2 each) and the
/// activation's (2 + 2 + 2).
inline constexpr double kEagerGluFwdBytes = 4 + 6;
inline constexpr double kEagerGluBwdBytes = 6 + 6 + 6;
inline constexpr int kEagerGluFwdKernels = 2, kEagerGluBwdKernels = 3;

} // namespace scalefit::estimator::constants
