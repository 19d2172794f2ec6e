"""Language-model problems: one line per problem.

Tensor-parallel (``tp``) and expert-parallel (``local_experts``) options pick one GPU's share of a large
model's layer, the shape a kernel meets when the model is served on a node; they also keep each problem's
weights to tens of MB, so that CI can generate them on the CPU.
"""

from __future__ import annotations

from . import (
    llm,
    llm_attention,
    llm_backward,
    llm_layers,
    llm_moe,
    llm_norms,
    llm_ops,
    llm_quant,
    llm_rotary,
    llm_ssm,
)
from . import models_llm as m
from .entry import Entry
from .llm_shapes import limit_bytes
from .models import DEEPSEEK_V3, LLAMA_3_1_8B, LLAMA_3_2_1B, QWEN3_8B, QWEN3_30B_A3B, ModelConfig

LLM_MODELS: tuple[ModelConfig, ...] = tuple(
    value for value in vars(m).values() if isinstance(value, ModelConfig)
)
"""Models added for the language-model problems beyond the starter set in ``models.py``."""


def _mha_sizes(kv_heads: int, head_dim: int) -> list[tuple[int, ...]]:
    """gqa_decode's (batch, kv_len) sweep cut to a 320 MiB cache for models with many KV heads."""
    return limit_bytes((*llm.GQA_DECODE_SIZES, (2, 512), (4, 256)), 2 * kv_heads * head_dim * 2, 320 * 2**20)


# A vocabulary shard sees a token's row only for 1/tp of the ids: from 64 tokens on, every workload hits it.
_SHARDED_EMBEDDING_TOKENS = (64, 128, 256, 512, 1000, 1024, 2048, 4096, 8192, 16384)

# Top-2 routers: from 4 tokens on, so that the smallest workload has more than a couple of weights to check.
_TOP2_TOKENS = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 1000)

_STARTER: tuple[Entry, ...] = (
    Entry(llm.rmsnorm, QWEN3_8B),
    Entry(llm.fused_add_rmsnorm, LLAMA_3_1_8B),
    Entry(llm.rope, LLAMA_3_1_8B),
    Entry(llm.gqa_decode, LLAMA_3_1_8B),
    Entry(llm.qkv_proj_gemm, LLAMA_3_1_8B),
    Entry(llm.swiglu_mlp, LLAMA_3_2_1B),
    Entry(llm.moe_topk_softmax_router, QWEN3_30B_A3B),
    Entry(llm.fp8_per_token_group_quant, DEEPSEEK_V3),
)

_NORMS: tuple[Entry, ...] = (
    Entry(llm.rmsnorm, m.LLAMA_2_7B),
    Entry(llm.rmsnorm, m.QWEN2_5_7B),
    Entry(llm.rmsnorm, m.LLAMA_3_1_70B, {"tokens": (*llm.tokens_up_to(8192), 1000)}),
    Entry(llm.rmsnorm, m.LLAMA_3_1_405B, {"tokens": (*llm.tokens_up_to(4096), 1000)}),
    Entry(llm.rmsnorm, m.DEEPSEEK_R1, {"tokens": (*llm.tokens_up_to(8192), 1000)}),
    Entry(llm.rmsnorm, m.GLM_4_9B),
    Entry(llm.rmsnorm, m.SMOLLM2_135M),
    Entry(llm.rmsnorm, m.INTERNLM3_8B),
    Entry(llm.rmsnorm, m.FALCON3_7B),
    Entry(llm.rmsnorm, m.MISTRAL_NEMO),
    Entry(llm.fused_add_rmsnorm, m.MIXTRAL_8X7B),
    Entry(llm.fused_add_rmsnorm, m.QWEN3_32B),
    Entry(llm.fused_add_rmsnorm, m.PHI_4),
    Entry(llm.fused_add_rmsnorm, m.TINYLLAMA_1_1B),
    Entry(llm.fused_add_rmsnorm, m.YI_34B, {"tokens": llm.tokens_up_to(4096)}),
    Entry(llm_norms.layernorm, m.FALCON_7B),
    Entry(llm_norms.layernorm, m.FALCON_40B, {"tokens": llm.tokens_up_to(8192)}),
    Entry(llm_norms.layernorm, m.PHI_2),
    Entry(llm_norms.layernorm, m.STABLELM_2_1_6B),
    Entry(llm_norms.layernorm, m.COMMAND_R, {"affine": "weight", "tokens": llm.tokens_up_to(8192)}),
    # OlmoLayerNorm: F.layer_norm without parameters, eps=1e-5 (modeling_olmo.py; not in config.json).
    Entry(llm_norms.layernorm, m.OLMO_1B, {"affine": "none", "eps": 1e-5}),
    Entry(llm_norms.gemma_rmsnorm, m.GEMMA_7B),
    Entry(llm_norms.gemma_rmsnorm, m.GEMMA_3_1B),
    Entry(llm_norms.gemma2_sandwich_norm, m.GEMMA_2_2B),
    Entry(llm_norms.gemma2_sandwich_norm, m.GEMMA_2_9B),
    Entry(llm_norms.gemma2_sandwich_norm, m.GEMMA_2_27B),
    Entry(llm_norms.qk_norm, m.QWEN3_4B),
    Entry(llm_norms.qk_norm, m.QWEN3_235B_A22B),
    Entry(llm_norms.qk_norm, m.GEMMA_3_1B, {"gain": "one_plus"}),
    Entry(llm_norms.qk_norm, m.OLMO_2_7B, {"per_head": False, "gain": "fp32"}),
)

_ROTARY: tuple[Entry, ...] = (
    Entry(llm.rope, m.MISTRAL_7B),
    Entry(llm.rope, m.QWEN2_5_7B),
    Entry(llm.rope, m.YI_6B),
    Entry(llm.rope, m.INTERNLM2_5_7B),
    Entry(llm.rope, m.PHI_3_MINI),
    Entry(llm_rotary.rope_partial, m.PHI_2),
    Entry(llm_rotary.rope_partial, m.STABLELM_2_1_6B),
    Entry(llm_rotary.rope_partial, m.PHI_4_MINI),
    Entry(llm_rotary.rope_partial, m.GLM_4_9B, {"interleaved": True}),
    Entry(llm_rotary.rope_scaled, m.LLAMA_3_1_70B),
    Entry(llm_rotary.rope_scaled, m.LLAMA_3_2_3B),
    Entry(llm_rotary.rope_scaled, m.DEEPSEEK_R1, {"mla": True, "interleaved": True}),
    Entry(llm_rotary.rope_scaled, m.GPT_OSS_20B),
)

_ATTENTION: tuple[Entry, ...] = (
    Entry(llm.gqa_decode, m.MISTRAL_7B_V0_3),
    Entry(llm.gqa_decode, m.QWEN2_5_7B),
    Entry(llm.gqa_decode, m.QWEN3_32B),
    Entry(llm.gqa_decode, m.LLAMA_3_1_70B),
    Entry(llm.gqa_decode, m.PHI_3_MEDIUM),
    Entry(llm.gqa_decode, m.INTERNLM3_8B),
    Entry(llm.gqa_decode, m.YI_34B),
    Entry(llm.gqa_decode, m.MISTRAL_NEMO),
    Entry(llm.gqa_decode, m.QWEN2_5_0_5B),
    Entry(llm.gqa_decode, m.FALCON_7B, {"kind": "mqa"}),
    Entry(llm.gqa_decode, m.GEMMA_2B, {"kind": "mqa"}),
    Entry(llm.gqa_decode, m.LLAMA_2_7B, {"kind": "mha", "sizes": _mha_sizes(32, 128)}),
    Entry(llm_attention.decode_attention, m.MISTRAL_7B, {"window": 4096}),
    Entry(llm_attention.decode_attention, m.GEMMA_2_2B, {"window": 4096, "softcap": 50.0}),
    Entry(llm_attention.decode_attention, m.GEMMA_2_9B, {"softcap": 50.0}),
    Entry(llm_attention.decode_attention, m.GPT_OSS_20B, {"sinks": True}),
    Entry(llm_attention.decode_attention, m.GPT_OSS_120B, {"sinks": True, "window": 128}),
    Entry(llm_attention.decode_attention, m.BAICHUAN2_13B, {"alibi": True}),
    Entry(llm_attention.prefill_attention, LLAMA_3_2_1B),
    Entry(llm_attention.prefill_attention, QWEN3_8B),
    Entry(llm_attention.prefill_attention, m.QWEN2_5_7B),
    Entry(llm_attention.prefill_attention, m.PHI_3_MINI),
    Entry(llm_attention.prefill_attention, m.MISTRAL_7B, {"window": 4096}),
    Entry(llm_attention.prefill_attention, m.GEMMA_2_27B, {"softcap": 50.0}),
    Entry(llm_attention.prefill_attention, m.GEMMA_3_1B, {"window": 512}),
    Entry(llm_attention.mla_decode, m.DEEPSEEK_R1),
    Entry(llm_attention.mla_decode, m.DEEPSEEK_V2),
    Entry(llm_attention.mla_decode, m.DEEPSEEK_V2_LITE),
    Entry(llm_attention.mla_decode, m.KIMI_K2),
)

_GEMMS: tuple[Entry, ...] = (
    Entry(llm_ops.layer_gemm, m.QWEN2_5_7B, {"which": "qkv", "bias": True}),
    Entry(llm_ops.layer_gemm, m.LLAMA_3_1_70B, {"which": "o_proj", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.LLAMA_3_1_70B, {"which": "down", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.LLAMA_3_1_405B, {"which": "qkv", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.QWEN2_5_72B, {"which": "down", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.MISTRAL_SMALL_24B, {"which": "down", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.PHI_3_MINI, {"which": "qkv"}),
    Entry(llm_ops.layer_gemm, m.GEMMA_7B, {"which": "gate_up", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.SMOLLM2_135M, {"which": "lm_head"}),
    Entry(llm_ops.layer_gemm, m.QWEN2_5_14B, {"which": "o_proj", "tp": 2}),
    Entry(llm_ops.layer_gemm, m.QWEN2_5_32B, {"which": "qkv", "tp": 8}),
    Entry(llm_ops.layer_gemm, m.LLAMA_2_13B, {"which": "qkv", "tp": 4}),
    Entry(llm_ops.layer_gemm, m.DBRX, {"which": "qkv", "tp": 4}),
    Entry(llm_ops.layer_gemm, m.COMMAND_R, {"which": "o_proj", "tp": 4}),
    Entry(llm_ops.layer_gemm, m.GRANITE_3_1_8B, {"which": "down", "tp": 2}),
    Entry(llm_ops.layer_gemm, m.FALCON3_7B, {"which": "qkv"}),
    Entry(llm_ops.layer_gemm, m.YI_6B, {"which": "down", "tp": 2}),
    Entry(llm_ops.layer_gemm, m.MINICPM_2B, {"which": "qkv"}),
    Entry(llm_ops.layer_gemm, m.BAICHUAN2_7B, {"which": "qkv", "tp": 2}),
    Entry(llm_ops.layer_gemm, m.MINITRON_8B, {"which": "gate_up", "tp": 4}),
    Entry(llm_ops.layer_gemm, m.OLMO_2_7B, {"which": "o_proj"}),
)

_ELEMENTWISE: tuple[Entry, ...] = (
    Entry(llm_ops.activation, m.QWEN2_5_72B, {"kind": "silu", "tp": 8}),
    Entry(llm_ops.activation, m.MISTRAL_7B, {"kind": "silu"}),
    Entry(llm_ops.activation, m.GEMMA_2_9B, {"kind": "gelu_tanh"}),
    Entry(llm_ops.activation, m.GEMMA_2B, {"kind": "gelu_tanh"}),
    Entry(llm_ops.activation, m.PHI_2, {"kind": "gelu_new"}),
    # FalconMLP: dense_h_to_4h is 4 * hidden_size wide with exact GELU (not in config.json).
    Entry(llm_ops.activation, m.FALCON_7B, {"kind": "gelu", "intermediate": 4 * 4544}),
    Entry(llm_ops.activation, m.NEMOTRON_MINI_4B, {"kind": "relu2"}),
    Entry(llm_ops.gpt_oss_swiglu, m.GPT_OSS_20B),
    Entry(llm_ops.embedding, m.SMOLLM2_135M),
    # Gemma scales embeddings by sqrt(hidden_size) rounded to the activation dtype: sqrt(2304) = 48.
    Entry(
        llm_ops.embedding,
        m.GEMMA_2_2B,
        {
            "tp": 8,
            "tokens": _SHARDED_EMBEDDING_TOKENS,
            "multiplier": 48.0,
            "multiplier_text": " (sqrt(hidden_size), Gemma's normalizer)",
        },
    ),
    Entry(llm_ops.logit_softcap, m.GEMMA_2_2B),
    Entry(llm_ops.top_k_top_p_probs, m.LLAMA_3_8B),
    Entry(llm_ops.top_k_top_p_probs, m.QWEN2_5_7B),
    Entry(llm_ops.top_k_top_p_probs, m.GEMMA_2_9B),
    Entry(llm_ops.top_k_top_p_probs, m.DEEPSEEK_V3_0324),
    Entry(llm_ops.top_k_top_p_probs, m.GPT_OSS_120B),
    Entry(llm_ops.top_k_top_p_probs, m.MISTRAL_NEMO),
)

_MOE: tuple[Entry, ...] = (
    Entry(llm.moe_topk_softmax_router, m.QWEN3_235B_A22B),
    Entry(llm.moe_topk_softmax_router, m.QWEN1_5_MOE_A2_7B),
    Entry(llm.moe_topk_softmax_router, m.OLMOE_1B_7B),
    Entry(llm.moe_topk_softmax_router, m.QWEN2_57B_A14B),
    Entry(
        llm_moe.moe_router,
        m.MIXTRAL_8X7B,
        {"mode": "softmax_topk", "renormalise": True, "tokens": _TOP2_TOKENS},
    ),
    Entry(
        llm_moe.moe_router,
        m.MIXTRAL_8X22B,
        {"mode": "softmax_topk", "renormalise": True, "tokens": _TOP2_TOKENS},
    ),
    Entry(llm_moe.moe_router, m.DBRX, {"mode": "softmax_topk", "renormalise": True}),
    Entry(
        llm_moe.moe_router, m.JAMBA, {"mode": "softmax_topk", "renormalise": False, "tokens": _TOP2_TOKENS}
    ),
    Entry(llm_moe.moe_router, m.DEEPSEEK_V2_LITE, {"mode": "softmax_topk"}),
    Entry(llm_moe.moe_router, m.GPT_OSS_20B, {"mode": "topk_softmax", "router_bias": True}),
    Entry(llm_moe.moe_router, m.GPT_OSS_120B, {"mode": "topk_softmax", "router_bias": True}),
    Entry(llm_moe.moe_router, m.GRANITE_3_0_3B_A800M, {"mode": "topk_softmax"}),
    Entry(llm_moe.moe_router, m.DEEPSEEK_R1, {"mode": "sigmoid_grouped"}),
    Entry(llm_moe.moe_router, m.KIMI_K2, {"mode": "sigmoid_grouped"}),
    Entry(llm_moe.moe_router, m.DEEPSEEK_V2, {"mode": "softmax_grouped"}),
    Entry(llm_moe.moe_block, m.GRANITE_3_0_1B_A400M, {"topk_then_softmax": True}),
    Entry(llm_moe.grouped_experts, QWEN3_30B_A3B, {"local_experts": 8}),
    Entry(llm_moe.grouped_experts, m.OLMOE_1B_7B, {"local_experts": 8}),
    Entry(llm_moe.grouped_experts, m.QWEN3_235B_A22B, {"local_experts": 2}),
    Entry(llm_moe.grouped_experts_fp8, m.DEEPSEEK_R1, {"local_experts": 1}),
)

_MLA_QKV_A = (
    1536 + 512 + 64,
    7168,
)  # DeepSeek-V3 fused q_a_proj + kv_a_proj_with_mqa: [q_lora | kv_lora | rope]
_MLA_Q_B_TP8 = (
    128 // 8 * (128 + 64),
    1536,
)  # q_b_proj on one of 8 TP ranks: q_lora_rank -> 16 heads x (nope + rope)
_KIMI_KV_B = (64 * (128 + 128), 512)  # kv_b_proj: kv_lora_rank -> heads x (k_nope + v)
_DS_EXPERT_DOWN = (7168, 2048)  # one routed expert's down projection
_QWEN3_235B_EXPERT_GATE_UP = (2 * 1536, 4096)  # one expert's fused gate_up

_QUANT: tuple[Entry, ...] = (
    Entry(llm.fp8_per_token_group_quant, m.KIMI_K2),
    Entry(llm.fp8_per_token_group_quant, m.QWEN3_8B_FP8),
    Entry(llm_quant.fp8_per_token_quant, m.LLAMA_3_1_70B, {"tokens": (*llm.tokens_up_to(8192)[2:], 1000)}),
    Entry(llm_quant.fp8_per_token_quant, m.MISTRAL_SMALL_24B),
    Entry(llm_quant.fp8_block_gemm, m.DEEPSEEK_R1, {"which": "qkv_a", "shape": _MLA_QKV_A}),
    Entry(llm_quant.fp8_block_gemm, m.DEEPSEEK_V3_0324, {"which": "q_b", "shape": _MLA_Q_B_TP8, "tp": 8}),
    Entry(
        llm_quant.fp8_block_gemm, m.DEEPSEEK_R1, {"which": "o_proj", "shape": (7168, 128 * 128 // 8), "tp": 8}
    ),
    Entry(llm_quant.fp8_block_gemm, DEEPSEEK_V3, {"which": "down", "tp": 8}),
    Entry(llm_quant.fp8_block_gemm, m.KIMI_K2, {"which": "kv_b", "shape": _KIMI_KV_B}),
    Entry(llm_quant.fp8_block_gemm, m.QWEN3_8B_FP8, {"which": "qkv", "tp": 2}),
    Entry(llm_quant.fp8_block_gemm, m.QWEN3_8B_FP8, {"which": "gate_up", "tp": 8}),
    Entry(llm_quant.fp8_tensor_gemm, m.MISTRAL_NEMO, {"which": "qkv", "tp": 2}),
    Entry(llm_quant.fp8_tensor_gemm, m.LLAMA_3_3_70B, {"which": "qkv", "tp": 8}),
    Entry(llm_quant.fp8_tensor_gemm, m.MISTRAL_SMALL_24B, {"which": "down", "tp": 8}),
    Entry(llm_quant.fp8_tensor_gemm, m.QWEN2_5_72B, {"which": "o_proj", "tp": 8}),
    Entry(llm_quant.nvfp4_quant, m.DEEPSEEK_R1),
    Entry(llm_quant.nvfp4_quant, m.LLAMA_3_3_70B),
    Entry(llm_quant.nvfp4_quant, m.LLAMA_3_1_405B, {"tokens": (*llm.tokens_up_to(8192), 1000)}),
    Entry(llm_quant.nvfp4_gemm, m.DEEPSEEK_R1, {"which": "expert_down", "shape": _DS_EXPERT_DOWN}),
    Entry(llm_quant.nvfp4_gemm, m.LLAMA_3_3_70B, {"which": "qkv", "tp": 8}),
    Entry(
        llm_quant.nvfp4_gemm,
        m.QWEN3_235B_A22B,
        {"which": "expert_gate_up", "shape": _QWEN3_235B_EXPERT_GATE_UP},
    ),
)

_BLOCKS: tuple[Entry, ...] = (
    Entry(llm_layers.attention_block, LLAMA_3_2_1B),
    Entry(llm_layers.attention_block, m.QWEN2_5_1_5B, {"qkv_bias": True}),
    Entry(llm_layers.attention_block, m.QWEN3_1_7B, {"qk_norm": True}),
    Entry(llm_layers.attention_block, m.SMOLLM2_1_7B),
    Entry(llm_layers.attention_block, m.SMOLLM2_360M),
    Entry(llm_layers.mlp_block, m.QWEN2_5_1_5B),
    Entry(llm_layers.mlp_block, m.SMOLLM2_360M),
    Entry(llm_layers.mlp_block, m.TINYLLAMA_1_1B),
    Entry(llm_layers.mlp_block, m.QWEN3_1_7B),
    Entry(llm.swiglu_mlp, m.QWEN3_0_6B),
    Entry(llm_layers.decoder_layer, m.SMOLLM2_135M),
    Entry(llm_layers.decoder_layer, m.QWEN3_0_6B, {"qk_norm": True}),
    Entry(llm_layers.decoder_layer, m.QWEN2_5_0_5B, {"qkv_bias": True}),
)

_BACKWARD: tuple[Entry, ...] = (
    Entry(llm_backward.rmsnorm_backward, LLAMA_3_1_8B),
    Entry(llm_backward.rmsnorm_backward, m.QWEN2_5_7B),
    Entry(llm_backward.rmsnorm_backward, m.SMOLLM2_1_7B),
    Entry(llm_backward.swiglu_backward, LLAMA_3_2_1B),
    Entry(llm_backward.swiglu_backward, m.QWEN2_5_1_5B),
    Entry(llm_backward.swiglu_backward, m.SMOLLM2_1_7B),
    Entry(llm_backward.rope_backward, LLAMA_3_2_1B),
    Entry(llm_backward.rope_backward, QWEN3_8B),
    Entry(llm_backward.cross_entropy, m.LLAMA_3_8B),
    Entry(llm_backward.cross_entropy, m.SMOLLM2_135M),
    Entry(llm_backward.cross_entropy, m.QWEN2_5_0_5B),
    Entry(llm_backward.cross_entropy, m.GEMMA_3_1B),
    Entry(llm_backward.fused_linear_cross_entropy, m.SMOLLM2_135M),
    Entry(llm_backward.fused_linear_cross_entropy, m.SMOLLM2_135M, {"backward": True}),
    Entry(llm_backward.attention_backward, LLAMA_3_2_1B),
    Entry(llm_backward.attention_backward, LLAMA_3_1_8B),
    Entry(llm_backward.attention_backward, m.QWEN3_0_6B),
    Entry(llm_backward.attention_backward, m.SMOLLM2_135M),
)

_SSM: tuple[Entry, ...] = (
    Entry(llm_ssm.mamba2_chunk_scan, m.MAMBA_CODESTRAL_7B),
    Entry(llm_ssm.mamba2_state_update, m.MAMBA_CODESTRAL_7B),
    Entry(llm_ssm.causal_conv1d, m.MAMBA_CODESTRAL_7B),
    Entry(llm_ssm.causal_conv1d, m.MAMBA_2_8B),
    Entry(llm_ssm.causal_conv1d, m.FALCON_MAMBA_7B),
    Entry(llm_ssm.mamba1_state_update, m.JAMBA),
    Entry(llm_ssm.mamba1_state_update, m.FALCON_MAMBA_7B),
    Entry(llm_ssm.mamba1_state_update, m.MAMBA_2_8B),
)

LLM_ENTRIES: tuple[Entry, ...] = (
    *_STARTER, *_NORMS, *_ROTARY, *_ATTENTION, *_GEMMS, *_ELEMENTWISE, *_MOE, *_QUANT, *_BLOCKS, *_BACKWARD,
    *_SSM,
)  # fmt: skip
