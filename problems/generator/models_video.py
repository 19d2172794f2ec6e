"""Video models added for the media catalogue: video diffusion transformers (Wan, HunyuanVideo,
LTX-Video, CogVideoX) and video encoders (TimeSformer, VideoMAE).

Same rules as :mod:`.models`: numbers copied from each repository's published ``config.json``
(diffusers pipelines: the component's ``<component>/config.json``, keys prefixed ``transformer.`` or
``vae.``), nested configs flattened with dots, list entries by index (``.0``, ``.1``). A value that
is a class default rather than written in the file says so in a comment. Constants that live in
modelling code are template options, not model data.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

VID = Category.video

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
