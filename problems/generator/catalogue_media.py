"""Diffusion, vision, audio, video and multimodal problems: one line per problem."""

from __future__ import annotations

from . import media
from .entry import Entry
from .models import (
    FLUX_1_DEV,
    QWEN2_VL_7B,
    SD_1_5,
    SIGLIP_SO400M,
    VIT_BASE_16,
    WAN_2_1_T2V_1_3B,
    WHISPER_LARGE_V3,
    ModelConfig,
)

MEDIA_MODELS: tuple[ModelConfig, ...] = ()
"""Models added for these problems beyond the starter set in ``models.py``."""

MEDIA_ENTRIES: tuple[Entry, ...] = (
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
