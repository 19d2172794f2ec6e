"""The starter catalogue: which template runs on which model.

One line per problem. To add a model, add its :class:`~.models.ModelConfig` to ``models.py`` and a
line here, then run ``python -m solforge.problems.generator`` to write the folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..load import Problem
from . import llm, media
from .models import (
    DEEPSEEK_V3,
    FLUX_1_DEV,
    LLAMA_3_1_8B,
    LLAMA_3_2_1B,
    QWEN2_VL_7B,
    QWEN3_8B,
    QWEN3_30B_A3B,
    SD_1_5,
    SIGLIP_SO400M,
    VIT_BASE_16,
    WAN_2_1_T2V_1_3B,
    WHISPER_LARGE_V3,
    ModelConfig,
)


@dataclass(frozen=True)
class Entry:
    """One catalogue problem: a template applied to a model, with optional template options."""

    template: Callable[..., Problem]
    model: ModelConfig
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Problem:
        return self.template(self.model, **self.options)


ENTRIES: tuple[Entry, ...] = (
    # llm
    Entry(llm.rmsnorm, QWEN3_8B),
    Entry(llm.fused_add_rmsnorm, LLAMA_3_1_8B),
    Entry(llm.rope, LLAMA_3_1_8B),
    Entry(llm.gqa_decode, LLAMA_3_1_8B),
    Entry(llm.qkv_proj_gemm, LLAMA_3_1_8B),
    Entry(llm.swiglu_mlp, LLAMA_3_2_1B),
    Entry(llm.moe_topk_softmax_router, QWEN3_30B_A3B),
    Entry(llm.fp8_per_token_group_quant, DEEPSEEK_V3),
    # diffusion
    Entry(media.adaln_modulation, FLUX_1_DEV),
    Entry(media.groupnorm_silu, SD_1_5),
    # vision
    Entry(media.patch_embed_layernorm, SIGLIP_SO400M),
    Entry(media.attention_softmax, VIT_BASE_16),
    # audio
    Entry(media.conv1d_gelu, WHISPER_LARGE_V3),
    # video
    Entry(media.patch_embed_3d, WAN_2_1_T2V_1_3B),
    # multimodal
    Entry(media.vision_patch_merger, QWEN2_VL_7B),
)
