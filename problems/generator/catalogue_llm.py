"""Language-model problems: one line per problem."""

from __future__ import annotations

from . import llm
from .entry import Entry
from .models import DEEPSEEK_V3, LLAMA_3_1_8B, LLAMA_3_2_1B, QWEN3_8B, QWEN3_30B_A3B, ModelConfig

LLM_MODELS: tuple[ModelConfig, ...] = ()
"""Models added for the language-model problems beyond the starter set in ``models.py``."""

LLM_ENTRIES: tuple[Entry, ...] = (
    Entry(llm.rmsnorm, QWEN3_8B),
    Entry(llm.fused_add_rmsnorm, LLAMA_3_1_8B),
    Entry(llm.rope, LLAMA_3_1_8B),
    Entry(llm.gqa_decode, LLAMA_3_1_8B),
    Entry(llm.qkv_proj_gemm, LLAMA_3_1_8B),
    Entry(llm.swiglu_mlp, LLAMA_3_2_1B),
    Entry(llm.moe_topk_softmax_router, QWEN3_30B_A3B),
    Entry(llm.fp8_per_token_group_quant, DEEPSEEK_V3),
)
