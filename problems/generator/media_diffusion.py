"""Operator templates of image diffusion models outside the diffusion transformer: timestep embedding,
UNet blocks, the VAE's mid-block attention.

Conventions of :mod:`.media`: ``(model, **options) -> Problem``, constants baked into a plain
PyTorch reference, workloads at the model's real resolutions. Latent sizes are image / 8 (SD, SDXL,
SD3 and FLUX VAEs). The diffusion transformers (DiT, MMDiT, FLUX, Sana) are in :mod:`.media_dit`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, F32, I64, Dim, dim, problem_name
from .models import ModelConfig

# -- timestep embedding --------------------------------------------------------------------------

TIMESTEP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Timesteps per call: one image, classifier-free guidance pairs, serving batches, training batches."""


def timestep_embedding(
    model: ModelConfig,
    *,
    freq_dim: Dim,
    embed_dim: Dim,
    embed_mult: int = 1,
    flip_sin_to_cos: bool = True,
    downscale_freq_shift: int = 0,
    float_timesteps: bool = False,
    site: str,
    batch_sizes: Sequence[int] = TIMESTEP_BATCHES,
    max_period: int = 10000,  # diffusers get_timestep_embedding default
) -> Problem:
    """Sinusoidal timestep features followed by TimestepEmbedding (Linear, SiLU, Linear)."""
    freqs = dim(model, freq_dim)
    out = dim(model, embed_dim) * embed_mult
    half = freqs // 2
    reference = reference_source(
        """
        import math

        import torch
        import torch.nn.functional as F

        HALF = $HALF
        SHIFT = $SHIFT
        FLIP = $FLIP
        MAX_PERIOD = $MAX_PERIOD


        def run(timesteps, linear_1_weight, linear_1_bias, linear_2_weight, linear_2_bias):
            exponent = -math.log(MAX_PERIOD) * torch.arange(HALF, dtype=torch.float32, device=timesteps.device)
            freqs = torch.exp(exponent / (HALF - SHIFT))
            args = timesteps.to(torch.float32)[:, None] * freqs[None, :]
            sin, cos = torch.sin(args), torch.cos(args)
            emb = torch.cat([cos, sin] if FLIP else [sin, cos], dim=-1).to(linear_1_weight.dtype)
            h = F.silu(F.linear(emb, linear_1_weight, linear_1_bias))
            return F.linear(h, linear_2_weight, linear_2_bias)
        """,
        HALF=half,
        SHIFT=downscale_freq_shift,
        FLIP=flip_sin_to_cos,
        MAX_PERIOD=max_period,
    )
    order = "cos then sin" if flip_sin_to_cos else "sin then cos"
    t_dtype = F32 if float_timesteps else I64
    t_text = (
        "fp32 timesteps (flow matching: sigma * 1000, any real value is valid)"
        if float_timesteps
        else "int64 timesteps, in [0, 1000)"
    )
    return make_problem(
        name=problem_name(model, "timestep_embedding"),
        model=model,
        op_type="timestep_embedding",
        tags=["timestep-embedding", "sinusoidal", "gemm", "silu", "mlp", "diffusion", "bf16"],
        description=f"""
            Timestep conditioning of {model.display_name} ({site}): Timesteps({freqs},
            flip_sin_to_cos={flip_sin_to_cos}, downscale_freq_shift={downscale_freq_shift}) then
            TimestepEmbedding Linear({freqs} -> {out}) + SiLU + Linear({out} -> {out}). timesteps is
            [batch_size] {t_text}. Features in fp32: freqs[i] = exp(-ln({max_period}) * i /
            ({half} - {downscale_freq_shift})) for i < {half}, args = t * freqs, emb = concat of
            {order} ([batch_size, {freqs}]), rounded to bf16; the two Linears are bf16 with fp32
            accumulation and bf16 outputs. Output [batch_size, {out}] bf16. A skinny GEMM chain (M =
            batch_size): reading the {2 * (freqs * out + out * out) / 2**20:.1f} MiB of weights
            bounds it, so fuse the sinusoid into the first GEMM's A-operand load.
        """,
        axes={"batch_size": var("timesteps in the call"), "freq_dim": const(freqs), "embed_dim": const(out)},
        inputs={
            "timesteps": tensor(["batch_size"], t_dtype, t_text),
            "linear_1_weight": tensor(["embed_dim", "freq_dim"], BF, "first Linear, [out, in]"),
            "linear_1_bias": tensor(["embed_dim"], BF, "first Linear bias"),
            "linear_2_weight": tensor(["embed_dim", "embed_dim"], BF, "second Linear, [out, in]"),
            "linear_2_bias": tensor(["embed_dim"], BF, "second Linear bias"),
        },
        outputs={"temb": tensor(["batch_size", "embed_dim"], BF, "timestep embedding")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16,
    )


# -- UNet ------------------------------------------------------------------------------------------

UNET_MID_SIZES: tuple[tuple[int, int, int], ...] = (
    (1, 8, 8),
    (2, 8, 8),
    (1, 12, 12),
    (2, 12, 12),
    (1, 16, 16),
    (4, 12, 12),
    (2, 16, 16),
    (8, 12, 12),
    (4, 16, 16),
)
"""(batch_size, height, width) at the UNet's deepest level (latent / 8 = image / 64): 512, 768 and
1024 px, one image, a classifier-free-guidance pair and serving batches."""


def unet_resnet_block(
    model: ModelConfig,
    *,
    channels: Dim,
    temb_dim: Dim,
    temb_mult: int = 4,  # UNet2DConditionModel: time_embed_dim = block_out_channels[0] * 4
    site: str,
    sizes: Sequence[tuple[int, int, int]] = UNET_MID_SIZES,
) -> Problem:
    """A whole ResnetBlock2D: GN, SiLU, conv3x3, + time embedding, GN, SiLU, conv3x3, + residual."""
    c = dim(model, channels)
    t = dim(model, temb_dim) * temb_mult
    groups = model.integer("unet.norm_num_groups")
    eps = model.number("unet.norm_eps")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        GROUPS = $GROUPS
        EPS = $EPS


        def group_norm_silu(x, weight, bias):
            y = F.group_norm(x.to(torch.float32), GROUPS, weight.float(), bias.float(), EPS)
            return F.silu(y).to(x.dtype)


        def run(x, temb, norm1_weight, norm1_bias, conv1_weight, conv1_bias, time_emb_proj_weight,
                time_emb_proj_bias, norm2_weight, norm2_bias, conv2_weight, conv2_bias):
            h = group_norm_silu(x, norm1_weight, norm1_bias)
            h = F.conv2d(h, conv1_weight, conv1_bias, padding=1)
            t = F.linear(F.silu(temb), time_emb_proj_weight, time_emb_proj_bias)
            h = h + t[:, :, None, None]
            h = group_norm_silu(h, norm2_weight, norm2_bias)
            h = F.conv2d(h, conv2_weight, conv2_bias, padding=1)
            return x + h
        """,
        GROUPS=groups,
        EPS=eps,
    )
    shape = ["batch_size", "channels", "height", "width"]
    return make_problem(
        name=problem_name(model, "unet_resnet_block"),
        model=model,
        op_type="resnet_block",
        tags=[
            "unet",
            "resnet-block",
            "groupnorm",
            "silu",
            "conv2d",
            "implicit-gemm",
            "fusion",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            One whole ResnetBlock2D of the {model.display_name} UNet ({site}, {c} channels in and
            out, temb {t}): h = conv1(silu(GroupNorm1(x))) + time_emb_proj(silu(temb))[:, :, None,
            None]; out = x + conv2(silu(GroupNorm2(h))). GroupNorms have {groups} groups, eps {eps:g},
            fp32 statistics and affine weights, output (after SiLU) rounded to bf16; convs are 3x3,
            stride 1, padding 1, with bias, bf16 with fp32 accumulation. x is NCHW [batch_size,
            {c}, height, width] bf16 with height, width = image / 64 (8 for 512 px, 12 for 768,
            16 for 1024); temb [batch_size, {t}] bf16. Output like x. Two implicit GEMMs with K =
            {9 * c}; the {2 * 2 * 9 * c * c / 2**20:.0f} MiB of conv weights dominate the traffic
            at these small spatial sizes, so batching and weight reuse decide the speed.
        """,
        axes={
            "batch_size": var("latents in the batch"),
            "height": var("feature-map height"),
            "width": var("feature-map width"),
            "channels": const(c),
            "temb_dim": const(t),
            "kernel": const(3),
        },
        inputs={
            "x": tensor(shape, BF, "block input, NCHW"),
            "temb": tensor(["batch_size", "temb_dim"], BF, "time embedding"),
            "norm1_weight": tensor(["channels"], BF, "first GroupNorm weight"),
            "norm1_bias": tensor(["channels"], BF, "first GroupNorm bias"),
            "conv1_weight": tensor(["channels", "channels", "kernel", "kernel"], BF, "first conv weight"),
            "conv1_bias": tensor(["channels"], BF, "first conv bias"),
            "time_emb_proj_weight": tensor(["channels", "temb_dim"], BF, "time embedding projection"),
            "time_emb_proj_bias": tensor(["channels"], BF, "time embedding projection bias"),
            "norm2_weight": tensor(["channels"], BF, "second GroupNorm weight"),
            "norm2_bias": tensor(["channels"], BF, "second GroupNorm bias"),
            "conv2_weight": tensor(["channels", "channels", "kernel", "kernel"], BF, "second conv weight"),
            "conv2_bias": tensor(["channels"], BF, "second conv bias"),
        },
        outputs={"output": tensor(shape, BF, "block output")},
        reference=reference,
        workloads=[{"batch_size": b, "height": h, "width": w} for b, h, w in sizes],
        tolerance=BF16,
    )


UNET_ATTN_SIZES: tuple[tuple[int, int], ...] = (
    (1, 1024),
    (2, 1024),
    (1, 2304),
    (1, 4096),
    (2, 4096),
    (2, 9216),
    (4, 4096),
    (8, 4096),
    (4, 9216),
)
"""(batch_size, spatial tokens) at a UNet level: 32x32, 48x48, 64x64 and 96x96 feature maps."""


def unet_cross_attention(
    model: ModelConfig,
    *,
    level: int,
    text_len: int = 77,  # CLIP tokenizer max_length
    site: str,
    sizes: Sequence[tuple[int, int]] = UNET_ATTN_SIZES,
    eps: float = 1e-5,  # BasicTransformerBlock norm2: nn.LayerNorm(dim, eps=1e-5)
) -> Problem:
    """The cross-attention sub-block of a UNet BasicTransformerBlock: LN, q from pixels, k/v from text."""
    c = model.integer(f"unet.block_out_channels.{level}")
    heads = model.integer(f"unet.attention_head_dim.{level}")  # diffusers' legacy name: number of heads
    ctx = model.integer("unet.cross_attention_dim")
    hd = c // heads
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        EPS = $EPS


        def run(hidden_states, encoder_hidden_states, norm2_weight, norm2_bias, to_q_weight, to_k_weight,
                to_v_weight, to_out_weight, to_out_bias):
            b, n, c = hidden_states.shape
            x = F.layer_norm(hidden_states.float(), (c,), norm2_weight.float(), norm2_bias.float(), EPS)
            x = x.to(hidden_states.dtype)
            q = F.linear(x, to_q_weight).reshape(b, n, HEADS, -1).transpose(1, 2)
            k = F.linear(encoder_hidden_states, to_k_weight).reshape(b, -1, HEADS, c // HEADS).transpose(1, 2)
            v = F.linear(encoder_hidden_states, to_v_weight).reshape(b, -1, HEADS, c // HEADS).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c)
            return hidden_states + F.linear(o, to_out_weight, to_out_bias)
        """,
        HEADS=heads,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "unet_cross_attention"),
        model=model,
        op_type="cross_attention",
        tags=["unet", "cross-attention", "attention", "layernorm", "gemm", "fusion", "bf16", "tensor-core"],
        description=f"""
            Text cross-attention of a {model.display_name} UNet transformer block ({site}, {c}
            channels, {heads} heads of {hd}): out = x + to_out(attention(to_q(LN(x)),
            to_k(text), to_v(text))). hidden_states is [batch_size, num_tokens, {c}] bf16, the
            feature map flattened row-major (num_tokens = h * w, 4096 for a 512 px image at this
            level); encoder_hidden_states [batch_size, {text_len}, {ctx}] bf16 text-encoder states.
            LayerNorm eps {eps:g} with fp32 statistics and affine weights, rounded to bf16; to_q /
            to_k / to_v have no bias, to_out has one; softmax(q k^T / sqrt({hd})) over the
            {text_len} text tokens in fp32, no mask. All GEMMs fp32-accumulated, bf16 results.
            Output like hidden_states. The keys are few ({text_len}): one tile of K and V per head
            fits in shared memory for every query block.
        """,
        axes={
            "batch_size": var("latents in the batch"),
            "num_tokens": var("spatial tokens (h * w)"),
            "channels": const(c),
            "text_len": const(text_len),
            "context_dim": const(ctx),
        },
        inputs={
            "hidden_states": tensor(["batch_size", "num_tokens", "channels"], BF, "spatial tokens"),
            "encoder_hidden_states": tensor(["batch_size", "text_len", "context_dim"], BF, "text states"),
            "norm2_weight": tensor(["channels"], BF, "LayerNorm weight"),
            "norm2_bias": tensor(["channels"], BF, "LayerNorm bias"),
            "to_q_weight": tensor(["channels", "channels"], BF, "query projection"),
            "to_k_weight": tensor(["channels", "context_dim"], BF, "key projection"),
            "to_v_weight": tensor(["channels", "context_dim"], BF, "value projection"),
            "to_out_weight": tensor(["channels", "channels"], BF, "output projection"),
            "to_out_bias": tensor(["channels"], BF, "output projection bias"),
        },
        outputs={"output": tensor(["batch_size", "num_tokens", "channels"], BF, "x + attention")},
        reference=reference,
        workloads=[{"batch_size": b, "num_tokens": n} for b, n in sizes],
        tolerance=BF16,
    )


# -- VAE -------------------------------------------------------------------------------------------

VAE_LATENT_SIZES: tuple[tuple[int, int, int], ...] = (
    (1, 32, 32),
    (1, 32, 48),
    (1, 48, 48),
    (1, 64, 64),
    (2, 64, 64),
    (1, 96, 96),
    (1, 128, 128),
    (1, 96, 160),
    (2, 128, 128),
)
"""(batch_size, latent height, latent width): 256 to 1024 px images and a 768x1280 one."""


def vae_mid_attention(
    model: ModelConfig,
    *,
    prefix: str = "",
    site: str = "decoder mid-block",
    eps: float = 1e-6,  # AutoencoderKL UNetMidBlock2D: resnet_eps=1e-6, shared with its Attention
    sizes: Sequence[tuple[int, int, int]] = VAE_LATENT_SIZES,
) -> Problem:
    """The VAE mid-block self-attention: GroupNorm, single-head attention over all pixels, residual."""
    c = model.integer(f"{prefix}block_out_channels.3")
    groups = model.integer(f"{prefix}norm_num_groups")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        GROUPS = $GROUPS
        EPS = $EPS


        def run(x, group_norm_weight, group_norm_bias, to_qkv_weight, to_qkv_bias, to_out_weight, to_out_bias):
            b, c, h, w = x.shape
            y = F.group_norm(x.to(torch.float32), GROUPS, group_norm_weight.float(), group_norm_bias.float(), EPS)
            y = y.to(x.dtype).reshape(b, c, h * w).transpose(1, 2)
            q, k, v = F.linear(y, to_qkv_weight, to_qkv_bias).chunk(3, dim=-1)
            o = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0]
            o = F.linear(o, to_out_weight, to_out_bias)
            return x + o.transpose(1, 2).reshape(b, c, h, w)
        """,
        GROUPS=groups,
        EPS=eps,
    )
    shape = ["batch_size", "channels", "height", "width"]
    return make_problem(
        name=problem_name(model, "vae_mid_attention"),
        model=model,
        op_type="attention",
        tags=["vae", "attention", "groupnorm", "gemm", "single-head", "nchw", "bf16", "tensor-core"],
        description=f"""
            Self-attention of the {model.display_name} VAE {site} at {c} channels: out = x +
            to_out(attention(GroupNorm(x))) with one head of dimension {c} over every latent pixel.
            x is NCHW [batch_size, {c}, height, width] bf16 at latent resolution (image / 8: 32x32
            for 256 px, 128x128 for 1024 px). GroupNorm {groups} groups, eps {eps:g}, fp32
            statistics, affine, rounded to bf16; the pixels then become h * w tokens of {c}
            channels; q, k, v = one packed Linear to_qkv_weight [{3 * c}, {c}] (rows q, k, v) +
            bias; softmax(q k^T / sqrt({c})) in fp32, no mask; to_out Linear + bias; the result is
            added back to x in NCHW. bf16 GEMMs with fp32 accumulation. The score matrix is (h*w)^2
            (268M entries at 1024 px): a flash-attention kernel with head_dim {c} is required.
        """,
        axes={
            "batch_size": var("latents in the batch"),
            "height": var("latent height"),
            "width": var("latent width"),
            "channels": const(c),
            "qkv_dim": expr("3 * channels"),
        },
        inputs={
            "x": tensor(shape, BF, "mid-block activations, NCHW"),
            "group_norm_weight": tensor(["channels"], BF, "GroupNorm weight"),
            "group_norm_bias": tensor(["channels"], BF, "GroupNorm bias"),
            "to_qkv_weight": tensor(["qkv_dim", "channels"], BF, "to_q, to_k, to_v stacked"),
            "to_qkv_bias": tensor(["qkv_dim"], BF, "q, k, v biases stacked"),
            "to_out_weight": tensor(["channels", "channels"], BF, "output projection"),
            "to_out_bias": tensor(["channels"], BF, "output projection bias"),
        },
        outputs={"output": tensor(shape, BF, "x + attention")},
        reference=reference,
        workloads=[{"batch_size": b, "height": h, "width": w} for b, h, w in sizes],
        tolerance=BF16,
    )
