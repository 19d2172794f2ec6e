"""Diffusion, vision, audio, video and multimodal problems: one line per problem."""

from __future__ import annotations

from . import media
from . import media_audio as audio
from . import media_backward as backward
from . import media_diffusion as diff
from . import media_dit as dit
from . import media_layers as layers
from . import media_multimodal as vlm
from . import media_video as video
from . import media_vision as vision
from . import models_audio as m_audio
from . import models_diffusion as m_diff
from . import models_multimodal as m_vlm
from . import models_video as m_video
from . import models_vision as m_vision
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

MEDIA_MODELS: tuple[ModelConfig, ...] = tuple(
    value
    for module in (m_diff, m_vision, m_audio, m_video, m_vlm)
    for value in vars(module).values()
    if isinstance(value, ModelConfig)
)
"""Models added for these problems beyond the starter set in ``models.py``."""

_DIT_TOKENS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
"""DiT-XL/2-256 rows: 256 tokens per image, batches of 1 to 128 images."""

DIFFUSION: tuple[Entry, ...] = (
    Entry(media.adaln_modulation, FLUX_1_DEV),
    Entry(media.groupnorm_silu, SD_1_5),
    Entry(media.groupnorm_silu, m_diff.SD_2_1),
    Entry(media.groupnorm_silu, m_diff.SDXL_BASE),
    Entry(
        diff.timestep_embedding,
        SD_1_5,
        {
            "freq_dim": "unet.block_out_channels.0",
            "embed_dim": "unet.block_out_channels.0",
            "embed_mult": 4,
            "site": "UNet2DConditionModel time_proj + time_embedding",
        },
    ),
    Entry(
        diff.timestep_embedding,
        m_diff.SDXL_BASE,
        {
            "freq_dim": "unet.block_out_channels.0",
            "embed_dim": "unet.block_out_channels.0",
            "embed_mult": 4,
            "site": "UNet2DConditionModel time_proj + time_embedding",
        },
    ),
    Entry(
        diff.timestep_embedding,
        m_diff.SD3_MEDIUM,
        {
            "freq_dim": 256,
            "embed_dim": ("transformer.num_attention_heads", "transformer.attention_head_dim"),
            "float_timesteps": True,
            "site": "CombinedTimestepTextProjEmbeddings, timestep part",
        },
    ),
    Entry(
        diff.timestep_embedding,
        m_diff.PIXART_SIGMA,
        {
            "freq_dim": 256,
            "embed_dim": ("transformer.num_attention_heads", "transformer.attention_head_dim"),
            "site": "AdaLayerNormSingle's PixArtAlphaCombinedTimestepSizeEmbeddings",
        },
    ),
    Entry(
        diff.timestep_embedding,
        m_diff.DIT_XL_2_256,
        {
            "freq_dim": 256,
            "embed_dim": ("transformer.num_attention_heads", "transformer.attention_head_dim"),
            "downscale_freq_shift": 1,
            "site": "CombinedTimestepLabelEmbeddings, timestep part",
        },
    ),
    Entry(
        diff.unet_resnet_block,
        m_diff.SD_2_1,
        {
            "channels": "unet.block_out_channels.3",
            "temb_dim": "unet.block_out_channels.0",
            "site": "mid block, image / 64",
        },
    ),
    Entry(
        diff.unet_cross_attention, m_diff.SD_2_1, {"level": 0, "site": "first down block, latent resolution"}
    ),
    Entry(diff.unet_cross_attention, m_diff.SDXL_BASE, {"level": 1, "site": "second down block, latent / 2"}),
    Entry(diff.vae_mid_attention, m_diff.SDXL_VAE),
    Entry(diff.vae_mid_attention, m_diff.SD3_MEDIUM, {"prefix": "vae."}),
    Entry(diff.vae_mid_attention, m_diff.FLUX_1_SCHNELL, {"prefix": "vae."}),
    Entry(dit.dit_block, m_diff.DIT_XL_2_256),
    Entry(dit.mmdit_joint_attention, m_diff.SD3_5_LARGE),
    Entry(dit.mmdit_joint_attention, m_diff.SD3_5_MEDIUM),
    Entry(dit.qk_norm_rope, m_diff.FLUX_1_SCHNELL),
    Entry(dit.sana_linear_attention, m_diff.SANA_600M),
    Entry(dit.sana_linear_attention, m_diff.SANA_1600M),
    Entry(dit.sana_glumbconv, m_diff.SANA_600M),
    Entry(dit.latent_patch_embed, m_diff.SD3_MEDIUM),
    Entry(dit.latent_patch_embed, m_diff.PIXART_SIGMA),
    Entry(dit.latent_patch_embed, m_diff.HUNYUAN_DIT),
    Entry(
        layers.fp8_linear,
        m_diff.DIT_XL_2_256,
        {
            "suffix": "mlp_fc1_fp8",
            "site": "The MLP up projection (fc1) of every block",
            "in_dim": ("transformer.num_attention_heads", "transformer.attention_head_dim"),
            "out_dim": 4608,
            "tokens": _DIT_TOKENS,
            "token_text": "256 tokens per 256 px image",
        },
    ),
    Entry(
        layers.nvfp4_linear,
        m_diff.DIT_XL_2_256,
        {
            "suffix": "mlp_fc2_nvfp4",
            "site": "The MLP down projection (fc2) of every block",
            "in_dim": 4608,
            "out_dim": ("transformer.num_attention_heads", "transformer.attention_head_dim"),
            "tokens": _DIT_TOKENS,
            "token_text": "256 tokens per 256 px image",
        },
    ),
    Entry(
        backward.groupnorm_backward,
        SD_1_5,
        {
            "site": "the first UNet GroupNorm",
            "channels": "unet.block_out_channels.0",
            "groups_key": "unet.norm_num_groups",
            "eps_key": "unet.norm_eps",
            "sizes": (
                (1, 32, 32),
                (2, 32, 32),
                (1, 64, 64),
                (2, 64, 64),
                (4, 64, 64),
                (8, 64, 64),
                (2, 96, 96),
                (4, 96, 96),
                (4, 128, 128),
            ),
        },
    ),
)

_VIT_BATCHES = (1, 2, 4, 8, 16, 24, 32, 48, 64)
_SWIN_SIZES = tuple((b, 56) for b in (1, 2, 4, 8, 16, 32, 64, 128))

VISION: tuple[Entry, ...] = (
    Entry(media.patch_embed_layernorm, SIGLIP_SO400M),
    Entry(media.patch_embed_layernorm, m_vision.SIGLIP_BASE_16),
    Entry(media.patch_embed_layernorm, m_vision.SIGLIP2_SO400M),
    Entry(media.attention_softmax, VIT_BASE_16),
    Entry(media.attention_softmax, m_vision.VIT_LARGE_16),
    Entry(media.attention_softmax, m_vision.DEIT_BASE),
    Entry(media.attention_softmax, m_vision.VIT_HUGE_14, {"batch_sizes": (1, 2, 4, 6, 8, 12, 16, 24, 32)}),
    Entry(
        layers.pre_ln_encoder_layer,
        m_vision.DINOV2_SMALL,
        {
            "site": "DINOv2 ViT-S/14 encoder",
            "hidden": "hidden_size",
            "heads": "num_attention_heads",
            "ffn": 4 * 384,
            "eps": 1e-06,
            "act": "gelu",
            "seq_len": 257,
            "sizes": _VIT_BATCHES,
            "layer_scale": True,
            "seq_text": " at 224 px: 16x16 patches + CLS",
        },
    ),
    Entry(
        layers.pre_ln_encoder_layer,
        m_vision.DEIT_SMALL,
        {
            "site": "DeiT-S/16 encoder",
            "hidden": "hidden_size",
            "heads": "num_attention_heads",
            "ffn": "intermediate_size",
            "eps": 1e-12,
            "act": "gelu",
            "seq_len": 197,
            "sizes": _VIT_BATCHES,
            "seq_text": ": 14x14 patches + CLS",
        },
    ),
    Entry(
        layers.pre_ln_encoder_layer,
        m_vision.CLIP_VIT_B_32,
        {
            "site": "CLIP vision encoder",
            "hidden": "vision_config.hidden_size",
            "heads": "vision_config.num_attention_heads",
            "ffn": "vision_config.intermediate_size",
            "eps": 1e-05,
            "act": "quick_gelu",
            "seq_len": 50,
            "sizes": (1, 4, 8, 16, 32, 64, 128, 256),
            "seq_text": ": 7x7 patches + CLS",
        },
    ),
    Entry(
        layers.gelu_mlp,
        m_vision.CLIP_VIT_L_14,
        {
            "suffix": "vision_mlp",
            "site": "The MLP of every vision-encoder layer",
            "in_dim": "vision_config.hidden_size",
            "hidden_dim": "vision_config.intermediate_size",
            "out_dim": "vision_config.hidden_size",
            "act": "quick_gelu",
            "per_item": 257,
            "sizes": (1, 2, 4, 8, 16, 32, 48, 64),
        },
    ),
    Entry(
        backward.layernorm_backward,
        m_vision.VIT_LARGE_16,
        {
            "site": "a ViT-L encoder LayerNorm",
            "hidden": "hidden_size",
            "eps_key": "layer_norm_eps",
            "per_item": 197,
            "sizes": (1, 2, 4, 8, 16, 32, 64, 128),
        },
    ),
    Entry(
        backward.attention_backward,
        m_vision.DEIT_SMALL,
        {
            "site": "the self-attention",
            "heads": "num_attention_heads",
            "head_dim": 64,
            "seq_len": 197,
            "sizes": (1, 2, 4, 8, 16, 32, 64, 128),
        },
    ),
    Entry(
        backward.attention_backward,
        VIT_BASE_16,
        {
            "site": "the self-attention",
            "heads": "num_attention_heads",
            "head_dim": 64,
            "seq_len": 197,
            "sizes": (1, 2, 4, 8, 16, 24, 32, 64),
        },
    ),
    Entry(
        backward.layernorm_backward,
        m_vision.DINOV2_SMALL,
        {
            "site": "a DINOv2 encoder LayerNorm (224 px: 256 patches + CLS)",
            "hidden": "hidden_size",
            "eps_key": "layer_norm_eps",
            "per_item": 257,
            "sizes": (1, 2, 4, 8, 16, 32, 64, 128),
        },
    ),
    Entry(
        backward.conv2d_backward,
        m_vision.RESNET_50,
        {
            "site": "the stage-1 bottleneck 3x3 conv (64 = embedding_size channels)",
            "channels": "embedding_size",
            "kernel": 3,
            "sizes": ((1, 56), (2, 56), (4, 56), (8, 56), (16, 56), (32, 56), (64, 56), (128, 56)),
        },
    ),
    Entry(vision.resnet_stem, m_vision.RESNET_50),
    Entry(vision.convnext_block, m_vision.CONVNEXT_TINY),
    Entry(vision.convnext_block, m_vision.CONVNEXT_BASE),
    Entry(vision.convnext_block, m_vision.CONVNEXT_LARGE),
    Entry(vision.swin_window_attention, m_vision.SWIN_TINY, {"sizes": _SWIN_SIZES}),
    Entry(vision.swin_window_attention, m_vision.SWIN_BASE, {"sizes": _SWIN_SIZES}),
    Entry(vision.segformer_mix_ffn, m_vision.SEGFORMER_B0),
    Entry(vision.segformer_mix_ffn, m_vision.SEGFORMER_B5),
)

_CONFORMER_12HZ = ((1, 13), (2, 13), (1, 63), (1, 125), (4, 63), (2, 125), (1, 375), (4, 125), (4, 375))
"""Parakeet frames at 12.5 Hz (8x subsampling of 100 Hz features): 1, 5, 10 and 30 s."""

_WHISPER_TRAIN = ((1, 500), (2, 500), (1, 3000), (2, 3000), (4, 3000), (8, 3000), (16, 3000), (32, 3000))
"""Fine-tuning batches of Whisper features: a 5 s clip, then batches of 30 s windows (3000 frames)."""

AUDIO: tuple[Entry, ...] = (
    Entry(media.conv1d_gelu, WHISPER_LARGE_V3),
    Entry(media.conv1d_gelu, m_audio.WHISPER_TINY),
    Entry(media.conv1d_gelu, m_audio.WHISPER_BASE),
    Entry(media.conv1d_gelu, m_audio.WHISPER_SMALL),
    Entry(media.conv1d_gelu, m_audio.WHISPER_MEDIUM),
    Entry(
        audio.log_mel_spectrogram,
        WHISPER_LARGE_V3,
        {"mels_key": "num_mel_bins", "n_fft": 400, "hop": 160, "style": "whisper"},
    ),
    Entry(
        audio.log_mel_spectrogram,
        m_audio.WHISPER_LARGE_V3_TURBO,
        {"mels_key": "num_mel_bins", "n_fft": 400, "hop": 160, "style": "whisper"},
    ),
    Entry(
        audio.log_mel_spectrogram,
        m_audio.WHISPER_SMALL,
        {"mels_key": "num_mel_bins", "n_fft": 400, "hop": 160, "style": "whisper"},
    ),
    Entry(
        audio.log_mel_spectrogram,
        m_audio.CLAP_HTSAT,
        {
            "mels_key": "feature_extractor.feature_size",
            "n_fft": 1024,
            "hop": 480,
            "style": "db",
            "rate": "48 kHz",
            "sizes": (
                (1, 48000),
                (2, 48000),
                (1, 240000),
                (1, 480000),
                (4, 480000),
                (8, 480000),
                (16, 480000),
                (32, 480000),
            ),
        },
    ),
    Entry(audio.wav2vec2_feature_encoder, m_audio.WAV2VEC2_BASE),
    Entry(audio.wav2vec2_feature_encoder, m_audio.HUBERT_BASE),
    Entry(audio.pos_conv_embed, m_audio.WAV2VEC2_BASE),
    Entry(audio.pos_conv_embed, m_audio.HUBERT_LARGE),
    Entry(
        audio.conformer_conv_module,
        m_audio.WAV2VEC2_CONFORMER,
        {
            "hidden_key": "hidden_size",
            "kernel_key": "conv_depthwise_kernel_size",
            "norm": "batch",
            "causal": False,
            "bias": False,
            "frame_rate": "50 Hz frames",
        },
    ),
    Entry(
        audio.conformer_conv_module,
        m_audio.SEAMLESS_M4T_V2,
        {
            "hidden_key": "hidden_size",
            "kernel_key": "conv_depthwise_kernel_size",
            "norm": "layer",
            "causal": True,
            "bias": False,
            "frame_rate": "frames at 50 Hz after the 160-dim feature stacking",
        },
    ),
    Entry(
        audio.conformer_conv_module,
        m_audio.PARAKEET_CTC_1_1B,
        {
            "hidden_key": "encoder_config.hidden_size",
            "kernel_key": "encoder_config.conv_kernel_size",
            "norm": "batch",
            "causal": False,
            "bias": True,
            "frame_rate": "12.5 Hz frames after 8x subsampling",
            "sizes": _CONFORMER_12HZ,
        },
    ),
    Entry(audio.ast_embeddings, m_audio.AST_AUDIOSET),
    Entry(
        audio.ast_embeddings, m_audio.AST_SPEECH_COMMANDS, {"batch_sizes": (1, 4, 16, 32, 64, 128, 256, 512)}
    ),
    Entry(audio.musicgen_embed, m_audio.MUSICGEN_SMALL),
    Entry(audio.musicgen_embed, m_audio.MUSICGEN_LARGE),
    Entry(
        backward.conv1d_backward,
        m_audio.WHISPER_TINY,
        {
            "site": "the first encoder convolution (conv1)",
            "in_channels": "num_mel_bins",
            "out_channels": "d_model",
            "kernel": 3,
            "sizes": _WHISPER_TRAIN,
        },
    ),
    Entry(
        backward.conv1d_backward,
        m_audio.WHISPER_BASE,
        {
            "site": "the first encoder convolution (conv1)",
            "in_channels": "num_mel_bins",
            "out_channels": "d_model",
            "kernel": 3,
            "sizes": _WHISPER_TRAIN,
        },
    ),
)

_HUNYUAN_LATENTS = (
    (1, 1, 30, 52),
    (1, 1, 60, 104),
    (1, 5, 30, 52),
    (1, 5, 60, 104),
    (1, 9, 60, 104),
    (2, 9, 60, 104),
    (1, 17, 60, 104),
    (1, 9, 90, 160),
    (1, 17, 90, 160),
)
"""HunyuanVideo latents: 1 to 65 frames at 240x416, 480x832 and 720x1280."""
_WAN14B_LATENTS = (
    (1, 1, 30, 52),
    (1, 1, 60, 104),
    (1, 5, 60, 104),
    (1, 1, 90, 160),
    (1, 11, 60, 104),
    (1, 21, 60, 104),
    (1, 11, 90, 160),
    (2, 11, 60, 104),
)
"""Wan2.1-14B latents, capped at 41 frames of 720p so the 5120-wide output stays under 400 MB."""

_WAN_ROPE_AXES = (128 - 4 * (128 // 6), 2 * (128 // 6), 2 * (128 // 6))
_WAN_ROPE_SOURCE = "WanRotaryPosEmbed: h = w = 2 * (head_dim // 6) channels, t the rest, theta 10000"

VIDEO: tuple[Entry, ...] = (
    Entry(media.patch_embed_3d, WAN_2_1_T2V_1_3B),
    Entry(media.patch_embed_3d, m_video.WAN_2_1_T2V_14B, {"sizes": _WAN14B_LATENTS}),
    Entry(
        media.patch_embed_3d,
        m_video.HUNYUAN_VIDEO,
        {
            "sizes": _HUNYUAN_LATENTS,
            "patch_keys": ("transformer.patch_size_t", "transformer.patch_size", "transformer.patch_size"),
        },
    ),
    Entry(
        video.rope_3d,
        WAN_2_1_T2V_1_3B,
        {
            "axes_dim": _WAN_ROPE_AXES,
            "theta": 10000.0,
            "theta_source": _WAN_ROPE_SOURCE,
            "sizes": (*video.VIDEO_GRIDS[:7], (1, 45, 80)),
        },
    ),
    Entry(
        video.rope_3d,
        m_video.WAN_2_1_T2V_14B,
        {
            "axes_dim": _WAN_ROPE_AXES,
            "theta": 10000.0,
            "theta_source": _WAN_ROPE_SOURCE,
            "sizes": (
                (1, 15, 26),
                (1, 30, 52),
                (2, 15, 26),
                (1, 45, 80),
                (3, 30, 52),
                (5, 30, 52),
                (5, 15, 26),
                (9, 15, 26),
            ),
        },
    ),
    Entry(
        video.rope_3d,
        m_video.HUNYUAN_VIDEO,
        {
            "axes_dim": (
                "transformer.rope_axes_dim.0",
                "transformer.rope_axes_dim.1",
                "transformer.rope_axes_dim.2",
            ),
            "theta": 256.0,
            "theta_source": "rope_theta in the config",
            "sizes": (
                (1, 15, 26),
                (1, 30, 52),
                (2, 15, 26),
                (1, 45, 80),
                (5, 30, 52),
                (5, 15, 26),
                (9, 15, 26),
                (9, 30, 52),
            ),
        },
    ),
    Entry(video.qk_rmsnorm_across_heads, WAN_2_1_T2V_1_3B),
    Entry(
        video.qk_rmsnorm_across_heads,
        m_video.WAN_2_1_T2V_14B,
        {"sizes": ((1, 390), (1, 1560), (2, 1560), (1, 3120), (1, 4680), (1, 7800), (2, 3900), (4, 1560))},
    ),
    Entry(
        video.qk_rmsnorm_across_heads,
        m_video.WAN_2_2_TI2V_5B,
        {"sizes": ((1, 880), (2, 880), (1, 1760), (1, 3520), (4, 880), (1, 7040), (4, 1760), (2, 7040))},
    ),
    Entry(
        layers.fp8_linear,
        WAN_2_1_T2V_1_3B,
        {
            "suffix": "ffn_up_fp8",
            "site": "The feed-forward up projection (ffn.net.0.proj) of every block",
            "in_dim": ("transformer.num_attention_heads", "transformer.attention_head_dim"),
            "out_dim": "transformer.ffn_dim",
            "tokens": (390, 780, 1560, 3120, 4680, 7800, 11700, 17160),
            "token_text": "390 tokens per 240x416 latent frame, 1560 per 480x832 frame",
        },
    ),
    Entry(video.cogvideox_layernorm_zero, m_video.COGVIDEOX_2B),
    Entry(video.cogvideox_layernorm_zero, m_video.COGVIDEOX_5B),
    Entry(video.causal_conv3d_in, m_video.HUNYUAN_VIDEO),
    Entry(video.video_groupnorm_silu, m_video.HUNYUAN_VIDEO),
    Entry(video.divided_temporal_attention, m_video.TIMESFORMER_BASE),
    Entry(video.tubelet_embed, m_video.VIDEOMAE_BASE),
    Entry(video.tubelet_embed, m_video.VIDEOMAE_LARGE),
)

_QWEN_MERGED = (4, 16, 64, 256, 576, 1024, 2304, 4096)

MULTIMODAL: tuple[Entry, ...] = (
    Entry(media.vision_patch_merger, QWEN2_VL_7B),
    Entry(media.vision_patch_merger, m_vlm.QWEN2_VL_2B),
    Entry(media.vision_patch_merger, m_vlm.QWEN2_VL_72B, {"merged_tokens": _QWEN_MERGED}),
    Entry(vlm.qwen2_5_vl_merger, m_vlm.QWEN2_5_VL_3B),
    Entry(vlm.qwen2_5_vl_merger, m_vlm.QWEN2_5_VL_7B),
    Entry(vlm.qwen2_5_vl_merger, m_vlm.QWEN2_5_VL_72B, {"merged_tokens": _QWEN_MERGED}),
    Entry(vlm.vision_rope_2d, QWEN2_VL_7B, {"embed_key": "vision_config.embed_dim"}),
    Entry(vlm.vision_rope_2d, m_vlm.QWEN2_5_VL_7B, {"embed_key": "vision_config.hidden_size"}),
    Entry(vlm.internvl_projector, m_vlm.INTERNVL2_1B),
    Entry(vlm.internvl_projector, m_vlm.INTERNVL2_2B),
    Entry(vlm.idefics3_connector, m_vlm.IDEFICS3_8B),
    Entry(vlm.idefics3_connector, m_vlm.SMOLVLM_256M),
    Entry(vlm.idefics3_connector, m_vlm.SMOLVLM_INSTRUCT),
    Entry(vlm.gemma3_projector, m_vlm.GEMMA3_4B),
    Entry(vlm.gemma3_projector, m_vlm.GEMMA3_12B),
    Entry(vlm.gemma3_projector, m_vlm.GEMMA3_27B),
    Entry(vlm.paligemma_projector, m_vlm.PALIGEMMA_3B),
    Entry(vlm.paligemma_projector, m_vlm.PALIGEMMA2_3B),
    Entry(vlm.llama_vision_cross_attention, m_vlm.LLAMA_3_2_11B_VISION),
    Entry(
        vlm.llama_vision_cross_attention,
        m_vlm.LLAMA_3_2_90B_VISION,
        {
            "sizes": (
                (1, 1, 1),
                (1, 1, 4),
                (2, 1, 4),
                (4, 1, 4),
                (1, 32, 4),
                (1, 128, 4),
                (1, 512, 4),
                (1, 1024, 4),
            )
        },
    ),
    Entry(vlm.blip2_qformer_cross_attention, m_vlm.BLIP2_OPT_2_7B),
    Entry(
        layers.gelu_mlp,
        m_vlm.LLAVA_ONEVISION_0_5B,
        {
            "suffix": "mm_projector",
            "site": "The multimodal projector (LlavaOnevisionMultiModalProjector)",
            "in_dim": "vision_config.hidden_size",
            "hidden_dim": "text_config.hidden_size",
            "out_dim": "text_config.hidden_size",
            "act": "gelu",
            "per_item": 729,
            "sizes": (1, 2, 4, 6, 8, 10, 16, 32),
            "tags": ("multimodal", "projector"),
        },
    ),
    Entry(
        layers.gelu_mlp,
        m_vlm.JANUS_PRO_1B,
        {
            "suffix": "aligner",
            "site": "The understanding aligner (MlpProjector, mlp_gelu, depth 2)",
            "in_dim": "aligner_config.params.input_dim",
            "hidden_dim": "aligner_config.params.n_embed",
            "out_dim": "aligner_config.params.n_embed",
            "act": "gelu",
            "per_item": 576,
            "sizes": (1, 2, 4, 6, 8, 12, 16, 24),
            "tags": ("multimodal", "projector"),
        },
    ),
)

MEDIA_ENTRIES: tuple[Entry, ...] = (*DIFFUSION, *VISION, *AUDIO, *VIDEO, *MULTIMODAL)
