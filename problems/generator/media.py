"""Operator templates of diffusion, vision, audio, video and multimodal models.

Same conventions as :mod:`.llm`: ``(model, **options) -> Problem``, constants baked into a plain
PyTorch reference, workloads at the model's real resolutions from small to large. Constants that
live in the modelling code rather than in config.json are keyword options whose defaults say where
they come from.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dtypes import DType
from ..load import Problem
from .common import BF16, FP16, FP32, const, expr, make_problem, reference_source, tensor, var
from .models import ModelConfig

BF = DType.bfloat16
HALF = DType.float16

FLUX_SINGLE_BLOCK_SIZES: tuple[tuple[int, int], ...] = (
    (1, 768),
    (1, 1536),
    (2, 1536),
    (1, 2816),
    (1, 4608),
    (2, 4608),
    (1, 6656),
    (4, 4608),
    (1, 9728),
    (1, 16896),
)
"""(batch_size, num_tokens): 512 text tokens + (H/16)(W/16) image tokens for 256^2, 512^2, 768^2,
1024^2, 1024x1536, 1536^2 and 2048^2 images."""


def adaln_modulation(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = FLUX_SINGLE_BLOCK_SIZES,
    eps: float = 1e-6,  # diffusers AdaLayerNormZeroSingle: nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
) -> Problem:
    """LayerNorm without affine parameters, modulated per sample: LN(x) * (1 + scale) + shift."""
    dim = model.integer("transformer.num_attention_heads") * model.integer("transformer.attention_head_dim")
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run(hidden_states, shift_msa, scale_msa):
            x = hidden_states.to(torch.float32)
            mean = x.mean(dim=-1, keepdim=True)
            variance = (x - mean).pow(2).mean(dim=-1, keepdim=True)
            normed = (x - mean) * torch.rsqrt(variance + EPS)
            # Per-sample modulation vectors broadcast over the token axis.
            scale = scale_msa.to(torch.float32)[:, None, :]
            shift = shift_msa.to(torch.float32)[:, None, :]
            return (normed * (1.0 + scale) + shift).to(hidden_states.dtype)
        """,
        EPS=eps,
    )
    return make_problem(
        name=f"{model.key}_adaln_modulation",
        model=model,
        op_type="adaln",
        tags=["norm", "layernorm", "adaln", "modulation", "dit", "memory-bound", "bf16"],
        description=f"""
            AdaLN-Zero modulation of the {model.display_name} single-stream transformer blocks
            (AdaLayerNormZeroSingle; inner dim {model.integer("transformer.num_attention_heads")} heads
            x {model.integer("transformer.attention_head_dim")} = {dim}): out = LayerNorm(x) *
            (1 + scale_msa) + shift_msa, where LayerNorm has no affine parameters, eps {eps:g}, and
            takes mean and biased variance over the {dim} channels of each token in fp32.
            hidden_states is [batch_size, num_tokens, {dim}] bf16 (512 text tokens followed by
            (H/16)*(W/16) image tokens for an HxW image); shift_msa and scale_msa are
            [batch_size, {dim}] bf16 per-sample vectors (chunks of norm.linear(silu(temb))) broadcast
            over all tokens of the sample. Result rounded to bf16. Memory-bound: one read, one write.
        """,
        axes={
            "batch_size": var("images denoised together"),
            "num_tokens": var("text + image tokens per sample"),
            "hidden_size": const(dim),
        },
        inputs={
            "hidden_states": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "token activations"),
            "shift_msa": tensor(["batch_size", "hidden_size"], BF, "per-sample shift"),
            "scale_msa": tensor(["batch_size", "hidden_size"], BF, "per-sample scale (applied as 1 + scale)"),
        },
        outputs={"output": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "modulated activations")},
        reference=reference,
        workloads=[{"batch_size": b, "num_tokens": n} for b, n in sizes],
        tolerance=BF16,
    )


SD15_LATENT_SIZES: tuple[tuple[int, int, int], ...] = (
    (1, 32, 32),
    (2, 32, 32),
    (1, 64, 64),
    (2, 64, 64),
    (2, 64, 96),
    (4, 64, 64),
    (2, 96, 96),
    (8, 64, 64),
    (2, 128, 128),
    (4, 128, 128),
    (8, 128, 128),
)
"""(batch_size, height, width) of the latent (image / 8): 256 to 1024 px, batch 2 = one image with
classifier-free guidance."""


def groupnorm_silu(model: ModelConfig, *, sizes: Sequence[tuple[int, int, int]] = SD15_LATENT_SIZES) -> Problem:
    """GroupNorm with affine parameters followed by SiLU (the head of a UNet ResnetBlock2D)."""
    channels = model.integer("unet.block_out_channels.0")
    groups = model.integer("unet.norm_num_groups")
    eps = model.number("unet.norm_eps")
    reference = reference_source(
        """
        import torch

        GROUPS = $GROUPS
        EPS = $EPS


        def run(x, norm_weight, norm_bias):
            batch, channels, height, width = x.shape
            grouped = x.to(torch.float32).reshape(batch, GROUPS, -1)
            mean = grouped.mean(dim=-1, keepdim=True)
            variance = (grouped - mean).pow(2).mean(dim=-1, keepdim=True)
            y = ((grouped - mean) * torch.rsqrt(variance + EPS)).reshape(batch, channels, height, width)
            y = y * norm_weight.to(torch.float32)[None, :, None, None] + norm_bias.to(torch.float32)[None, :, None, None]
            y = y * torch.sigmoid(y)
            return y.to(x.dtype)
        """,
        GROUPS=groups,
        EPS=eps,
    )
    per_group = channels // groups
    return make_problem(
        name=f"{model.key}_unet_groupnorm_silu",
        model=model,
        op_type="groupnorm_silu",
        tags=["norm", "groupnorm", "silu", "fusion", "unet", "nchw", "memory-bound", "fp16"],
        description=f"""
            GroupNorm followed by SiLU, the first two ops of every ResnetBlock2D in the
            {model.display_name} UNet, at the first down block's width ({channels} channels,
            {groups} groups of {per_group} channels, eps {eps:g}). x is NCHW [batch_size, {channels},
            height, width] fp16, contiguous; height and width are latent sizes (image / 8: 32 for
            256 px, 64 for 512 px, 96 for 768 px, 128 for 1024 px); batch 2 is one image with
            classifier-free guidance. Mean and biased variance per (sample, group) over
            {per_group} * height * width values in fp32, then the per-channel affine norm_weight /
            norm_bias, then silu(y) = y * sigmoid(y), rounded to fp16. The statistics need a
            reduction over a whole group before any output can be written: a two-pass or
            cluster/cooperative kernel over contiguous {per_group}*H*W slabs.
        """,
        axes={
            "batch_size": var("latents in the batch"),
            "height": var("latent height"),
            "width": var("latent width"),
            "num_channels": const(channels),
            "num_groups": const(groups),
        },
        constraints=["num_channels % num_groups == 0"],
        inputs={
            "x": tensor(["batch_size", "num_channels", "height", "width"], HALF, "feature map, NCHW"),
            "norm_weight": tensor(["num_channels"], HALF, "GroupNorm per-channel gain"),
            "norm_bias": tensor(["num_channels"], HALF, "GroupNorm per-channel bias"),
        },
        outputs={"output": tensor(["batch_size", "num_channels", "height", "width"], HALF, "silu(groupnorm(x))")},
        reference=reference,
        workloads=[{"batch_size": b, "height": h, "width": w} for b, h, w in sizes],
        tolerance=FP16,
    )


def patch_embed_layernorm(
    model: ModelConfig,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 24, 32, 48, 64),
) -> Problem:
    """ViT-style patch embedding (conv k = stride = patch) + position embedding + the first LayerNorm."""
    hidden = model.integer("vision_config.hidden_size")
    image = model.integer("vision_config.image_size")
    patch = model.integer("vision_config.patch_size")
    channels = model.integer("vision_config.num_channels")
    eps = model.number("vision_config.layer_norm_eps")
    grid = image // patch
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        PATCH = $PATCH
        EPS = $EPS


        def run(pixel_values, patch_weight, patch_bias, position_embedding, norm_weight, norm_bias):
            batch, channels, height, width = pixel_values.shape
            grid_h, grid_w = height // PATCH, width // PATCH
            # Conv2d(kernel = stride = PATCH, padding "valid") is a GEMM over non-overlapping patches;
            # pixels past grid * PATCH are not covered.
            x = pixel_values[:, :, : grid_h * PATCH, : grid_w * PATCH]
            patches = x.reshape(batch, channels, grid_h, PATCH, grid_w, PATCH)
            patches = patches.permute(0, 2, 4, 1, 3, 5).reshape(batch, grid_h * grid_w, channels * PATCH * PATCH)
            embeddings = F.linear(patches, patch_weight, patch_bias)
            embeddings = embeddings + position_embedding
            h = embeddings.to(torch.float32)
            mean = h.mean(dim=-1, keepdim=True)
            variance = (h - mean).pow(2).mean(dim=-1, keepdim=True)
            normed = (h - mean) * torch.rsqrt(variance + EPS)
            normed = normed * norm_weight.to(torch.float32) + norm_bias.to(torch.float32)
            return embeddings, normed.to(embeddings.dtype)
        """,
        PATCH=patch,
        EPS=eps,
    )
    covered = grid * patch
    crop_text = (
        f"{image} is not a multiple of {patch}: the convolution covers the top-left {covered}x{covered} pixels and ignores the rest."
        if covered != image
        else ""
    )
    return make_problem(
        name=f"{model.key}_patch_embed_layernorm",
        model=model,
        op_type="patch_embed",
        tags=["patch-embed", "conv2d", "gemm", "layernorm", "fusion", "vit", "bf16"],
        description=f"""
            Input stage of the {model.display_name} vision encoder: patch embedding
            Conv2d({channels} -> {hidden}, kernel = stride = {patch}) + bias, plus the learned position
            embedding, then the first encoder layer's layer_norm1 (eps {eps:g}, fp32 statistics).
            pixel_values is [batch_size, {channels}, {image}, {image}] bf16 (NCHW); {crop_text}
            patch_weight is the conv weight flattened to [{hidden}, {channels * patch * patch}] in
            (channel, row, col) order, so embeddings = patches @ patch_weight^T + patch_bias with
            patches taken row-major over the {grid}x{grid} grid, each flattened (channel, row, col);
            position_embedding is [{grid * grid}, {hidden}]. Outputs: embeddings [batch_size,
            {grid * grid}, {hidden}] bf16 (the residual stream; the GEMM accumulates in fp32 and rounds
            to bf16 before the bf16 position add) and normed, the LayerNorm of embeddings with
            norm_weight / norm_bias, bf16. A GEMM (K = {channels * patch * patch}) whose A operand is
            gathered from image patches, with a per-row LayerNorm epilogue over N = {hidden}.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "num_channels": const(channels),
            "image_size": const(image),
            "patch_size": const(patch),
            "grid": expr("image_size // patch_size", "patches per side"),
            "num_patches": expr("grid * grid", "patches per image"),
            "patch_dim": expr("num_channels * patch_size * patch_size", "values per patch"),
            "hidden_size": const(hidden),
        },
        inputs={
            "pixel_values": tensor(["batch_size", "num_channels", "image_size", "image_size"], BF, "images, NCHW"),
            "patch_weight": tensor(["hidden_size", "patch_dim"], BF, "conv weight flattened (channel, row, col)"),
            "patch_bias": tensor(["hidden_size"], BF, "conv bias"),
            "position_embedding": tensor(["num_patches", "hidden_size"], BF, "learned position embedding"),
            "norm_weight": tensor(["hidden_size"], BF, "layer_norm1 gain"),
            "norm_bias": tensor(["hidden_size"], BF, "layer_norm1 bias"),
        },
        outputs={
            "embeddings": tensor(["batch_size", "num_patches", "hidden_size"], BF, "patch + position embeddings"),
            "normed": tensor(["batch_size", "num_patches", "hidden_size"], BF, "layer_norm1(embeddings)"),
        },
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16,
    )


def attention_softmax(
    model: ModelConfig, *, batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 24, 32, 48, 64)
) -> Problem:
    """Scaled softmax over materialised attention scores (eager attention of a ViT)."""
    hidden = model.integer("hidden_size")
    heads = model.integer("num_attention_heads")
    head_dim = hidden // heads
    tokens = (model.integer("image_size") // model.integer("patch_size")) ** 2 + 1  # + [CLS]
    scale = head_dim**-0.5
    reference = reference_source(
        """
        import torch

        SCALE = $SCALE


        def run(scores):
            x = scores * SCALE
            x = x - x.amax(dim=-1, keepdim=True)
            e = torch.exp(x)
            return e / e.sum(dim=-1, keepdim=True)
        """,
        SCALE=scale,
    )
    return make_problem(
        name=f"{model.key}_attention_softmax",
        model=model,
        op_type="softmax",
        tags=["softmax", "attention", "vit", "memory-bound", "fp32"],
        description=f"""
            The softmax of {model.display_name}'s eager self-attention: probs = softmax(scores *
            {scale:g}) over the key axis, where scores = Q K^T of {heads} heads of head_dim
            {head_dim} over {tokens} tokens ({tokens - 1} patches + [CLS]). scores is
            [batch_size, {heads}, {tokens}, {tokens}] fp32, contiguous; probs has the same shape and
            dtype. Each row of {tokens} values is independent: subtract the row max, exponentiate,
            divide by the sum, all in fp32 (fast exp is fine, bf16 is not). Rows are short and odd
            ({tokens} floats), so a row per warp with vectorised loads is memory-bound.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "num_heads": const(heads),
            "seq_len": const(tokens, "patches + [CLS]"),
        },
        inputs={"scores": tensor(["batch_size", "num_heads", "seq_len", "seq_len"], DType.float32, "Q K^T (unscaled)")},
        outputs={"probs": tensor(["batch_size", "num_heads", "seq_len", "seq_len"], DType.float32, "attention probabilities")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=FP32,
    )


WHISPER_SIZES: tuple[tuple[int, int], ...] = (
    (1, 100),
    (1, 500),
    (1, 1500),
    (1, 3000),
    (2, 3000),
    (4, 3000),
    (8, 3000),
    (16, 3000),
    (32, 3000),
)
"""(batch_size, num_frames): 1 s to 30 s of audio (100 frames per second), then batches of 30 s windows."""


def conv1d_gelu(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = WHISPER_SIZES,
    kernel_size: int = 3,  # WhisperEncoder.conv1 = nn.Conv1d(num_mel_bins, d_model, kernel_size=3, padding=1)
) -> Problem:
    """The audio encoder's first Conv1d (stride 1, same padding) followed by exact GELU."""
    mels = model.integer("num_mel_bins")
    d_model = model.integer("d_model")
    padding = kernel_size // 2
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        PADDING = $PADDING


        def run(input_features, conv1_weight, conv1_bias):
            y = F.conv1d(input_features, conv1_weight, conv1_bias, stride=1, padding=PADDING)
            return F.gelu(y)  # exact (erf) GELU
        """,
        PADDING=padding,
    )
    return make_problem(
        name=f"{model.key}_conv1d_gelu",
        model=model,
        op_type="conv1d_gelu",
        tags=["conv1d", "gelu", "fusion", "audio", "implicit-gemm", "fp16", "tensor-core"],
        description=f"""
            First convolution of the {model.display_name} audio encoder with its GELU:
            Conv1d({mels} mel bins -> {d_model} channels, kernel {kernel_size}, stride 1, padding
            {padding}) + bias, then exact erf GELU. input_features is the log-mel spectrogram
            [batch_size, {mels}, num_frames] fp16 (channels first; 100 frames per second, 3000 for
            the 30 s window the encoder is trained on); conv1_weight is [{d_model}, {mels},
            {kernel_size}] (out, in, tap), conv1_bias [{d_model}]; output [batch_size, {d_model},
            num_frames] fp16, channels first. An implicit GEMM with K = {mels * kernel_size} (the
            {kernel_size} taps over zero-padded frames), fp32 accumulation, bias and GELU in the
            epilogue.
        """,
        axes={
            "batch_size": var("audio windows in the batch"),
            "num_frames": var("spectrogram frames"),
            "num_mel_bins": const(mels),
            "d_model": const(d_model),
            "kernel_size": const(kernel_size),
        },
        inputs={
            "input_features": tensor(["batch_size", "num_mel_bins", "num_frames"], HALF, "log-mel spectrogram"),
            "conv1_weight": tensor(["d_model", "num_mel_bins", "kernel_size"], HALF, "conv weight (out, in, tap)"),
            "conv1_bias": tensor(["d_model"], HALF, "conv bias"),
        },
        outputs={"hidden_states": tensor(["batch_size", "d_model", "num_frames"], HALF, "gelu(conv1(x))")},
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": t} for b, t in sizes],
        tolerance=FP16,
    )


WAN_LATENT_SIZES: tuple[tuple[int, int, int, int], ...] = (
    (1, 1, 30, 52),
    (1, 1, 60, 104),
    (1, 5, 60, 104),
    (1, 1, 90, 160),
    (1, 11, 60, 104),
    (1, 21, 60, 104),
    (2, 21, 60, 104),
    (1, 11, 90, 160),
    (1, 21, 90, 160),
)
"""(batch_size, latent frames, latent height, latent width): single images and 17/41/81-frame clips at
240x416, 480x832 and 720x1280 (latent frames = (frames - 1) / 4 + 1, latent pixels = pixels / 8)."""


def patch_embed_3d(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int, int, int]] = WAN_LATENT_SIZES,
    patch_keys: tuple[str, str, str] = ("transformer.patch_size.t", "transformer.patch_size.h", "transformer.patch_size.w"),
) -> Problem:
    """Video patch embedding: Conv3d with kernel = stride = patch, flattened to tokens.

    ``patch_keys`` name the (t, h, w) patch sizes in the config (HunyuanVideo and LTX-Video spell
    them ``patch_size_t`` and ``patch_size``).
    """
    channels = model.integer("transformer.in_channels")
    dim = model.integer("transformer.num_attention_heads") * model.integer("transformer.attention_head_dim")
    pt, ph, pw = (model.integer(k) for k in patch_keys)
    patch_dim = channels * pt * ph * pw
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        PT, PH, PW = $PT, $PH, $PW


        def run(latents, patch_weight, patch_bias):
            batch, channels, frames, height, width = latents.shape
            gt, gh, gw = frames // PT, height // PH, width // PW
            # Conv3d(kernel = stride = patch) is a GEMM over non-overlapping (t, h, w) patches.
            x = latents.reshape(batch, channels, gt, PT, gh, PH, gw, PW)
            x = x.permute(0, 2, 4, 6, 1, 3, 5, 7).reshape(batch, gt * gh * gw, channels * PT * PH * PW)
            return F.linear(x, patch_weight, patch_bias)
        """,
        PT=pt,
        PH=ph,
        PW=pw,
    )
    return make_problem(
        name=f"{model.key}_patch_embed_3d",
        model=model,
        op_type="patch_embed",
        tags=["patch-embed", "conv3d", "gemm", "video", "dit", "memory-bound", "bf16"],
        description=f"""
            Patch embedding of the {model.display_name} video diffusion transformer:
            Conv3d({channels} -> {dim}, kernel = stride = ({pt}, {ph}, {pw})) + bias over the VAE
            latent video, flattened to a token sequence (patch_embedding followed by
            flatten(2).transpose(1, 2)). latents is [batch_size, {channels}, num_frames, height,
            width] bf16 (NCTHW, contiguous; latent frames = (video frames - 1) / 4 + 1, latent
            height/width = pixels / 8, so 480x832 is 60x104 and 720x1280 is 90x160). patch_weight is
            the conv weight flattened to [{dim}, {patch_dim}] in (channel, t, h, w) order. Output
            tokens [batch_size, num_tokens, {dim}] bf16 with num_tokens = (num_frames/{pt}) *
            (height/{ph}) * (width/{pw}) in (t, h, w) row-major order; fp32 accumulation. A GEMM with
            K = {patch_dim} and a gathered A operand: the {dim}-wide output dominates the traffic.
        """,
        axes={
            "batch_size": var("videos in the batch"),
            "num_frames": var("latent frames"),
            "height": var("latent height"),
            "width": var("latent width"),
            "in_channels": const(channels),
            "patch_t": const(pt),
            "patch_h": const(ph),
            "patch_w": const(pw),
            "patch_dim": expr("in_channels * patch_t * patch_h * patch_w", "values per patch"),
            "num_tokens": expr("(num_frames // patch_t) * (height // patch_h) * (width // patch_w)"),
            "hidden_size": const(dim),
        },
        constraints=["num_frames % patch_t == 0", "height % patch_h == 0", "width % patch_w == 0"],
        inputs={
            "latents": tensor(["batch_size", "in_channels", "num_frames", "height", "width"], BF, "latent video, NCTHW"),
            "patch_weight": tensor(["hidden_size", "patch_dim"], BF, "conv weight flattened (channel, t, h, w)"),
            "patch_bias": tensor(["hidden_size"], BF, "conv bias"),
        },
        outputs={"tokens": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "patch tokens")},
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": f, "height": h, "width": w} for b, f, h, w in sizes],
        tolerance=BF16,
    )


def vision_patch_merger(
    model: ModelConfig,
    *,
    merged_tokens: Sequence[int] = (4, 16, 64, 256, 576, 1024, 2304, 4096, 8192),
    eps: float = 1e-6,  # Qwen2-VL PatchMerger: nn.LayerNorm(context_dim, eps=1e-6)
) -> Problem:
    """LayerNorm, 2x2 patch merge, Linear + GELU + Linear into the language model's width."""
    embed = model.integer("vision_config.embed_dim")
    merge = model.integer("vision_config.spatial_merge_size")
    out_dim = model.integer("vision_config.hidden_size")
    unit = merge * merge
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        EPS = $EPS
        MERGED_DIM = $MERGED_DIM


        def run(hidden_states, ln_q_weight, ln_q_bias, mlp_fc1_weight, mlp_fc1_bias, mlp_fc2_weight, mlp_fc2_bias):
            x = hidden_states.to(torch.float32)
            mean = x.mean(dim=-1, keepdim=True)
            variance = (x - mean).pow(2).mean(dim=-1, keepdim=True)
            x = (x - mean) * torch.rsqrt(variance + EPS)
            x = x * ln_q_weight.to(torch.float32) + ln_q_bias.to(torch.float32)
            # Consecutive patches form one merge window: concatenate them into one token.
            x = x.to(hidden_states.dtype).reshape(-1, MERGED_DIM)
            x = F.gelu(F.linear(x, mlp_fc1_weight, mlp_fc1_bias))  # exact (erf) GELU
            return F.linear(x, mlp_fc2_weight, mlp_fc2_bias)
        """,
        EPS=eps,
        MERGED_DIM=embed * unit,
    )
    return make_problem(
        name=f"{model.key}_vision_merger",
        model=model,
        op_type="patch_merger",
        tags=["multimodal", "vision-language", "layernorm", "gemm", "mlp", "gelu", "bf16", "tensor-core"],
        description=f"""
            PatchMerger at the end of the {model.display_name} vision tower, turning {embed}-wide ViT
            patch features into {out_dim}-wide language-model tokens. LayerNorm ln_q over each patch's
            {embed} channels (eps {eps:g}, fp32 statistics, affine, rounded to bf16); each run of
            {unit} consecutive patches (one {merge}x{merge} spatial window: the vision tower already
            orders patches window by window) is concatenated into a {embed * unit}-vector; then
            Linear({embed * unit}, {embed * unit}) + exact GELU + Linear({embed * unit}, {out_dim}).
            hidden_states is [num_patches, {embed}] bf16 with num_patches = {unit} * num_merged_tokens
            (all images and frames of a request concatenated; a 448x448 image gives 1024 patches and
            256 tokens); weights are bf16 in nn.Linear layout [out, in]; both GEMMs accumulate in
            fp32 and round to bf16. Output [num_merged_tokens, {out_dim}] bf16.
        """,
        axes={
            "num_merged_tokens": var("language-model tokens produced"),
            "merge_unit": const(unit, "patches per merged token (spatial_merge_size^2)"),
            "num_patches": expr("num_merged_tokens * merge_unit"),
            "embed_dim": const(embed),
            "merged_dim": expr("embed_dim * merge_unit"),
            "hidden_size": const(out_dim),
        },
        inputs={
            "hidden_states": tensor(["num_patches", "embed_dim"], BF, "vision tower output, window-ordered"),
            "ln_q_weight": tensor(["embed_dim"], BF, "LayerNorm gain"),
            "ln_q_bias": tensor(["embed_dim"], BF, "LayerNorm bias"),
            "mlp_fc1_weight": tensor(["merged_dim", "merged_dim"], BF, "first Linear, [out, in]"),
            "mlp_fc1_bias": tensor(["merged_dim"], BF, "first Linear bias"),
            "mlp_fc2_weight": tensor(["hidden_size", "merged_dim"], BF, "second Linear, [out, in]"),
            "mlp_fc2_bias": tensor(["hidden_size"], BF, "second Linear bias"),
        },
        outputs={"merged": tensor(["num_merged_tokens", "hidden_size"], BF, "language-model tokens")},
        reference=reference,
        workloads=[{"num_merged_tokens": m} for m in merged_tokens],
        tolerance=BF16,
    )
