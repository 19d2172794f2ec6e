"""Diffusion, vision, audio, video and multimodal models added for the media catalogue.

Same rules as :mod:`.models`: numbers copied from each repository's published ``config.json``
(diffusers pipelines: the component's ``<component>/config.json``, keys prefixed ``transformer.``,
``unet.`` or ``vae.``), nested configs flattened with dots, list entries by index (``.0``, ``.1``).
A value that is a class default rather than written in the file says so in a comment. Constants
that live in modelling code are template options, not model data.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

D, V, A, VID, MM = Category.diffusion, Category.vision, Category.audio, Category.video, Category.multimodal

# -- diffusion --------------------------------------------------------------------------------------

SD_2_1 = ModelConfig(
    key="sd2_1",
    hf_id="stabilityai/stable-diffusion-2-1",
    display_name="Stable Diffusion 2.1",
    category=D,
    config={
        # unet/config.json; attention_head_dim is diffusers' legacy name for the number of heads
        "unet.block_out_channels.0": 320,
        "unet.block_out_channels.3": 1280,
        "unet.attention_head_dim.0": 5,
        "unet.cross_attention_dim": 1024,
        "unet.norm_num_groups": 32,
        "unet.norm_eps": 1e-05,
        "unet.in_channels": 4,
        "unet.sample_size": 96,
        "unet.use_linear_projection": True,
    },
)

SDXL_BASE = ModelConfig(
    key="sdxl_base",
    hf_id="stabilityai/stable-diffusion-xl-base-1.0",
    display_name="Stable Diffusion XL base 1.0",
    category=D,
    config={
        # unet/config.json
        "unet.block_out_channels.0": 320,
        "unet.block_out_channels.1": 640,
        "unet.block_out_channels.2": 1280,
        "unet.attention_head_dim.1": 10,
        "unet.cross_attention_dim": 2048,
        "unet.norm_num_groups": 32,
        "unet.norm_eps": 1e-05,
        "unet.in_channels": 4,
        "unet.sample_size": 128,
        "unet.flip_sin_to_cos": True,
        "unet.freq_shift": 0,
        "unet.addition_time_embed_dim": 256,
    },
)

SDXL_VAE = ModelConfig(
    key="sdxl_vae",
    hf_id="stabilityai/sdxl-vae",
    display_name="SDXL VAE (AutoencoderKL)",
    category=D,
    config={
        "block_out_channels.3": 512,
        "latent_channels": 4,
        "norm_num_groups": 32,
        "sample_size": 1024,
        "scaling_factor": 0.13025,
    },
)

SD3_MEDIUM = ModelConfig(
    key="sd3_medium",
    hf_id="stabilityai/stable-diffusion-3-medium-diffusers",
    display_name="Stable Diffusion 3 Medium",
    category=D,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 64,
        "transformer.num_attention_heads": 24,
        "transformer.num_layers": 24,
        "transformer.in_channels": 16,
        "transformer.patch_size": 2,
        "transformer.caption_projection_dim": 1536,
        "transformer.joint_attention_dim": 4096,
        "transformer.pooled_projection_dim": 2048,
        "transformer.pos_embed_max_size": 192,
        "transformer.sample_size": 128,
        # vae/config.json
        "vae.block_out_channels.3": 512,
        "vae.latent_channels": 16,
        "vae.norm_num_groups": 32,
        "vae.scaling_factor": 1.5305,
        "vae.shift_factor": 0.0609,
    },
)

SD3_5_LARGE = ModelConfig(
    key="sd3_5_large",
    hf_id="stabilityai/stable-diffusion-3.5-large",
    display_name="Stable Diffusion 3.5 Large",
    category=D,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 64,
        "transformer.num_attention_heads": 38,
        "transformer.num_layers": 38,
        "transformer.in_channels": 16,
        "transformer.patch_size": 2,
        "transformer.caption_projection_dim": 2432,
        "transformer.joint_attention_dim": 4096,
        "transformer.pooled_projection_dim": 2048,
        "transformer.pos_embed_max_size": 192,
        "transformer.qk_norm": "rms_norm",
    },
)

SD3_5_MEDIUM = ModelConfig(
    key="sd3_5_medium",
    hf_id="stabilityai/stable-diffusion-3.5-medium",
    display_name="Stable Diffusion 3.5 Medium",
    category=D,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 64,
        "transformer.num_attention_heads": 24,
        "transformer.num_layers": 24,
        "transformer.in_channels": 16,
        "transformer.patch_size": 2,
        "transformer.caption_projection_dim": 1536,
        "transformer.joint_attention_dim": 4096,
        "transformer.pos_embed_max_size": 384,
        "transformer.qk_norm": "rms_norm",
    },
)

FLUX_1_SCHNELL = ModelConfig(
    key="flux1_schnell",
    hf_id="black-forest-labs/FLUX.1-schnell",
    display_name="FLUX.1-schnell",
    category=D,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 128,
        "transformer.num_attention_heads": 24,
        "transformer.num_layers": 19,
        "transformer.num_single_layers": 38,
        "transformer.in_channels": 64,
        "transformer.guidance_embeds": False,
        "transformer.axes_dims_rope.0": 16,
        "transformer.axes_dims_rope.1": 56,
        "transformer.axes_dims_rope.2": 56,
        # vae/config.json
        "vae.block_out_channels.3": 512,
        "vae.latent_channels": 16,
        "vae.norm_num_groups": 32,
        "vae.scaling_factor": 0.3611,
        "vae.shift_factor": 0.1159,
    },
)

PIXART_SIGMA = ModelConfig(
    key="pixart_sigma",
    hf_id="PixArt-alpha/PixArt-Sigma-XL-2-1024-MS",
    display_name="PixArt-Sigma-XL-2-1024-MS",
    category=D,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 72,
        "transformer.num_attention_heads": 16,
        "transformer.num_layers": 28,
        "transformer.in_channels": 4,
        "transformer.out_channels": 8,
        "transformer.patch_size": 2,
        "transformer.caption_channels": 4096,
        "transformer.cross_attention_dim": 1152,
        "transformer.sample_size": 128,
        "transformer.norm_eps": 1e-06,
    },
)

DIT_XL_2_256 = ModelConfig(
    key="dit_xl_2_256",
    hf_id="facebook/DiT-XL-2-256",
    display_name="DiT-XL/2 (256x256, facebook/DiT-XL-2-256)",
    category=D,
    config={
        # transformer/config.json
        "transformer.attention_head_dim": 72,
        "transformer.num_attention_heads": 16,
        "transformer.num_layers": 28,
        "transformer.in_channels": 4,
        "transformer.out_channels": 8,
        "transformer.patch_size": 2,
        "transformer.sample_size": 32,
        "transformer.num_embeds_ada_norm": 1000,
    },
)

SANA_600M = ModelConfig(
    key="sana_600m",
    hf_id="Efficient-Large-Model/Sana_600M_1024px_diffusers",
    display_name="Sana 600M 1024px",
    category=D,
    config={
        # transformer/config.json
        "transformer.num_attention_heads": 36,
        "transformer.attention_head_dim": 32,
        "transformer.num_layers": 28,
        "transformer.in_channels": 32,
        "transformer.patch_size": 1,
        "transformer.mlp_ratio": 2.5,
        "transformer.sample_size": 32,
    },
)

SANA_1600M = ModelConfig(
    key="sana_1600m",
    hf_id="Efficient-Large-Model/Sana_1600M_1024px_diffusers",
    display_name="Sana 1600M 1024px",
    category=D,
    config={
        # transformer/config.json
        "transformer.num_attention_heads": 70,
        "transformer.attention_head_dim": 32,
        "transformer.num_layers": 20,
        "transformer.in_channels": 32,
        "transformer.patch_size": 1,
        "transformer.mlp_ratio": 2.5,
        "transformer.sample_size": 32,
    },
)

HUNYUAN_DIT = ModelConfig(
    key="hunyuan_dit_v1_2",
    hf_id="Tencent-Hunyuan/HunyuanDiT-v1.2-Diffusers",
    display_name="HunyuanDiT v1.2",
    category=D,
    config={
        # transformer/config.json
        "transformer.num_attention_heads": 16,
        "transformer.attention_head_dim": 88,
        "transformer.num_layers": 40,
        "transformer.in_channels": 4,
        "transformer.patch_size": 2,
        "transformer.sample_size": 128,
        "transformer.cross_attention_dim": 1024,
    },
)

# -- vision ------------------------------------------------------------------------------------------

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

# -- audio -------------------------------------------------------------------------------------------


def _whisper(
    key: str, name: str, display: str, d_model: int, layers: int, heads: int, ffn: int, mels: int
) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"openai/{name}",
        display_name=display,
        category=A,
        config={
            "d_model": d_model,
            "num_mel_bins": mels,
            "encoder_layers": layers,
            "encoder_attention_heads": heads,
            "encoder_ffn_dim": ffn,
            "max_source_positions": 1500,
            "activation_function": "gelu",
        },
    )


WHISPER_TINY = _whisper("whisper_tiny", "whisper-tiny", "Whisper tiny", 384, 4, 6, 1536, 80)
WHISPER_BASE = _whisper("whisper_base", "whisper-base", "Whisper base", 512, 6, 8, 2048, 80)
WHISPER_SMALL = _whisper("whisper_small", "whisper-small", "Whisper small", 768, 12, 12, 3072, 80)
WHISPER_MEDIUM = _whisper("whisper_medium", "whisper-medium", "Whisper medium", 1024, 24, 16, 4096, 80)
WHISPER_LARGE_V3_TURBO = _whisper(
    "whisper_large_v3_turbo", "whisper-large-v3-turbo", "Whisper large-v3-turbo", 1280, 32, 20, 5120, 128
)


def _wav2vec2_like(
    key: str, hf_id: str, display: str, hidden: int, layers: int, heads: int, ffn: int, norm: str
) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=hf_id,
        display_name=display,
        category=A,
        config={
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "intermediate_size": ffn,
            "conv_dim.0": 512,
            "conv_kernel.0": 10,
            "conv_stride.0": 5,
            "conv_kernel.1": 3,
            "conv_stride.1": 2,
            "conv_kernel.5": 2,
            "conv_stride.5": 2,
            "conv_bias": norm == "layer",
            "feat_extract_norm": norm,
            "num_conv_pos_embeddings": 128,
            "num_conv_pos_embedding_groups": 16,
            "layer_norm_eps": 1e-05,
        },
    )


WAV2VEC2_BASE = _wav2vec2_like(
    "wav2vec2_base_960h", "facebook/wav2vec2-base-960h", "wav2vec2-base-960h", 768, 12, 12, 3072, "group"
)
HUBERT_BASE = _wav2vec2_like(
    "hubert_base_ls960",
    "facebook/hubert-base-ls960",
    "HuBERT base (hubert-base-ls960)",
    768,
    12,
    12,
    3072,
    "group",
)
HUBERT_LARGE = _wav2vec2_like(
    "hubert_large_ll60k",
    "facebook/hubert-large-ll60k",
    "HuBERT large (hubert-large-ll60k)",
    1024,
    24,
    16,
    4096,
    "layer",
)

WAV2VEC2_CONFORMER = ModelConfig(
    key="wav2vec2_conformer_large",
    hf_id="facebook/wav2vec2-conformer-rope-large-960h-ft",
    display_name="wav2vec2-conformer-rope-large-960h-ft",
    category=A,
    config={
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "conv_depthwise_kernel_size": 31,
        "position_embeddings_type": "rotary",
        "layer_norm_eps": 1e-05,
    },
)

SEAMLESS_M4T_V2 = ModelConfig(
    key="seamless_m4t_v2_large",
    hf_id="facebook/seamless-m4t-v2-large",
    display_name="SeamlessM4T v2 large speech encoder (seamless-m4t-v2-large)",
    category=A,
    config={
        "hidden_size": 1024,
        "speech_encoder_layers": 24,
        "speech_encoder_attention_heads": 16,
        "speech_encoder_intermediate_size": 4096,
        "conv_depthwise_kernel_size": 31,
        "feature_projection_input_dim": 160,
        "layer_norm_eps": 1e-05,
    },
)

PARAKEET_CTC_1_1B = ModelConfig(
    key="parakeet_ctc_1_1b",
    hf_id="nvidia/parakeet-ctc-1.1b",
    display_name="Parakeet CTC 1.1B (FastConformer, parakeet-ctc-1.1b)",
    category=A,
    config={
        "encoder_config.hidden_size": 1024,
        "encoder_config.num_hidden_layers": 42,
        "encoder_config.num_attention_heads": 8,
        "encoder_config.intermediate_size": 4096,
        "encoder_config.conv_kernel_size": 9,
        "encoder_config.subsampling_factor": 8,
        "encoder_config.num_mel_bins": 80,
    },
)

CLAP_HTSAT = ModelConfig(
    key="clap_htsat_unfused",
    hf_id="laion/clap-htsat-unfused",
    display_name="CLAP HTSAT (clap-htsat-unfused)",
    category=A,
    config={
        "audio_config.num_mel_bins": 64,
        "audio_config.spec_size": 256,
        "audio_config.patch_embeds_hidden_size": 96,
        "audio_config.window_size": 8,
        # preprocessor_config.json (ClapFeatureExtractor)
        "feature_extractor.sampling_rate": 48000,
        "feature_extractor.fft_window_size": 1024,
        "feature_extractor.hop_length": 480,
        "feature_extractor.feature_size": 64,
    },
)

AST_AUDIOSET = ModelConfig(
    key="ast_audioset",
    hf_id="MIT/ast-finetuned-audioset-10-10-0.4593",
    display_name="AST AudioSet (ast-finetuned-audioset-10-10-0.4593)",
    category=A,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "patch_size": 16,
        "frequency_stride": 10,
        "time_stride": 10,
        "max_length": 1024,
        "num_mel_bins": 128,
        "layer_norm_eps": 1e-12,
    },
)

AST_SPEECH_COMMANDS = ModelConfig(
    key="ast_speech_commands",
    hf_id="MIT/ast-finetuned-speech-commands-v2",
    display_name="AST Speech Commands (ast-finetuned-speech-commands-v2)",
    category=A,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "patch_size": 16,
        "frequency_stride": 10,
        "time_stride": 10,
        "max_length": 128,
        "num_mel_bins": 128,
        "layer_norm_eps": 1e-12,
    },
)

ENCODEC_24KHZ = ModelConfig(
    key="encodec_24khz",
    hf_id="facebook/encodec_24khz",
    display_name="EnCodec 24 kHz (encodec_24khz)",
    category=A,
    config={
        "num_filters": 32,
        "upsampling_ratios.0": 8,
        "hidden_size": 128,
        "residual_kernel_size": 3,
        "compress": 2,
        "sampling_rate": 24000,
        # EncodecConfig defaults, not overridden in config.json
        "use_causal_conv": True,
        "use_conv_shortcut": True,
        "pad_mode": "reflect",
    },
)

MUSICGEN_SMALL = ModelConfig(
    key="musicgen_small",
    hf_id="facebook/musicgen-small",
    display_name="MusicGen small (musicgen-small)",
    category=A,
    config={
        "decoder.hidden_size": 1024,
        "decoder.num_hidden_layers": 24,
        "decoder.num_attention_heads": 16,
        "decoder.ffn_dim": 4096,
        "decoder.num_codebooks": 4,
        "decoder.vocab_size": 2048,
        "decoder.scale_embedding": False,
    },
)

MUSICGEN_LARGE = ModelConfig(
    key="musicgen_large",
    hf_id="facebook/musicgen-large",
    display_name="MusicGen large (musicgen-large)",
    category=A,
    config={
        "decoder.hidden_size": 2048,
        "decoder.num_hidden_layers": 48,
        "decoder.num_attention_heads": 32,
        "decoder.ffn_dim": 8192,
        "decoder.num_codebooks": 4,
        "decoder.vocab_size": 2048,
        "decoder.scale_embedding": False,
    },
)

# -- video -------------------------------------------------------------------------------------------

WAN_2_1_T2V_14B = ModelConfig(
    key="wan2_1_t2v_14b",
    hf_id="Wan-AI/Wan2.1-T2V-14B-Diffusers",
    display_name="Wan2.1-T2V-14B",
    category=VID,
    config={
        # transformer/config.json (patch_size [1, 2, 2] flattened as t, h, w like the 1.3B entry)
        "transformer.patch_size.t": 1,
        "transformer.patch_size.h": 2,
        "transformer.patch_size.w": 2,
        "transformer.in_channels": 16,
        "transformer.num_attention_heads": 40,
        "transformer.attention_head_dim": 128,
        "transformer.ffn_dim": 13824,
        "transformer.num_layers": 40,
        "transformer.text_dim": 4096,
        "transformer.eps": 1e-06,
    },
)

WAN_2_2_TI2V_5B = ModelConfig(
    key="wan2_2_ti2v_5b",
    hf_id="Wan-AI/Wan2.2-TI2V-5B-Diffusers",
    display_name="Wan2.2-TI2V-5B",
    category=VID,
    config={
        # transformer/config.json (patch_size [1, 2, 2] flattened as t, h, w)
        "transformer.patch_size.t": 1,
        "transformer.patch_size.h": 2,
        "transformer.patch_size.w": 2,
        "transformer.in_channels": 48,
        "transformer.num_attention_heads": 24,
        "transformer.attention_head_dim": 128,
        "transformer.ffn_dim": 14336,
        "transformer.num_layers": 30,
        "transformer.eps": 1e-06,
    },
)

HUNYUAN_VIDEO = ModelConfig(
    key="hunyuan_video",
    hf_id="hunyuanvideo-community/HunyuanVideo",
    display_name="HunyuanVideo",
    category=VID,
    config={
        # transformer/config.json
        "transformer.in_channels": 16,
        "transformer.num_attention_heads": 24,
        "transformer.attention_head_dim": 128,
        "transformer.num_layers": 20,
        "transformer.num_single_layers": 40,
        "transformer.patch_size": 2,
        "transformer.patch_size_t": 1,
        "transformer.rope_axes_dim.0": 16,
        "transformer.rope_axes_dim.1": 56,
        "transformer.rope_axes_dim.2": 56,
        "transformer.rope_theta": 256.0,
        # vae/config.json
        "vae.latent_channels": 16,
        "vae.block_out_channels.3": 512,
        "vae.norm_num_groups": 32,
    },
)

LTX_VIDEO = ModelConfig(
    key="ltx_video",
    hf_id="Lightricks/LTX-Video",
    display_name="LTX-Video",
    category=VID,
    config={
        # transformer/config.json
        "transformer.in_channels": 128,
        "transformer.num_attention_heads": 32,
        "transformer.attention_head_dim": 64,
        "transformer.num_layers": 28,
        "transformer.patch_size": 1,
        "transformer.patch_size_t": 1,
        "transformer.cross_attention_dim": 2048,
    },
)

COGVIDEOX_2B = ModelConfig(
    key="cogvideox_2b",
    hf_id="THUDM/CogVideoX-2b",
    display_name="CogVideoX-2b",
    category=VID,
    config={
        # transformer/config.json
        "transformer.num_attention_heads": 30,
        "transformer.attention_head_dim": 64,
        "transformer.num_layers": 30,
        "transformer.in_channels": 16,
        "transformer.patch_size": 2,
        "transformer.text_embed_dim": 4096,
        "transformer.time_embed_dim": 512,
        "transformer.max_text_seq_length": 226,
        "transformer.norm_eps": 1e-05,
        "transformer.use_rotary_positional_embeddings": False,
    },
)

COGVIDEOX_5B = ModelConfig(
    key="cogvideox_5b",
    hf_id="THUDM/CogVideoX-5b",
    display_name="CogVideoX-5b",
    category=VID,
    config={
        # transformer/config.json
        "transformer.num_attention_heads": 48,
        "transformer.attention_head_dim": 64,
        "transformer.num_layers": 42,
        "transformer.in_channels": 16,
        "transformer.patch_size": 2,
        "transformer.text_embed_dim": 4096,
        "transformer.time_embed_dim": 512,
        "transformer.max_text_seq_length": 226,
        "transformer.norm_eps": 1e-05,
        "transformer.use_rotary_positional_embeddings": True,
    },
)

TIMESFORMER_BASE = ModelConfig(
    key="timesformer_base_k400",
    hf_id="facebook/timesformer-base-finetuned-k400",
    display_name="TimeSformer base (timesformer-base-finetuned-k400)",
    category=VID,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "intermediate_size": 3072,
        "num_frames": 8,
        "image_size": 224,
        "patch_size": 16,
        "attention_type": "divided_space_time",
        "layer_norm_eps": 1e-06,
    },
)

VIDEOMAE_BASE = ModelConfig(
    key="videomae_base",
    hf_id="MCG-NJU/videomae-base",
    display_name="VideoMAE-Base (videomae-base)",
    category=VID,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "intermediate_size": 3072,
        "num_frames": 16,
        "tubelet_size": 2,
        "image_size": 224,
        "patch_size": 16,
        "num_channels": 3,
    },
)

VIDEOMAE_LARGE = ModelConfig(
    key="videomae_large",
    hf_id="MCG-NJU/videomae-large",
    display_name="VideoMAE-Large (videomae-large)",
    category=VID,
    config={
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "intermediate_size": 4096,
        "num_frames": 16,
        "tubelet_size": 2,
        "image_size": 224,
        "patch_size": 16,
        "num_channels": 3,
    },
)

# -- multimodal --------------------------------------------------------------------------------------


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

MEDIA_MODEL_CONFIGS: tuple[ModelConfig, ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, ModelConfig)
)
"""Every model defined in this module, in definition order."""
