"""Image diffusion models added for the media catalogue: UNets (SD 2.1, SDXL), DiT and MMDiT
transformers (SD3, SD3.5, FLUX.1-schnell, PixArt-Sigma, DiT-XL/2, Sana, HunyuanDiT) and the SDXL VAE.

Same rules as :mod:`.models`: numbers copied from each repository's published ``config.json``
(diffusers pipelines: the component's ``<component>/config.json``, keys prefixed ``transformer.``,
``unet.`` or ``vae.``), nested configs flattened with dots, list entries by index (``.0``, ``.1``).
A value that is a class default rather than written in the file says so in a comment. Constants that
live in modelling code are template options, not model data.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

D = Category.diffusion

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
