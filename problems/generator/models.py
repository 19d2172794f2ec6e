"""Model configurations the catalogue is generated from: plain data, one entry per model.

Each entry copies numbers from the model's published ``config.json`` on the Hugging Face Hub, under
the same key names (a nested config is flattened with a dot, for example
``vision_config.embed_dim``), so an entry can be checked against the file line by line. Constants
that live in the modelling code rather than in config.json (a LayerNorm epsilon hard-coded in
diffusers, Whisper's conv kernel size) are not model data: the templates take them as parameters
and say where they come from.

Adding a model is adding one :class:`ModelConfig` here and one line in ``catalogue.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..definition import Category


@dataclass(frozen=True)
class ModelConfig:
    """One open model and the configuration numbers the templates read."""

    key: str
    """Prefix of the problem names, lowercase with underscores, e.g. ``llama3_1_8b``."""
    hf_id: str
    """The Hugging Face repository the numbers come from."""
    display_name: str
    """How descriptions name the model, e.g. ``Llama-3.1-8B``."""
    category: Category
    config: Mapping[str, int | float | str | bool] = field(default_factory=dict)
    """Numbers from config.json, keyed as in the file."""

    def integer(self, key: str) -> int:
        """An integer entry of the config; raises KeyError naming the model and the key."""
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{self.hf_id}: config[{key!r}] = {value!r} is not an integer")
        return value

    def number(self, key: str) -> float:
        """A float entry of the config (an int is accepted)."""
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{self.hf_id}: config[{key!r}] = {value!r} is not a number")
        return float(value)

    def _get(self, key: str) -> int | float | str | bool:
        if key not in self.config:
            raise KeyError(f"{self.hf_id}: the template needs config[{key!r}]; add it from the model's config.json")
        return self.config[key]


LLAMA_3_1_8B = ModelConfig(
    key="llama3_1_8b",
    hf_id="meta-llama/Llama-3.1-8B",
    display_name="Llama-3.1-8B",
    category=Category.llm,
    config={
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 32,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "max_position_embeddings": 131072,
        "vocab_size": 128256,
    },
)

LLAMA_3_2_1B = ModelConfig(
    key="llama3_2_1b",
    hf_id="meta-llama/Llama-3.2-1B",
    display_name="Llama-3.2-1B",
    category=Category.llm,
    config={
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "num_hidden_layers": 16,
        "rms_norm_eps": 1e-05,
        "hidden_act": "silu",
        "rope_theta": 500000.0,
    },
)

QWEN3_8B = ModelConfig(
    key="qwen3_8b",
    hf_id="Qwen/Qwen3-8B",
    display_name="Qwen3-8B",
    category=Category.llm,
    config={
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 36,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000,
        "vocab_size": 151936,
    },
)

QWEN3_30B_A3B = ModelConfig(
    key="qwen3_30b_a3b",
    hf_id="Qwen/Qwen3-30B-A3B",
    display_name="Qwen3-30B-A3B",
    category=Category.llm,
    config={
        "hidden_size": 2048,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "norm_topk_prob": True,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "num_hidden_layers": 48,
        "rms_norm_eps": 1e-06,
    },
)

DEEPSEEK_V3 = ModelConfig(
    key="deepseek_v3",
    hf_id="deepseek-ai/DeepSeek-V3",
    display_name="DeepSeek-V3",
    category=Category.llm,
    config={
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "num_attention_heads": 128,
        "rms_norm_eps": 1e-06,
        # quantization_config: fp8 e4m3, dynamic activation scales, 128x128 weight blocks
        # (activations are quantised in 1x128 groups, matching the weights' K blocks).
        "quantization_config.fmt": "e4m3",
        "quantization_config.activation_scheme": "dynamic",
        "quantization_config.weight_block_size": 128,
    },
)

FLUX_1_DEV = ModelConfig(
    key="flux1_dev",
    hf_id="black-forest-labs/FLUX.1-dev",
    display_name="FLUX.1-dev",
    category=Category.diffusion,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 128,
        "transformer.num_attention_heads": 24,
        "transformer.num_layers": 19,
        "transformer.num_single_layers": 38,
        "transformer.in_channels": 64,
        "transformer.joint_attention_dim": 4096,
        "transformer.pooled_projection_dim": 768,
    },
)

SD_1_5 = ModelConfig(
    key="sd1_5",
    hf_id="stable-diffusion-v1-5/stable-diffusion-v1-5",
    display_name="Stable Diffusion v1.5",
    category=Category.diffusion,
    config={
        # unet/config.json
        "unet.block_out_channels.0": 320,
        "unet.norm_num_groups": 32,
        "unet.norm_eps": 1e-05,
        "unet.in_channels": 4,
        "unet.sample_size": 64,
        "unet.act_fn": "silu",
    },
)

SIGLIP_SO400M = ModelConfig(
    key="siglip_so400m",
    hf_id="google/siglip-so400m-patch14-384",
    display_name="SigLIP so400m-patch14-384",
    category=Category.vision,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 384,
        "vision_config.patch_size": 14,
        "vision_config.intermediate_size": 4304,
        "vision_config.num_attention_heads": 16,
        "vision_config.num_hidden_layers": 27,
        # SiglipVisionConfig defaults, not overridden in config.json
        "vision_config.num_channels": 3,
        "vision_config.layer_norm_eps": 1e-06,
    },
)

VIT_BASE_16 = ModelConfig(
    key="vit_base_p16",
    hf_id="google/vit-base-patch16-224",
    display_name="ViT-Base/16 (224)",
    category=Category.vision,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "image_size": 224,
        "patch_size": 16,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "layer_norm_eps": 1e-12,
    },
)

WHISPER_LARGE_V3 = ModelConfig(
    key="whisper_large_v3",
    hf_id="openai/whisper-large-v3",
    display_name="Whisper large-v3",
    category=Category.audio,
    config={
        "d_model": 1280,
        "num_mel_bins": 128,
        "encoder_layers": 32,
        "encoder_attention_heads": 20,
        "encoder_ffn_dim": 5120,
        "max_source_positions": 1500,
        "activation_function": "gelu",
    },
)

WAN_2_1_T2V_1_3B = ModelConfig(
    key="wan2_1_t2v_1_3b",
    hf_id="Wan-AI/Wan2.1-T2V-1.3B-Diffusers",
    display_name="Wan2.1-T2V-1.3B",
    category=Category.video,
    config={
        # transformer/config.json (patch_size [1, 2, 2] flattened)
        "transformer.patch_size.t": 1,
        "transformer.patch_size.h": 2,
        "transformer.patch_size.w": 2,
        "transformer.in_channels": 16,
        "transformer.num_attention_heads": 12,
        "transformer.attention_head_dim": 128,
        "transformer.ffn_dim": 8960,
        "transformer.num_layers": 30,
        "transformer.text_dim": 4096,
        "transformer.eps": 1e-06,
    },
)

QWEN2_VL_7B = ModelConfig(
    key="qwen2_vl_7b",
    hf_id="Qwen/Qwen2-VL-7B-Instruct",
    display_name="Qwen2-VL-7B-Instruct",
    category=Category.multimodal,
    config={
        "hidden_size": 3584,
        "vision_config.embed_dim": 1280,
        "vision_config.hidden_size": 3584,
        "vision_config.spatial_merge_size": 2,
        "vision_config.patch_size": 14,
        "vision_config.temporal_patch_size": 2,
        "vision_config.depth": 32,
        "vision_config.num_heads": 16,
        "vision_config.mlp_ratio": 4,
        "vision_config.in_chans": 3,
    },
)

MODELS: tuple[ModelConfig, ...] = (
    LLAMA_3_1_8B,
    LLAMA_3_2_1B,
    QWEN3_8B,
    QWEN3_30B_A3B,
    DEEPSEEK_V3,
    FLUX_1_DEV,
    SD_1_5,
    SIGLIP_SO400M,
    VIT_BASE_16,
    WHISPER_LARGE_V3,
    WAN_2_1_T2V_1_3B,
    QWEN2_VL_7B,
)
"""Every model the catalogue draws from."""
