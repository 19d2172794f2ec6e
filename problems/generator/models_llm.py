"""Language-model configurations beyond the starter set in :mod:`.models`.

Same rules as there: every number is copied from the model's published ``config.json`` under the same key
(nested keys flattened with a dot, e.g. ``rope_scaling.factor``, ``ffn_config.moe_num_experts``). Only the
keys the templates read are listed; a template that needs a missing key fails at generation with a
KeyError that names the model and the key. Values that config.json leaves to the modelling code's default
(Llama 2's rope_theta of 10000, a head_dim equal to hidden_size / num_attention_heads) are not written
here: the templates derive them and say so.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

LLM = Category.llm


def _llm(key: str, hf_id: str, display_name: str, **config: int | float | str | bool) -> ModelConfig:
    return ModelConfig(key=key, hf_id=hf_id, display_name=display_name, category=LLM, config=config)


def _flat(**groups: dict[str, int | float | str | bool]) -> dict[str, int | float | str | bool]:
    """Flatten nested config groups: ``_flat(rope_scaling={"factor": 8.0})`` is
    ``{"rope_scaling.factor": 8.0}``."""
    return {f"{group}.{k}": v for group, values in groups.items() for k, v in values.items()}


# -- Llama ------------------------------------------------------------------------------------------

_LLAMA3_SCALING_8 = _flat(
    rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }
)  # fmt: skip

LLAMA_2_7B = _llm(
    "llama2_7b", "meta-llama/Llama-2-7b-hf", "Llama-2-7b",
    hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=32,
    num_hidden_layers=32, rms_norm_eps=1e-05, vocab_size=32000, max_position_embeddings=4096,
)  # fmt: skip
LLAMA_2_13B = _llm(
    "llama2_13b", "meta-llama/Llama-2-13b-hf", "Llama-2-13b",
    hidden_size=5120, intermediate_size=13824, num_attention_heads=40, num_key_value_heads=40,
    num_hidden_layers=40, rms_norm_eps=1e-05, vocab_size=32000, max_position_embeddings=4096,
)  # fmt: skip
LLAMA_3_8B = _llm(
    "llama3_8b", "meta-llama/Meta-Llama-3-8B", "Meta-Llama-3-8B",
    hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=500000.0, vocab_size=128256,
    max_position_embeddings=8192,
)  # fmt: skip
LLAMA_3_1_70B = _llm(
    "llama3_1_70b", "meta-llama/Llama-3.1-70B", "Llama-3.1-70B",
    hidden_size=8192, intermediate_size=28672, num_attention_heads=64, num_key_value_heads=8,
    num_hidden_layers=80, rms_norm_eps=1e-05, rope_theta=500000.0, vocab_size=128256,
    max_position_embeddings=131072, **_LLAMA3_SCALING_8,
)  # fmt: skip
LLAMA_3_1_405B = _llm(
    "llama3_1_405b", "meta-llama/Llama-3.1-405B", "Llama-3.1-405B",
    hidden_size=16384, intermediate_size=53248, num_attention_heads=128, num_key_value_heads=8,
    num_hidden_layers=126, rms_norm_eps=1e-05, rope_theta=500000.0, vocab_size=128256,
    max_position_embeddings=131072, **_LLAMA3_SCALING_8,
)  # fmt: skip
LLAMA_3_2_3B = _llm(
    "llama3_2_3b", "meta-llama/Llama-3.2-3B", "Llama-3.2-3B",
    hidden_size=3072, intermediate_size=8192, num_attention_heads=24, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=28, rms_norm_eps=1e-05, rope_theta=500000.0, vocab_size=128256,
    max_position_embeddings=131072,
    **_flat(rope_scaling={
        "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    }),
)  # fmt: skip
LLAMA_3_3_70B = _llm(
    "llama3_3_70b", "meta-llama/Llama-3.3-70B-Instruct", "Llama-3.3-70B-Instruct",
    hidden_size=8192, intermediate_size=28672, num_attention_heads=64, num_key_value_heads=8,
    num_hidden_layers=80, rms_norm_eps=1e-05, rope_theta=500000.0, vocab_size=128256,
    max_position_embeddings=131072, **_LLAMA3_SCALING_8,
)  # fmt: skip
TINYLLAMA_1_1B = _llm(
    "tinyllama_1_1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "TinyLlama-1.1B-Chat-v1.0",
    hidden_size=2048, intermediate_size=5632, num_attention_heads=32, num_key_value_heads=4,
    num_hidden_layers=22, rms_norm_eps=1e-05, rope_theta=10000.0, vocab_size=32000,
)  # fmt: skip

# -- Mistral ----------------------------------------------------------------------------------------

MISTRAL_7B = _llm(
    "mistral_7b_v0_1", "mistralai/Mistral-7B-v0.1", "Mistral-7B-v0.1",
    hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=10000.0, sliding_window=4096, vocab_size=32000,
    max_position_embeddings=32768,
)  # fmt: skip
MISTRAL_7B_V0_3 = _llm(
    "mistral_7b_v0_3", "mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-Instruct-v0.3",
    hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=1000000.0, vocab_size=32768,
)  # fmt: skip
MISTRAL_NEMO = _llm(
    "mistral_nemo_12b", "mistralai/Mistral-Nemo-Base-2407", "Mistral-Nemo-Base-2407",
    hidden_size=5120, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=40, rms_norm_eps=1e-05, rope_theta=1000000.0, vocab_size=131072,
)  # fmt: skip
MISTRAL_SMALL_24B = _llm(
    "mistral_small_24b", "mistralai/Mistral-Small-24B-Base-2501", "Mistral-Small-24B-Base-2501",
    hidden_size=5120, intermediate_size=32768, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=40, rms_norm_eps=1e-05, rope_theta=100000000.0, vocab_size=131072,
)  # fmt: skip
MIXTRAL_8X7B = _llm(
    "mixtral_8x7b", "mistralai/Mixtral-8x7B-v0.1", "Mixtral-8x7B-v0.1",
    hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=32, num_local_experts=8, num_experts_per_tok=2, rms_norm_eps=1e-05,
    rope_theta=1000000.0, vocab_size=32000,
)  # fmt: skip
MIXTRAL_8X22B = _llm(
    "mixtral_8x22b", "mistralai/Mixtral-8x22B-v0.1", "Mixtral-8x22B-v0.1",
    hidden_size=6144, intermediate_size=16384, num_attention_heads=48, num_key_value_heads=8,
    num_hidden_layers=56, num_local_experts=8, num_experts_per_tok=2, rms_norm_eps=1e-05,
    rope_theta=1000000.0, vocab_size=32000,
)  # fmt: skip

# -- Qwen -------------------------------------------------------------------------------------------

QWEN2_5_0_5B = _llm(
    "qwen2_5_0_5b", "Qwen/Qwen2.5-0.5B", "Qwen2.5-0.5B",
    hidden_size=896, intermediate_size=4864, num_attention_heads=14, num_key_value_heads=2,
    num_hidden_layers=24, rms_norm_eps=1e-06, rope_theta=1000000.0, vocab_size=151936,
    tie_word_embeddings=True,
)  # fmt: skip
QWEN2_5_1_5B = _llm(
    "qwen2_5_1_5b", "Qwen/Qwen2.5-1.5B", "Qwen2.5-1.5B",
    hidden_size=1536, intermediate_size=8960, num_attention_heads=12, num_key_value_heads=2,
    num_hidden_layers=28, rms_norm_eps=1e-06, rope_theta=1000000.0, vocab_size=151936,
)  # fmt: skip
QWEN2_5_7B = _llm(
    "qwen2_5_7b", "Qwen/Qwen2.5-7B", "Qwen2.5-7B",
    hidden_size=3584, intermediate_size=18944, num_attention_heads=28, num_key_value_heads=4,
    num_hidden_layers=28, rms_norm_eps=1e-06, rope_theta=1000000.0, vocab_size=152064,
)  # fmt: skip
QWEN2_5_14B = _llm(
    "qwen2_5_14b", "Qwen/Qwen2.5-14B", "Qwen2.5-14B",
    hidden_size=5120, intermediate_size=13824, num_attention_heads=40, num_key_value_heads=8,
    num_hidden_layers=48, vocab_size=152064,
)  # fmt: skip
QWEN2_5_32B = _llm(
    "qwen2_5_32b", "Qwen/Qwen2.5-32B", "Qwen2.5-32B",
    hidden_size=5120, intermediate_size=27648, num_attention_heads=40, num_key_value_heads=8,
    num_hidden_layers=64, vocab_size=152064,
)  # fmt: skip
QWEN2_5_72B = _llm(
    "qwen2_5_72b", "Qwen/Qwen2.5-72B", "Qwen2.5-72B",
    hidden_size=8192, intermediate_size=29568, num_attention_heads=64, num_key_value_heads=8,
    num_hidden_layers=80, vocab_size=152064,
)  # fmt: skip
QWEN3_0_6B = _llm(
    "qwen3_0_6b", "Qwen/Qwen3-0.6B", "Qwen3-0.6B",
    hidden_size=1024, intermediate_size=3072, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=28, rms_norm_eps=1e-06, rope_theta=1000000, vocab_size=151936, tie_word_embeddings=True,
)  # fmt: skip
QWEN3_1_7B = _llm(
    "qwen3_1_7b", "Qwen/Qwen3-1.7B", "Qwen3-1.7B",
    hidden_size=2048, intermediate_size=6144, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=28, rms_norm_eps=1e-06, rope_theta=1000000, vocab_size=151936,
)  # fmt: skip
QWEN3_4B = _llm(
    "qwen3_4b", "Qwen/Qwen3-4B", "Qwen3-4B",
    hidden_size=2560, intermediate_size=9728, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=36, rms_norm_eps=1e-06, rope_theta=1000000, vocab_size=151936,
)  # fmt: skip
QWEN3_32B = _llm(
    "qwen3_32b", "Qwen/Qwen3-32B", "Qwen3-32B",
    hidden_size=5120, intermediate_size=25600, num_attention_heads=64, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=64, rms_norm_eps=1e-06, rope_theta=1000000, vocab_size=151936,
)  # fmt: skip
QWEN3_8B_FP8 = _llm(
    "qwen3_8b_fp8", "Qwen/Qwen3-8B-FP8", "Qwen3-8B-FP8",
    hidden_size=4096, intermediate_size=12288, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=36, rms_norm_eps=1e-06,
    **{"quantization_config.fmt": "e4m3", "quantization_config.activation_scheme": "dynamic",
       "quantization_config.weight_block_size": 128},
)  # fmt: skip
QWEN3_235B_A22B = _llm(
    "qwen3_235b_a22b", "Qwen/Qwen3-235B-A22B", "Qwen3-235B-A22B",
    hidden_size=4096, num_attention_heads=64, num_key_value_heads=4, head_dim=128, num_hidden_layers=94,
    num_experts=128, num_experts_per_tok=8, moe_intermediate_size=1536, norm_topk_prob=True,
    rms_norm_eps=1e-06, rope_theta=1000000.0, vocab_size=151936,
)  # fmt: skip
QWEN1_5_MOE_A2_7B = _llm(
    "qwen1_5_moe_a2_7b", "Qwen/Qwen1.5-MoE-A2.7B", "Qwen1.5-MoE-A2.7B",
    hidden_size=2048, num_attention_heads=16, num_key_value_heads=16, num_hidden_layers=24,
    num_experts=60, num_experts_per_tok=4, moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
    norm_topk_prob=False, rms_norm_eps=1e-06, vocab_size=151936,
)  # fmt: skip
QWEN2_57B_A14B = _llm(
    "qwen2_57b_a14b", "Qwen/Qwen2-57B-A14B", "Qwen2-57B-A14B",
    hidden_size=3584, num_attention_heads=28, num_key_value_heads=4, num_hidden_layers=28,
    num_experts=64, num_experts_per_tok=8, moe_intermediate_size=2560, shared_expert_intermediate_size=20480,
    norm_topk_prob=False, rms_norm_eps=1e-06, vocab_size=151936,
)  # fmt: skip

# -- DeepSeek and Kimi (multi-head latent attention) ------------------------------------------------

_DEEPSEEK_V3_CONFIG: dict[str, int | float | str | bool] = dict(
    hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61,
    num_attention_heads=128, num_key_value_heads=128, q_lora_rank=1536, kv_lora_rank=512,
    qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, n_routed_experts=256, n_shared_experts=1,
    num_experts_per_tok=8, n_group=8, topk_group=4, routed_scaling_factor=2.5, scoring_func="sigmoid",
    topk_method="noaux_tc", norm_topk_prob=True, first_k_dense_replace=3, rms_norm_eps=1e-06,
    rope_theta=10000, vocab_size=129280, max_position_embeddings=163840,
    **_flat(
        rope_scaling={
            "type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
        },
        quantization_config={"fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": 128},
    ),
)  # fmt: skip
DEEPSEEK_R1 = _llm("deepseek_r1", "deepseek-ai/DeepSeek-R1", "DeepSeek-R1", **_DEEPSEEK_V3_CONFIG)
DEEPSEEK_V3_0324 = _llm(
    "deepseek_v3_0324", "deepseek-ai/DeepSeek-V3-0324", "DeepSeek-V3-0324", **_DEEPSEEK_V3_CONFIG
)
DEEPSEEK_V2 = _llm(
    "deepseek_v2", "deepseek-ai/DeepSeek-V2", "DeepSeek-V2",
    hidden_size=5120, intermediate_size=12288, moe_intermediate_size=1536, num_hidden_layers=60,
    num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
    v_head_dim=128, n_routed_experts=160, n_shared_experts=2, num_experts_per_tok=6, n_group=8, topk_group=3,
    routed_scaling_factor=16.0, scoring_func="softmax", topk_method="group_limited_greedy",
    norm_topk_prob=False, rms_norm_eps=1e-06, vocab_size=102400,
)  # fmt: skip
DEEPSEEK_V2_LITE = _llm(
    "deepseek_v2_lite", "deepseek-ai/DeepSeek-V2-Lite", "DeepSeek-V2-Lite",
    hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=27,
    num_attention_heads=16, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
    n_routed_experts=64, n_shared_experts=2, num_experts_per_tok=6, n_group=1, topk_group=1,
    routed_scaling_factor=1.0, scoring_func="softmax", topk_method="greedy", norm_topk_prob=False,
    rms_norm_eps=1e-06, vocab_size=102400,
)  # fmt: skip
KIMI_K2 = _llm(
    "kimi_k2", "moonshotai/Kimi-K2-Instruct", "Kimi-K2-Instruct",
    hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61,
    num_attention_heads=64, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
    v_head_dim=128, n_routed_experts=384, n_shared_experts=1, num_experts_per_tok=8, n_group=1, topk_group=1,
    routed_scaling_factor=2.827, scoring_func="sigmoid", topk_method="noaux_tc", norm_topk_prob=True,
    rms_norm_eps=1e-06, vocab_size=163840,
    **_flat(quantization_config={"fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": 128}),
)  # fmt: skip

# -- Gemma ------------------------------------------------------------------------------------------

GEMMA_2B = _llm(
    "gemma_2b", "google/gemma-2b", "Gemma-2B",
    hidden_size=2048, intermediate_size=16384, num_attention_heads=8, num_key_value_heads=1, head_dim=256,
    num_hidden_layers=18, rms_norm_eps=1e-06, rope_theta=10000.0, vocab_size=256000,
)  # fmt: skip
GEMMA_7B = _llm(
    "gemma_7b", "google/gemma-7b", "Gemma-7B",
    hidden_size=3072, intermediate_size=24576, num_attention_heads=16, num_key_value_heads=16, head_dim=256,
    num_hidden_layers=28, rms_norm_eps=1e-06, rope_theta=10000.0, vocab_size=256000,
)  # fmt: skip
GEMMA_2_2B = _llm(
    "gemma2_2b", "google/gemma-2-2b", "Gemma-2-2B",
    hidden_size=2304, intermediate_size=9216, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
    num_hidden_layers=26, rms_norm_eps=1e-06, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
    query_pre_attn_scalar=256, sliding_window=4096, vocab_size=256000, hidden_activation="gelu_pytorch_tanh",
)  # fmt: skip
GEMMA_2_9B = _llm(
    "gemma2_9b", "google/gemma-2-9b", "Gemma-2-9B",
    hidden_size=3584, intermediate_size=14336, num_attention_heads=16, num_key_value_heads=8, head_dim=256,
    num_hidden_layers=42, rms_norm_eps=1e-06, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
    query_pre_attn_scalar=256, sliding_window=4096, vocab_size=256000, hidden_activation="gelu_pytorch_tanh",
)  # fmt: skip
GEMMA_2_27B = _llm(
    "gemma2_27b", "google/gemma-2-27b", "Gemma-2-27B",
    hidden_size=4608, intermediate_size=36864, num_attention_heads=32, num_key_value_heads=16, head_dim=128,
    num_hidden_layers=46, rms_norm_eps=1e-06, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
    query_pre_attn_scalar=144, sliding_window=4096, vocab_size=256000, hidden_activation="gelu_pytorch_tanh",
)  # fmt: skip
GEMMA_3_1B = _llm(
    "gemma3_1b", "google/gemma-3-1b-pt", "Gemma-3-1B",
    hidden_size=1152, intermediate_size=6912, num_attention_heads=4, num_key_value_heads=1, head_dim=256,
    num_hidden_layers=26, rms_norm_eps=1e-06, query_pre_attn_scalar=256, sliding_window=512,
    rope_theta=1000000.0, rope_local_base_freq=10000.0, vocab_size=262144,
    hidden_activation="gelu_pytorch_tanh",
)  # fmt: skip

# -- Phi --------------------------------------------------------------------------------------------

PHI_2 = _llm(
    "phi2", "microsoft/phi-2", "Phi-2",
    hidden_size=2560, intermediate_size=10240, num_attention_heads=32, num_key_value_heads=32,
    num_hidden_layers=32, layer_norm_eps=1e-05, partial_rotary_factor=0.4, rope_theta=10000.0,
    vocab_size=51200, hidden_act="gelu_new",
)  # fmt: skip
PHI_3_MINI = _llm(
    "phi3_mini", "microsoft/Phi-3-mini-4k-instruct", "Phi-3-mini-4k-instruct",
    hidden_size=3072, intermediate_size=8192, num_attention_heads=32, num_key_value_heads=32,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=10000.0, vocab_size=32064,
)  # fmt: skip
PHI_3_MEDIUM = _llm(
    "phi3_medium", "microsoft/Phi-3-medium-4k-instruct", "Phi-3-medium-4k-instruct",
    hidden_size=5120, intermediate_size=17920, num_attention_heads=40, num_key_value_heads=10,
    num_hidden_layers=40, rms_norm_eps=1e-05, rope_theta=10000.0, vocab_size=32064,
)  # fmt: skip
PHI_4 = _llm(
    "phi4", "microsoft/phi-4", "Phi-4",
    hidden_size=5120, intermediate_size=17920, num_attention_heads=40, num_key_value_heads=10,
    num_hidden_layers=40, rms_norm_eps=1e-05, rope_theta=250000, vocab_size=100352,
)  # fmt: skip
PHI_4_MINI = _llm(
    "phi4_mini", "microsoft/Phi-4-mini-instruct", "Phi-4-mini-instruct",
    hidden_size=3072, intermediate_size=8192, num_attention_heads=24, num_key_value_heads=8,
    num_hidden_layers=32, rms_norm_eps=1e-05, partial_rotary_factor=0.75, rope_theta=10000.0,
    vocab_size=200064,
)  # fmt: skip

# -- Falcon -----------------------------------------------------------------------------------------

FALCON_7B = _llm(
    "falcon_7b", "tiiuae/falcon-7b", "Falcon-7B",
    hidden_size=4544, num_attention_heads=71, multi_query=True, num_hidden_layers=32,
    layer_norm_epsilon=1e-05, parallel_attn=True, vocab_size=65024,
)  # fmt: skip
FALCON_40B = _llm(
    "falcon_40b", "tiiuae/falcon-40b", "Falcon-40B",
    hidden_size=8192, num_attention_heads=128, num_kv_heads=8, new_decoder_architecture=True,
    num_hidden_layers=60, layer_norm_epsilon=1e-05, parallel_attn=True, vocab_size=65024,
)  # fmt: skip
FALCON3_7B = _llm(
    "falcon3_7b", "tiiuae/Falcon3-7B-Base", "Falcon3-7B-Base",
    hidden_size=3072, intermediate_size=23040, num_attention_heads=12, num_key_value_heads=4, head_dim=256,
    num_hidden_layers=28, rms_norm_eps=1e-06, rope_theta=1000042, vocab_size=131072,
)  # fmt: skip

# -- other dense models -----------------------------------------------------------------------------

OLMO_2_7B = _llm(
    "olmo2_7b", "allenai/OLMo-2-1124-7B", "OLMo-2-1124-7B",
    hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=32,
    num_hidden_layers=32, rms_norm_eps=1e-06, rope_theta=500000, vocab_size=100352,
)  # fmt: skip
OLMO_1B = _llm(
    "olmo_1b", "allenai/OLMo-1B-hf", "OLMo-1B",
    hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_key_value_heads=16,
    num_hidden_layers=16, vocab_size=50304,
)  # fmt: skip
GLM_4_9B = _llm(
    "glm4_9b", "THUDM/glm-4-9b-chat-hf", "GLM-4-9B-Chat",
    hidden_size=4096, intermediate_size=13696, num_attention_heads=32, num_key_value_heads=2, head_dim=128,
    num_hidden_layers=40, rms_norm_eps=1.5625e-07, partial_rotary_factor=0.5, attention_bias=True,
    rope_theta=10000.0, vocab_size=151552,
)  # fmt: skip
YI_6B = _llm(
    "yi_6b", "01-ai/Yi-6B", "Yi-6B",
    hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=4,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=5000000.0, vocab_size=64000,
)  # fmt: skip
YI_34B = _llm(
    "yi_34b", "01-ai/Yi-34B", "Yi-34B",
    hidden_size=7168, intermediate_size=20480, num_attention_heads=56, num_key_value_heads=8,
    num_hidden_layers=60, rms_norm_eps=1e-05, rope_theta=5000000.0, vocab_size=64000,
)  # fmt: skip
INTERNLM2_5_7B = _llm(
    "internlm2_5_7b", "internlm/internlm2_5-7b-chat", "InternLM2.5-7B-Chat (internlm2_5-7b-chat)",
    hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=1000000, vocab_size=92544,
)  # fmt: skip
INTERNLM3_8B = _llm(
    "internlm3_8b", "internlm/internlm3-8b-instruct", "InternLM3-8B-Instruct",
    hidden_size=4096, intermediate_size=10240, num_attention_heads=32, num_key_value_heads=2, head_dim=128,
    num_hidden_layers=48, rms_norm_eps=1e-05, vocab_size=128512,
)  # fmt: skip
BAICHUAN2_7B = _llm(
    "baichuan2_7b", "baichuan-inc/Baichuan2-7B-Base", "Baichuan2-7B-Base",
    hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_hidden_layers=32,
    rms_norm_eps=1e-06, vocab_size=125696,
)  # fmt: skip
BAICHUAN2_13B = _llm(
    "baichuan2_13b", "baichuan-inc/Baichuan2-13B-Base", "Baichuan2-13B-Base",
    hidden_size=5120, intermediate_size=13696, num_attention_heads=40, num_hidden_layers=40,
    rms_norm_eps=1e-06, vocab_size=125696,
)  # fmt: skip
MINICPM_2B = _llm(
    "minicpm_2b", "openbmb/MiniCPM-2B-sft-bf16", "MiniCPM-2B-sft-bf16",
    hidden_size=2304, intermediate_size=5760, num_attention_heads=36, num_key_value_heads=36,
    num_hidden_layers=40, rms_norm_eps=1e-05, scale_emb=12, dim_model_base=256, scale_depth=1.4,
    vocab_size=122753,
)  # fmt: skip
STABLELM_2_1_6B = _llm(
    "stablelm2_1_6b", "stabilityai/stablelm-2-1_6b", "StableLM-2-1.6B (stablelm-2-1_6b)",
    hidden_size=2048, intermediate_size=5632, num_attention_heads=32, num_key_value_heads=32,
    num_hidden_layers=24, layer_norm_eps=1e-05, partial_rotary_factor=0.25, use_qkv_bias=True,
    rope_theta=10000, vocab_size=100352,
)  # fmt: skip
GRANITE_3_1_8B = _llm(
    "granite3_1_8b", "ibm-granite/granite-3.1-8b-instruct", "Granite-3.1-8B-Instruct",
    hidden_size=4096, intermediate_size=12800, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=40, rms_norm_eps=1e-05, embedding_multiplier=12.0, attention_multiplier=0.0078125,
    residual_multiplier=0.22, logits_scaling=16.0, vocab_size=49155,
)  # fmt: skip
GRANITE_3_0_1B_A400M = _llm(
    "granite3_0_1b_a400m", "ibm-granite/granite-3.0-1b-a400m-base", "Granite-3.0-1B-A400M-Base",
    hidden_size=1024, intermediate_size=512, num_attention_heads=16, num_key_value_heads=8,
    num_hidden_layers=24, num_local_experts=32, num_experts_per_tok=8, vocab_size=49155,
)  # fmt: skip
GRANITE_3_0_3B_A800M = _llm(
    "granite3_0_3b_a800m", "ibm-granite/granite-3.0-3b-a800m-base", "Granite-3.0-3B-A800M-Base",
    hidden_size=1536, intermediate_size=512, num_attention_heads=24, num_key_value_heads=8,
    num_hidden_layers=32, num_local_experts=40, num_experts_per_tok=8, vocab_size=49155,
)  # fmt: skip
COMMAND_R = _llm(
    "command_r_35b", "CohereForAI/c4ai-command-r-v01", "Command R (c4ai-command-r-v01)",
    hidden_size=8192, intermediate_size=22528, num_attention_heads=64, num_key_value_heads=64,
    num_hidden_layers=40, layer_norm_eps=1e-05, logit_scale=0.0625, rope_theta=8000000.0, vocab_size=256000,
)  # fmt: skip
SMOLLM2_135M = _llm(
    "smollm2_135m", "HuggingFaceTB/SmolLM2-135M", "SmolLM2-135M",
    hidden_size=576, intermediate_size=1536, num_attention_heads=9, num_key_value_heads=3,
    num_hidden_layers=30, rms_norm_eps=1e-05, rope_theta=100000, vocab_size=49152, tie_word_embeddings=True,
)  # fmt: skip
SMOLLM2_360M = _llm(
    "smollm2_360m", "HuggingFaceTB/SmolLM2-360M", "SmolLM2-360M",
    hidden_size=960, intermediate_size=2560, num_attention_heads=15, num_key_value_heads=5,
    num_hidden_layers=32, rms_norm_eps=1e-05, rope_theta=100000, vocab_size=49152, tie_word_embeddings=True,
)  # fmt: skip
SMOLLM2_1_7B = _llm(
    "smollm2_1_7b", "HuggingFaceTB/SmolLM2-1.7B", "SmolLM2-1.7B",
    hidden_size=2048, intermediate_size=8192, num_attention_heads=32, num_key_value_heads=32,
    num_hidden_layers=24, rms_norm_eps=1e-05, rope_theta=130000, vocab_size=49152,
)  # fmt: skip
MINITRON_8B = _llm(
    "mistral_nemo_minitron_8b", "nvidia/Mistral-NeMo-Minitron-8B-Base", "Mistral-NeMo-Minitron-8B-Base",
    hidden_size=4096, intermediate_size=11520, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=40, rms_norm_eps=1e-05, vocab_size=131072,
)  # fmt: skip
NEMOTRON_MINI_4B = _llm(
    "nemotron_mini_4b", "nvidia/Nemotron-Mini-4B-Instruct", "Nemotron-Mini-4B-Instruct",
    hidden_size=3072, intermediate_size=9216, num_attention_heads=24, num_key_value_heads=8, head_dim=128,
    num_hidden_layers=32, norm_eps=1e-05, partial_rotary_factor=0.5, hidden_act="relu2", vocab_size=256000,
)  # fmt: skip

# -- other mixtures of experts ------------------------------------------------------------------------

OLMOE_1B_7B = _llm(
    "olmoe_1b_7b", "allenai/OLMoE-1B-7B-0924", "OLMoE-1B-7B-0924",
    hidden_size=2048, intermediate_size=1024, num_attention_heads=16, num_key_value_heads=16,
    num_hidden_layers=16, num_experts=64, num_experts_per_tok=8, norm_topk_prob=False, rms_norm_eps=1e-05,
    vocab_size=50304,
)  # fmt: skip
DBRX = _llm(
    "dbrx", "databricks/dbrx-base", "DBRX Base (dbrx-base)",
    d_model=6144, n_heads=48, n_layers=40, vocab_size=100352,
    **_flat(
        attn_config={"kv_n_heads": 8, "clip_qkv": 8, "rope_theta": 500000},
        ffn_config={"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4,
                    "moe_normalize_expert_weights": 1},
    ),
)  # fmt: skip
JAMBA = _llm(
    "jamba_v0_1", "ai21labs/Jamba-v0.1", "Jamba-v0.1",
    hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
    num_hidden_layers=32, num_experts=16, num_experts_per_tok=2, mamba_d_state=16, mamba_d_conv=4,
    mamba_expand=2, mamba_dt_rank=256, rms_norm_eps=1e-06, vocab_size=65536,
)  # fmt: skip
_GPT_OSS_ROPE = _flat(
    rope_scaling={
        "rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
        "original_max_position_embeddings": 4096,
    }
)  # fmt: skip
GPT_OSS_20B = _llm(
    "gpt_oss_20b", "openai/gpt-oss-20b", "gpt-oss-20b",
    hidden_size=2880, intermediate_size=2880, num_attention_heads=64, num_key_value_heads=8, head_dim=64,
    num_hidden_layers=24, num_local_experts=32, num_experts_per_tok=4, sliding_window=128,
    rms_norm_eps=1e-05, rope_theta=150000, swiglu_limit=7.0, vocab_size=201088, **_GPT_OSS_ROPE,
)  # fmt: skip
GPT_OSS_120B = _llm(
    "gpt_oss_120b", "openai/gpt-oss-120b", "gpt-oss-120b",
    hidden_size=2880, intermediate_size=2880, num_attention_heads=64, num_key_value_heads=8, head_dim=64,
    num_hidden_layers=36, num_local_experts=128, num_experts_per_tok=4, sliding_window=128,
    rms_norm_eps=1e-05, rope_theta=150000, swiglu_limit=7.0, vocab_size=201088, **_GPT_OSS_ROPE,
)  # fmt: skip

# -- state-space models -----------------------------------------------------------------------------

MAMBA_CODESTRAL_7B = _llm(
    "mamba_codestral_7b", "mistralai/Mamba-Codestral-7B-v0.1", "Mamba-Codestral-7B-v0.1 (Mamba2)",
    hidden_size=4096, num_heads=128, head_dim=64, n_groups=8, state_size=128, expand=2, conv_kernel=4,
    chunk_size=256, num_hidden_layers=64, vocab_size=32768,
)  # fmt: skip
MAMBA_2_8B = _llm(
    "mamba_2_8b", "state-spaces/mamba-2.8b-hf", "Mamba-2.8B (mamba-2.8b-hf)",
    hidden_size=2560, intermediate_size=5120, state_size=16, conv_kernel=4, time_step_rank=160,
    num_hidden_layers=64, vocab_size=50280,
)  # fmt: skip
FALCON_MAMBA_7B = _llm(
    "falcon_mamba_7b", "tiiuae/falcon-mamba-7b", "Falcon-Mamba-7B",
    hidden_size=4096, intermediate_size=8192, state_size=16, conv_kernel=4, time_step_rank=256,
    num_hidden_layers=64, vocab_size=65024,
)  # fmt: skip
