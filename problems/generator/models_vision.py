"""Vision models added for the media catalogue: ViT, DeiT, DINOv2, SigLIP, CLIP, ConvNeXt, Swin,
ResNet, SAM, SegFormer and DETR.

Same rules as :mod:`.models`: numbers copied from each repository's published ``config.json``,
nested configs flattened with dots, list entries by index (``.0``, ``.1``). A value that is a class
default rather than written in the file says so in a comment. Constants that live in modelling code
are template options, not model data.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

V = Category.vision

VIT_LARGE_16 = ModelConfig(
    key="vit_large_p16",
    hf_id="google/vit-large-patch16-224",
    display_name="ViT-Large/16 (224)",
    category=V,
    config={
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "intermediate_size": 4096,
        "image_size": 224,
        "patch_size": 16,
        "layer_norm_eps": 1e-12,
    },
)

VIT_HUGE_14 = ModelConfig(
    key="vit_huge_p14",
    hf_id="google/vit-huge-patch14-224-in21k",
    display_name="ViT-Huge/14 (224, in21k)",
    category=V,
    config={
        "hidden_size": 1280,
        "num_attention_heads": 16,
        "num_hidden_layers": 32,
        "intermediate_size": 5120,
        "image_size": 224,
        "patch_size": 14,
        "layer_norm_eps": 1e-12,
    },
)

DEIT_BASE = ModelConfig(
    key="deit_base_p16",
    hf_id="facebook/deit-base-patch16-224",
    display_name="DeiT-Base/16 (deit-base-patch16-224)",
    category=V,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "intermediate_size": 3072,
        "image_size": 224,
        "patch_size": 16,
        "layer_norm_eps": 1e-12,
    },
)

DEIT_SMALL = ModelConfig(
    key="deit_small_p16",
    hf_id="facebook/deit-small-patch16-224",
    display_name="DeiT-Small/16 (deit-small-patch16-224)",
    category=V,
    config={
        "hidden_size": 384,
        "num_attention_heads": 6,
        "num_hidden_layers": 12,
        "intermediate_size": 1536,
        "image_size": 224,
        "patch_size": 16,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
    },
)

DINOV2_SMALL = ModelConfig(
    key="dinov2_small",
    hf_id="facebook/dinov2-small",
    display_name="DINOv2 ViT-S/14 (dinov2-small)",
    category=V,
    config={
        "hidden_size": 384,
        "num_attention_heads": 6,
        "num_hidden_layers": 12,
        "mlp_ratio": 4,
        "patch_size": 14,
        "image_size": 518,
        "layer_norm_eps": 1e-06,
        "layerscale_value": 1.0,
        "hidden_act": "gelu",
    },
)

SIGLIP_BASE_16 = ModelConfig(
    key="siglip_base_p16",
    hf_id="google/siglip-base-patch16-224",
    display_name="SigLIP base-patch16-224",
    category=V,
    config={
        "vision_config.hidden_size": 768,
        "vision_config.image_size": 224,
        "vision_config.patch_size": 16,
        "vision_config.intermediate_size": 3072,
        "vision_config.num_attention_heads": 12,
        "vision_config.num_hidden_layers": 12,
        # SiglipVisionConfig defaults, not overridden in config.json
        "vision_config.num_channels": 3,
        "vision_config.layer_norm_eps": 1e-06,
    },
)

SIGLIP2_SO400M = ModelConfig(
    key="siglip2_so400m",
    hf_id="google/siglip2-so400m-patch14-384",
    display_name="SigLIP2 so400m-patch14-384",
    category=V,
    config={
        "vision_config.hidden_size": 1152,
        "vision_config.image_size": 384,
        "vision_config.patch_size": 14,
        "vision_config.intermediate_size": 4304,
        "vision_config.num_attention_heads": 16,
        "vision_config.num_hidden_layers": 27,
        # Siglip2VisionConfig defaults, not overridden in config.json
        "vision_config.num_channels": 3,
        "vision_config.layer_norm_eps": 1e-06,
    },
)

CLIP_VIT_B_32 = ModelConfig(
    key="clip_vit_b32",
    hf_id="openai/clip-vit-base-patch32",
    display_name="CLIP ViT-B/32 (clip-vit-base-patch32)",
    category=V,
    config={
        "vision_config.hidden_size": 768,
        "vision_config.intermediate_size": 3072,
        "vision_config.num_attention_heads": 12,
        "vision_config.num_hidden_layers": 12,
        "vision_config.image_size": 224,
        "vision_config.patch_size": 32,
        "vision_config.hidden_act": "quick_gelu",
        "vision_config.layer_norm_eps": 1e-05,
        "projection_dim": 512,
    },
)

CLIP_VIT_L_14 = ModelConfig(
    key="clip_vit_l14",
    hf_id="openai/clip-vit-large-patch14",
    display_name="CLIP ViT-L/14 (clip-vit-large-patch14)",
    category=V,
    config={
        "vision_config.hidden_size": 1024,
        "vision_config.intermediate_size": 4096,
        "vision_config.num_attention_heads": 16,
        "vision_config.num_hidden_layers": 24,
        "vision_config.image_size": 224,
        "vision_config.patch_size": 14,
        "vision_config.hidden_act": "quick_gelu",
        "vision_config.layer_norm_eps": 1e-05,
        "projection_dim": 768,
    },
)

CONVNEXT_TINY = ModelConfig(
    key="convnext_tiny",
    hf_id="facebook/convnext-tiny-224",
    display_name="ConvNeXt-Tiny (convnext-tiny-224)",
    category=V,
    config={
        "hidden_sizes.0": 96,
        "depths.0": 3,
        "layer_norm_eps": 1e-12,
        "layer_scale_init_value": 1e-06,
        "image_size": 224,
        "patch_size": 4,
    },
)

CONVNEXT_BASE = ModelConfig(
    key="convnext_base",
    hf_id="facebook/convnext-base-224",
    display_name="ConvNeXt-Base (convnext-base-224)",
    category=V,
    config={
        "hidden_sizes.0": 128,
        "depths.0": 3,
        "layer_norm_eps": 1e-12,
        "layer_scale_init_value": 1e-06,
        "image_size": 224,
        "patch_size": 4,
    },
)

CONVNEXT_LARGE = ModelConfig(
    key="convnext_large",
    hf_id="facebook/convnext-large-224",
    display_name="ConvNeXt-Large (convnext-large-224)",
    category=V,
    config={
        "hidden_sizes.0": 192,
        "depths.0": 3,
        "layer_norm_eps": 1e-12,
        "image_size": 224,
        "patch_size": 4,
    },
)

SWIN_TINY = ModelConfig(
    key="swin_tiny",
    hf_id="microsoft/swin-tiny-patch4-window7-224",
    display_name="Swin-Tiny (swin-tiny-patch4-window7-224)",
    category=V,
    config={
        "embed_dim": 96,
        "num_heads.0": 3,
        "depths.0": 2,
        "window_size": 7,
        "patch_size": 4,
        "image_size": 224,
        "mlp_ratio": 4.0,
        "layer_norm_eps": 1e-05,
    },
)

SWIN_BASE = ModelConfig(
    key="swin_base",
    hf_id="microsoft/swin-base-patch4-window7-224",
    display_name="Swin-Base (swin-base-patch4-window7-224)",
    category=V,
    config={
        "embed_dim": 128,
        "num_heads.0": 4,
        "depths.0": 2,
        "window_size": 7,
        "patch_size": 4,
        "image_size": 224,
        "mlp_ratio": 4.0,
        "layer_norm_eps": 1e-05,
    },
)

RESNET_50 = ModelConfig(
    key="resnet50",
    hf_id="microsoft/resnet-50",
    display_name="ResNet-50 (microsoft/resnet-50)",
    category=V,
    config={
        "embedding_size": 64,
        "hidden_sizes.0": 256,
        "depths.0": 3,
        "num_channels": 3,
        "layer_type": "bottleneck",
        "hidden_act": "relu",
    },
)

SAM_VIT_BASE = ModelConfig(
    key="sam_vit_base",
    hf_id="facebook/sam-vit-base",
    display_name="SAM ViT-B image encoder (sam-vit-base)",
    category=V,
    config={
        "vision_config.hidden_size": 768,
        "vision_config.num_attention_heads": 12,
        "vision_config.num_hidden_layers": 12,
        "vision_config.image_size": 1024,
        "vision_config.patch_size": 16,
        "vision_config.window_size": 14,
        "vision_config.mlp_dim": 3072,
        "vision_config.use_rel_pos": True,
    },
)

SEGFORMER_B0 = ModelConfig(
    key="segformer_b0",
    hf_id="nvidia/segformer-b0-finetuned-ade-512-512",
    display_name="SegFormer-B0 (segformer-b0-finetuned-ade-512-512)",
    category=V,
    config={
        "hidden_sizes.0": 32,
        "num_attention_heads.0": 1,
        "sr_ratios.0": 8,
        "mlp_ratios.0": 4,
        "strides.0": 4,
        "layer_norm_eps": 1e-06,
    },
)

SEGFORMER_B5 = ModelConfig(
    key="segformer_b5",
    hf_id="nvidia/segformer-b5-finetuned-ade-640-640",
    display_name="SegFormer-B5 (segformer-b5-finetuned-ade-640-640)",
    category=V,
    config={
        "hidden_sizes.0": 64,
        "num_attention_heads.0": 1,
        "sr_ratios.0": 8,
        "mlp_ratios.0": 4,
        "strides.0": 4,
        "layer_norm_eps": 1e-06,
    },
)

DETR_R50 = ModelConfig(
    key="detr_resnet50",
    hf_id="facebook/detr-resnet-50",
    display_name="DETR ResNet-50 (detr-resnet-50)",
    category=V,
    config={
        "d_model": 256,
        "encoder_layers": 6,
        "encoder_attention_heads": 8,
        "encoder_ffn_dim": 2048,
        "activation_function": "relu",
        "num_queries": 100,
    },
)
