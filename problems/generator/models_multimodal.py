"""Vision-language models added for the media catalogue: Qwen2-VL and Qwen2.5-VL, InternVL2,
Idefics3, SmolVLM, Gemma 3, PaliGemma, BLIP-2, Llama 3.2 Vision, Pixtral, LLaVA-OneVision and
Janus-Pro.

Same rules as :mod:`.models`: numbers copied from each repository's published ``config.json``,
nested configs flattened with dots, list entries by index (``.0``, ``.1``). A value that is a class
default rather than written in the file says so in a comment. Constants that live in modelling code
are template options, not model data.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

MM = Category.multimodal


def _qwen2_vl(key: str, name: str, hidden: int) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"Qwen/{name}",
        display_name=name,
        category=MM,
        config={
            "hidden_size": hidden,
            "vision_config.embed_dim": 1280,
            "vision_config.hidden_size": hidden,
            "vision_config.spatial_merge_size": 2,
            "vision_config.patch_size": 14,
            "vision_config.temporal_patch_size": 2,
            "vision_config.depth": 32,
            "vision_config.num_heads": 16,
            "vision_config.mlp_ratio": 4,
            "vision_config.in_chans": 3,
        },
    )


QWEN2_VL_2B = _qwen2_vl("qwen2_vl_2b", "Qwen2-VL-2B-Instruct", 1536)
QWEN2_VL_72B = _qwen2_vl("qwen2_vl_72b", "Qwen2-VL-72B-Instruct", 8192)


def _qwen2_5_vl(key: str, name: str, hidden: int) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"Qwen/{name}",
        display_name=name,
        category=MM,
        config={
            "hidden_size": hidden,
            "vision_config.hidden_size": 1280,
            "vision_config.out_hidden_size": hidden,
            "vision_config.intermediate_size": 3420,
            "vision_config.depth": 32,
            "vision_config.num_heads": 16,
            "vision_config.patch_size": 14,
            "vision_config.spatial_merge_size": 2,
            "vision_config.temporal_patch_size": 2,
            "vision_config.window_size": 112,
            "vision_config.hidden_act": "silu",
        },
    )


QWEN2_5_VL_3B = _qwen2_5_vl("qwen2_5_vl_3b", "Qwen2.5-VL-3B-Instruct", 2048)
QWEN2_5_VL_7B = _qwen2_5_vl("qwen2_5_vl_7b", "Qwen2.5-VL-7B-Instruct", 3584)
QWEN2_5_VL_72B = _qwen2_5_vl("qwen2_5_vl_72b", "Qwen2.5-VL-72B-Instruct", 8192)


def _internvl(key: str, name: str, llm_hidden: int) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"OpenGVLab/{name}",
        display_name=name,
        category=MM,
        config={
            "vision_config.hidden_size": 1024,
            "vision_config.image_size": 448,
            "vision_config.patch_size": 14,
            "downsample_ratio": 0.5,
            "llm_config.hidden_size": llm_hidden,
        },
    )


INTERNVL2_1B = _internvl("internvl2_1b", "InternVL2-1B", 896)
INTERNVL2_2B = _internvl("internvl2_2b", "InternVL2-2B", 2048)

IDEFICS3_8B = ModelConfig(
    key="idefics3_8b",
    hf_id="HuggingFaceM4/Idefics3-8B-Llama3",
    display_name="Idefics3-8B-Llama3",
    category=MM,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 364,
        "vision_config.patch_size": 14,
        "scale_factor": 2,
        "text_config.hidden_size": 4096,
    },
)

SMOLVLM_256M = ModelConfig(
    key="smolvlm_256m",
    hf_id="HuggingFaceTB/SmolVLM-256M-Instruct",
    display_name="SmolVLM-256M-Instruct",
    category=MM,
    config={
        "vision_config.hidden_size": 768,
        "vision_config.image_size": 512,
        "vision_config.patch_size": 16,
        "scale_factor": 4,
        "text_config.hidden_size": 576,
    },
)


SMOLVLM_INSTRUCT = ModelConfig(
    key="smolvlm_2b",
    hf_id="HuggingFaceTB/SmolVLM-Instruct",
    display_name="SmolVLM-Instruct (2B)",
    category=MM,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 384,
        "vision_config.patch_size": 14,
        "scale_factor": 3,
        "text_config.hidden_size": 2048,
    },
)


def _gemma3(key: str, name: str, hidden: int) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"google/{name}",
        display_name=name.replace("gemma-3-", "Gemma-3-").replace("b-it", "B-it"),
        category=MM,
        config={
            "mm_tokens_per_image": 256,
            "text_config.hidden_size": hidden,
            "vision_config.hidden_size": 1152,
            "vision_config.image_size": 896,
            "vision_config.patch_size": 14,
            "vision_config.layer_norm_eps": 1e-06,
        },
    )


GEMMA3_4B = _gemma3("gemma3_4b", "gemma-3-4b-it", 2560)
GEMMA3_12B = _gemma3("gemma3_12b", "gemma-3-12b-it", 3840)
GEMMA3_27B = _gemma3("gemma3_27b", "gemma-3-27b-it", 5376)

PALIGEMMA_3B = ModelConfig(
    key="paligemma_3b_224",
    hf_id="google/paligemma-3b-pt-224",
    display_name="PaliGemma-3B (paligemma-3b-pt-224)",
    category=MM,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 224,
        "vision_config.patch_size": 14,
        "vision_config.projection_dim": 2048,
        "text_config.hidden_size": 2048,
    },
)

PALIGEMMA2_3B = ModelConfig(
    key="paligemma2_3b_224",
    hf_id="google/paligemma2-3b-pt-224",
    display_name="PaliGemma 2 3B (paligemma2-3b-pt-224)",
    category=MM,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 224,
        "vision_config.patch_size": 14,
        "vision_config.projection_dim": 2304,
        "text_config.hidden_size": 2304,
    },
)

BLIP2_OPT_2_7B = ModelConfig(
    key="blip2_opt_2_7b",
    hf_id="Salesforce/blip2-opt-2.7b",
    display_name="BLIP-2 OPT-2.7b (blip2-opt-2.7b)",
    category=MM,
    config={
        "num_query_tokens": 32,
        "vision_config.hidden_size": 1408,
        "vision_config.image_size": 224,
        "vision_config.patch_size": 14,
        "qformer_config.hidden_size": 768,
        "qformer_config.num_attention_heads": 12,
        "qformer_config.encoder_hidden_size": 1408,
        "qformer_config.layer_norm_eps": 1e-12,
        "qformer_config.cross_attention_frequency": 2,
    },
)


def _llama_vision(key: str, name: str, hidden: int, heads: int) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"meta-llama/{name}",
        display_name=name,
        category=MM,
        config={
            "text_config.hidden_size": hidden,
            "text_config.num_attention_heads": heads,
            "text_config.num_key_value_heads": 8,
            "text_config.rms_norm_eps": 1e-05,
            "vision_config.image_size": 560,
            "vision_config.patch_size": 14,
            "vision_config.max_num_tiles": 4,
        },
    )


LLAMA_3_2_11B_VISION = _llama_vision("llama3_2_11b_vision", "Llama-3.2-11B-Vision", 4096, 32)
LLAMA_3_2_90B_VISION = _llama_vision("llama3_2_90b_vision", "Llama-3.2-90B-Vision", 8192, 64)

PIXTRAL_12B = ModelConfig(
    key="pixtral_12b",
    hf_id="mistral-community/pixtral-12b",
    display_name="Pixtral-12B",
    category=MM,
    config={
        "vision_config.hidden_size": 1024,
        "vision_config.num_attention_heads": 16,
        "vision_config.head_dim": 64,
        "vision_config.image_size": 1024,
        "vision_config.patch_size": 16,
        "vision_config.rope_theta": 10000.0,
    },
)

LLAVA_ONEVISION_0_5B = ModelConfig(
    key="llava_onevision_0_5b",
    hf_id="llava-hf/llava-onevision-qwen2-0.5b-ov-hf",
    display_name="LLaVA-OneVision Qwen2-0.5B (llava-onevision-qwen2-0.5b-ov-hf)",
    category=MM,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 384,
        "vision_config.patch_size": 14,
        "text_config.hidden_size": 896,
        "projector_hidden_act": "gelu",
    },
)

JANUS_PRO_1B = ModelConfig(
    key="janus_pro_1b",
    hf_id="deepseek-ai/Janus-Pro-1B",
    display_name="Janus-Pro-1B",
    category=MM,
    config={
        "aligner_config.params.depth": 2,
        "aligner_config.params.input_dim": 1024,
        "aligner_config.params.n_embed": 2048,
        "vision_config.params.image_size": 384,
    },
)
