"""Operator templates of video models: 3D RoPE, video DiT norms, causal 3D VAE convs, divided attention.

Latent sizes follow each VAE: Wan 2.1, HunyuanVideo and CogVideoX compress 4x in time ((frames - 1)
/ 4 + 1 latent frames) and 8x in space; transformers then patch 2x2 spatially.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, BF16_ATTENTION, BF16_BLOCK, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, I64, Dim, dim, problem_name
from .models import ModelConfig

VIDEO_GRIDS: tuple[tuple[int, int, int], ...] = (
    (1, 15, 26),
    (1, 30, 52),
    (2, 15, 26),
    (5, 30, 52),
    (11, 30, 52),
    (21, 15, 26),
    (21, 30, 52),
    (11, 45, 80),
    (21, 45, 80),
)
"""(latent frames, patch rows, patch columns) after 2x2 patching: 240x416, 480x832 and 720x1280
videos of 1 to 81 frames (1, 5, 11, 21 latent frames)."""


def rope_3d(
    model: ModelConfig,
    *,
    axes_dim: tuple[Dim, Dim, Dim],
    theta: float,
    theta_source: str,
    sizes: Sequence[tuple[int, int, int]] = VIDEO_GRIDS,
) -> Problem:
    """3D rotary embedding over (frame, row, col) ids applied to q and k, interleaved channel pairs."""
    heads = model.integer("transformer.num_attention_heads")
    hd = model.integer("transformer.attention_head_dim")
    dims = tuple(dim(model, a) for a in axes_dim)
    if sum(dims) != hd:
        raise ValueError(f"{model.hf_id}: rope axes {dims} do not add up to head_dim {hd}")
    reference = reference_source(
        """
        import torch

        AXES_DIM = $AXES_DIM
        THETA = $THETA


        def rotate(x, cos, sin):
            # Pairs (2i, 2i+1) rotate together: (a, b) -> (a cos - b sin, b cos + a sin).
            a, b = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
            rotated = torch.stack([-b, a], dim=-1).flatten(-2)
            return (x.to(torch.float32) * cos + rotated.to(torch.float32) * sin).to(x.dtype)


        def run(query, key, pos_ids):
            ids = pos_ids.to(torch.float64)
            cos, sin = [], []
            for axis, d in enumerate(AXES_DIM):
                omega = 1.0 / THETA ** (torch.arange(0, d, 2, device=ids.device, dtype=torch.float64) / d)
                angles = ids[:, axis, None] * omega[None, :]
                cos.append(angles.cos().repeat_interleave(2, dim=-1))
                sin.append(angles.sin().repeat_interleave(2, dim=-1))
            cos = torch.cat(cos, dim=-1).float()[:, None, :]  # broadcast over heads
            sin = torch.cat(sin, dim=-1).float()[:, None, :]
            return rotate(query, cos, sin), rotate(key, cos, sin)
        """,
        AXES_DIM=str(dims),
        THETA=theta,
    )
    shape = ["batch_size", "num_tokens", "num_heads", "head_dim"]
    return make_problem(
        name=problem_name(model, "rope_3d"),
        model=model,
        op_type="rope",
        tags=["rope", "rope-3d", "video", "dit", "memory-bound", "bf16"],
        description=f"""
            3D rotary position embedding applied to the queries and keys of every {model.display_name}
            self-attention ({heads} heads of {hd}). query and key are [batch_size, num_tokens,
            {heads}, {hd}] bf16 (tokens = latent frames x patch rows x patch columns, row-major);
            pos_ids [num_tokens, 3] int64 hold each token's (frame, row, col) as the model derives
            them from the latent grid (any ids must work). The head dim splits into {dims} channels
            for the frame, row and column axes; for an axis of d channels omega_i = {theta:g}^(-2i/d)
            ({theta_source}) and angle = id * omega_i in fp64, cast to fp32; channels 2i and 2i+1
            of that axis rotate as a pair: (a, b) -> (a cos - b sin, b cos + a sin) in fp32, rounded
            to bf16. Outputs q, k like the inputs. Memory-bound; fuse with the qk-norm or the
            attention prologue.
        """,
        axes={
            "batch_size": var("videos in the batch"),
            "num_frames": var("latent frames"),
            "grid_h": var("patch rows"),
            "grid_w": var("patch columns"),
            "num_tokens": expr("num_frames * grid_h * grid_w"),
            "num_heads": const(heads),
            "head_dim": const(hd),
        },
        inputs={
            "query": tensor(shape, BF, "projected queries"),
            "key": tensor(shape, BF, "projected keys"),
            "pos_ids": tensor(["num_tokens", 3], I64, "(frame, row, col) per token, in [0, 128)"),
        },
        outputs={"q": tensor(shape, BF, "rotated queries"), "k": tensor(shape, BF, "rotated keys")},
        reference=reference,
        workloads=[{"batch_size": 1, "num_frames": f, "grid_h": h, "grid_w": w} for f, h, w in sizes],
        tolerance=BF16,
    )


WAN_QK_SIZES: tuple[tuple[int, int], ...] = (
    (1, 390), (1, 1560), (2, 1560), (1, 7800), (2, 7800), (1, 17160), (1, 32760), (2, 17160),
)  # fmt: skip
"""(batch_size, video tokens) of Wan2.1-1.3B: 240x416 and 480x832 frames, 480x832 clips of 17 to 81
frames (1560 tokens per latent frame)."""


def qk_rmsnorm_across_heads(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = WAN_QK_SIZES,
) -> Problem:
    """Wan's qk_norm="rms_norm_across_heads": one RMSNorm over all heads of q and of k."""
    heads = model.integer("transformer.num_attention_heads")
    d = heads * model.integer("transformer.attention_head_dim")
    eps = model.number("transformer.eps")
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def rms_norm(x, weight):
            y = x.to(torch.float32) * torch.rsqrt(x.to(torch.float32).pow(2).mean(dim=-1, keepdim=True) + EPS)
            return y.to(x.dtype) * weight


        def run(query, key, norm_q_weight, norm_k_weight):
            return rms_norm(query, norm_q_weight), rms_norm(key, norm_k_weight)
        """,
        EPS=eps,
    )
    shape = ["batch_size", "num_tokens", "inner_dim"]
    return make_problem(
        name=problem_name(model, "qk_rmsnorm"),
        model=model,
        op_type="rmsnorm",
        tags=["rmsnorm", "qk-norm", "video", "dit", "memory-bound", "bf16"],
        description=f"""
            Query/key normalisation of every {model.display_name} attention (qk_norm =
            rms_norm_across_heads): RMSNorm over the full {d}-wide projection ({heads} heads
            together, not per head), eps {eps:g}, separately for q and k with their own weights.
            query and key are [batch_size, num_tokens, {d}] bf16 straight from to_q / to_k;
            variance in fp32, the normalised value rounded to bf16, then times the bf16 weight
            (diffusers RMSNorm). Outputs like the inputs. num_tokens = latent frames x (height /
            16) x (width / 16): 1560 for one 480x832 frame, 32760 for 81 frames. Memory-bound; the
            whole {d}-channel row must be reduced before any output, so one row per CTA or warp
            group.
        """,
        axes={
            "batch_size": var("videos in the batch"),
            "num_tokens": var("video tokens"),
            "inner_dim": const(d),
        },
        inputs={
            "query": tensor(shape, BF, "to_q output"),
            "key": tensor(shape, BF, "to_k output"),
            "norm_q_weight": tensor(["inner_dim"], BF, "query RMSNorm weight"),
            "norm_k_weight": tensor(["inner_dim"], BF, "key RMSNorm weight"),
        },
        outputs={"q": tensor(shape, BF, "normalised queries"), "k": tensor(shape, BF, "normalised keys")},
        reference=reference,
        workloads=[{"batch_size": b, "num_tokens": n} for b, n in sizes],
        tolerance=BF16,
    )


COGVIDEOX_SIZES: tuple[tuple[int, int], ...] = (
    (1, 1), (2, 1), (1, 4), (2, 4), (1, 7), (1, 13), (2, 7), (2, 13),
)  # fmt: skip
"""(batch_size, latent frames) at 480x720 (60x90 latent, 30x45 = 1350 tokens per latent frame):
1 to 49 video frames; batch 2 = classifier-free guidance."""


def cogvideox_layernorm_zero(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = COGVIDEOX_SIZES,
    tokens_per_frame: int = 1350,  # 480x720 video: latent 60x90, patch 2
) -> Problem:
    """CogVideoXLayerNormZero: one Linear(silu(temb)) gives six vectors that modulate video and text."""
    heads = model.integer("transformer.num_attention_heads")
    d = heads * model.integer("transformer.attention_head_dim")
    t = model.integer("transformer.time_embed_dim")
    text = model.integer("transformer.max_text_seq_length")
    eps = model.number("transformer.norm_eps")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        EPS = $EPS


        def run(hidden_states, encoder_hidden_states, temb, linear_weight, linear_bias, norm_weight, norm_bias):
            d = hidden_states.shape[-1]
            mod = F.linear(F.silu(temb), linear_weight, linear_bias)
            shift, scale, gate, enc_shift, enc_scale, enc_gate = mod.chunk(6, dim=1)

            def norm(x):
                y = F.layer_norm(x.to(torch.float32), (d,), norm_weight.float(), norm_bias.float(), EPS)
                return y.to(x.dtype)

            video = norm(hidden_states) * (1 + scale)[:, None, :] + shift[:, None, :]
            text = norm(encoder_hidden_states) * (1 + enc_scale)[:, None, :] + enc_shift[:, None, :]
            return video, text, gate[:, None, :], enc_gate[:, None, :]
        """,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "layernorm_zero"),
        model=model,
        op_type="adaln",
        tags=["adaln", "layernorm", "modulation", "gemm", "video", "dit", "memory-bound", "bf16"],
        description=f"""
            CogVideoXLayerNormZero of every {model.display_name} block ({d} wide): mod =
            Linear({t} -> {6 * d})(silu(temb)) + bias, split in order into shift, scale, gate,
            enc_shift, enc_scale, enc_gate ([batch_size, {d}] each); one LayerNorm (eps {eps:g},
            fp32 statistics, affine norm_weight / norm_bias, rounded to bf16) is applied to the
            video tokens and to the {text} text tokens; video = LN(hidden_states) * (1 + scale) +
            shift, text = LN(encoder_hidden_states) * (1 + enc_scale) + enc_shift, broadcast over
            tokens. hidden_states is [batch_size, num_tokens, {d}] bf16 with num_tokens = latent
            frames x {tokens_per_frame} (480x720 video); encoder_hidden_states [batch_size, {text},
            {d}]; temb [batch_size, {t}]. Outputs the two modulated streams plus gate and enc_gate
            as [batch_size, 1, {d}], all bf16. A GEMV per sample and a memory-bound norm.
        """,
        axes={
            "batch_size": var("videos in the batch"),
            "num_frames": var("latent frames"),
            "tokens_per_frame": const(tokens_per_frame),
            "num_tokens": expr("num_frames * tokens_per_frame"),
            "text_len": const(text),
            "hidden_size": const(d),
            "temb_dim": const(t),
            "mod_dim": expr("6 * hidden_size"),
            "one": const(1),
        },
        inputs={
            "hidden_states": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "video tokens"),
            "encoder_hidden_states": tensor(["batch_size", "text_len", "hidden_size"], BF, "text tokens"),
            "temb": tensor(["batch_size", "temb_dim"], BF, "time embedding"),
            "linear_weight": tensor(["mod_dim", "temb_dim"], BF, "modulation Linear"),
            "linear_bias": tensor(["mod_dim"], BF, "modulation bias"),
            "norm_weight": tensor(["hidden_size"], BF, "LayerNorm weight"),
            "norm_bias": tensor(["hidden_size"], BF, "LayerNorm bias"),
        },
        outputs={
            "video": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "modulated video tokens"),
            "text": tensor(["batch_size", "text_len", "hidden_size"], BF, "modulated text tokens"),
            "gate": tensor(["batch_size", "one", "hidden_size"], BF, "video gate"),
            "enc_gate": tensor(["batch_size", "one", "hidden_size"], BF, "text gate"),
        },
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": f} for b, f in sizes],
        tolerance=BF16_BLOCK,
    )


VAE_LATENT_VIDEO: tuple[tuple[int, int, int, int], ...] = (
    (1, 1, 30, 52),
    (1, 1, 60, 104),
    (1, 5, 30, 52),
    (1, 5, 60, 104),
    (1, 11, 60, 104),
    (2, 11, 60, 104),
    (1, 21, 60, 104),
    (1, 11, 90, 160),
    (1, 21, 90, 160),
)
"""(batch_size, latent frames, latent height, latent width): 240x416, 480x832 and 720x1280 videos."""


def causal_conv3d_in(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int, int, int]] = VAE_LATENT_VIDEO,
    kernel: int = 3,  # HunyuanVideo decoder conv_in: HunyuanVideoCausalConv3d(kernel_size=3)
) -> Problem:
    """The VAE decoder's conv_in: causal Conv3d (replicate padding, frames padded on the left only)."""
    cin = model.integer("vae.latent_channels")
    cout = model.integer("vae.block_out_channels.3")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        K = $K


        def run(latents, conv_weight, conv_bias):
            # Causal in time: K - 1 replicated frames in front; spatially centred, replicated edges.
            x = F.pad(latents, (K // 2, K // 2, K // 2, K // 2, K - 1, 0), mode="replicate")
            return F.conv3d(x, conv_weight, conv_bias)
        """,
        K=kernel,
    )
    return make_problem(
        name=problem_name(model, "vae_causal_conv3d"),
        model=model,
        op_type="conv3d",
        tags=["conv3d", "causal-conv", "vae", "video", "implicit-gemm", "bf16", "tensor-core"],
        description=f"""
            First layer of the {model.display_name} VAE decoder (conv_in, a causal 3D convolution):
            Conv3d({cin} -> {cout}, kernel {kernel}x{kernel}x{kernel}, stride 1) + bias on the
            latent video padded with replicated edges: {kernel - 1} copies of the first frame in
            front and none behind (causal in time), {kernel // 2} rows/columns on each spatial side.
            latents is NCTHW [batch_size, {cin}, num_frames, height, width] bf16 (latent frames =
            (frames - 1) / 4 + 1, latent side = pixels / 8); conv_weight [{cout}, {cin}, {kernel},
            {kernel}, {kernel}] bf16; fp32 accumulation, bf16 output [batch_size, {cout},
            num_frames, height, width]. An implicit GEMM with K = {cin * kernel**3} and a
            {cout}-wide output: output-write bound.
        """,
        axes={
            "batch_size": var("videos in the batch"),
            "num_frames": var("latent frames"),
            "height": var("latent height"),
            "width": var("latent width"),
            "in_channels": const(cin),
            "out_channels": const(cout),
            "kernel": const(kernel),
        },
        inputs={
            "latents": tensor(
                ["batch_size", "in_channels", "num_frames", "height", "width"], BF, "latent video"
            ),
            "conv_weight": tensor(
                ["out_channels", "in_channels", "kernel", "kernel", "kernel"], BF, "conv weight"
            ),
            "conv_bias": tensor(["out_channels"], BF, "conv bias"),
        },
        outputs={
            "output": tensor(
                ["batch_size", "out_channels", "num_frames", "height", "width"], BF, "decoder features"
            )
        },
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": f, "height": h, "width": w} for b, f, h, w in sizes],
        tolerance=BF16,
    )


def video_groupnorm_silu(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int, int, int]] = VAE_LATENT_VIDEO,
    eps: float = 1e-6,  # HunyuanVideo VAE resnet blocks: GroupNorm(eps=1e-6)
) -> Problem:
    """GroupNorm over (channels in group, frames, height, width) followed by SiLU, on NCTHW video."""
    c = model.integer("vae.block_out_channels.3")
    groups = model.integer("vae.norm_num_groups")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        GROUPS = $GROUPS
        EPS = $EPS


        def run(x, norm_weight, norm_bias):
            y = F.group_norm(x.to(torch.float32), GROUPS, norm_weight.float(), norm_bias.float(), EPS)
            return F.silu(y).to(x.dtype)
        """,
        GROUPS=groups,
        EPS=eps,
    )
    shape = ["batch_size", "channels", "num_frames", "height", "width"]
    return make_problem(
        name=problem_name(model, "vae_groupnorm_silu"),
        model=model,
        op_type="groupnorm_silu",
        tags=["norm", "groupnorm", "silu", "vae", "video", "ncthw", "memory-bound", "bf16"],
        description=f"""
            GroupNorm + SiLU at the head of the {model.display_name} VAE decoder's resnet blocks
            ({c} channels, latent resolution): GroupNorm with {groups} groups of {c // groups}
            channels, eps {eps:g}, statistics per (sample, group) over {c // groups} channels x all
            frames x height x width in fp32 (the whole clip: not per frame), affine, then silu,
            rounded to bf16. x is NCTHW [batch_size, {c}, num_frames, height, width] bf16 (latent
            frames and pixels / 8). Output like x. Each group is a contiguous slab of up to
            {c // groups} x 21 x 90 x 160 values: a two-pass or cluster-wide reduction.
        """,
        axes={
            "batch_size": var("videos in the batch"),
            "num_frames": var("latent frames"),
            "height": var("latent height"),
            "width": var("latent width"),
            "channels": const(c),
            "num_groups": const(groups),
        },
        constraints=["channels % num_groups == 0"],
        inputs={
            "x": tensor(shape, BF, "decoder features, NCTHW"),
            "norm_weight": tensor(["channels"], BF, "GroupNorm weight"),
            "norm_bias": tensor(["channels"], BF, "GroupNorm bias"),
        },
        outputs={"output": tensor(shape, BF, "silu(groupnorm(x))")},
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": f, "height": h, "width": w} for b, f, h, w in sizes[:8]],
        tolerance=BF16,
    )


def divided_temporal_attention(
    model: ModelConfig,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 12, 16, 24, 32),
) -> Problem:
    """TimeSformer's temporal attention: each patch position attends over the same position in every frame."""
    d = model.integer("hidden_size")
    heads = model.integer("num_attention_heads")
    frames = model.integer("num_frames")
    patches = (model.integer("image_size") // model.integer("patch_size")) ** 2
    hd = d // heads
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        FRAMES = $FRAMES


        def split(x):
            b, n, d = x.shape  # tokens frame-major: (frame, patch)
            x = x.reshape(b, FRAMES, n // FRAMES, HEADS, d // HEADS)
            return x.permute(0, 2, 3, 1, 4)  # [batch, patch, head, frame, head_dim]


        def run(query, key, value):
            b, n, d = query.shape
            o = F.scaled_dot_product_attention(split(query), split(key), split(value))
            return o.permute(0, 3, 1, 2, 4).reshape(b, n, d)
        """,
        HEADS=heads,
        FRAMES=frames,
    )
    shape = ["batch_size", "num_tokens", "hidden_size"]
    return make_problem(
        name=problem_name(model, "temporal_attention"),
        model=model,
        op_type="attention",
        tags=["attention", "divided-space-time", "video", "strided", "bf16", "tensor-core"],
        description=f"""
            Temporal half of {model.display_name}'s divided space-time attention ({heads} heads of
            {hd}): every one of the {patches} patch positions attends over its own {frames} frames,
            independently per head, non-causal, scale 1/sqrt({hd}), fp32 softmax. query, key,
            value are [batch_size, {frames * patches}, {d}] bf16 (after the temporal q/k/v
            projections, CLS token excluded), tokens frame-major ((frame, patch) row-major), heads
            contiguous within the {d} channels. Output the same layout and dtype. {patches} x
            {heads} tiny {frames}x{frames} attentions per clip whose rows are {patches * d * 2}
            bytes apart: the work is a strided gather, so pack many positions per CTA.
        """,
        axes={
            "batch_size": var("clips in the batch"),
            "num_tokens": const(frames * patches, "frames x patches"),
            "hidden_size": const(d),
        },
        inputs={
            "query": tensor(shape, BF, "queries"),
            "key": tensor(shape, BF, "keys"),
            "value": tensor(shape, BF, "values"),
        },
        outputs={"output": tensor(shape, BF, "temporal attention output")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16_ATTENTION,
    )


def tubelet_embed(
    model: ModelConfig,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 12, 16, 24, 32),
) -> Problem:
    """VideoMAE tubelet embedding: Conv3d over (2, 16, 16) tubes of pixels + fixed sin-cos positions."""
    d = model.integer("hidden_size")
    frames = model.integer("num_frames")
    t = model.integer("tubelet_size")
    p = model.integer("patch_size")
    size = model.integer("image_size")
    c = model.integer("num_channels")
    n = (frames // t) * (size // p) ** 2
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        T, P = $T, $P


        def run(pixel_values, proj_weight, proj_bias, position_embeddings):
            b, f, c, h, w = pixel_values.shape  # frames first, as the model receives them
            x = pixel_values.reshape(b, f // T, T, c, h // P, P, w // P, P)
            x = x.permute(0, 1, 4, 6, 3, 2, 5, 7).reshape(b, (f // T) * (h // P) * (w // P), c * T * P * P)
            return F.linear(x, proj_weight, proj_bias) + position_embeddings
        """,
        T=t,
        P=p,
    )
    return make_problem(
        name=problem_name(model, "tubelet_embed"),
        model=model,
        op_type="patch_embed",
        tags=["patch-embed", "conv3d", "gemm", "video", "vit", "bf16", "tensor-core"],
        description=f"""
            Input stage of {model.display_name}: pixel_values [batch_size, {frames}, {c}, {size},
            {size}] bf16 (frames first, as VideoMAEForVideoClassification receives them) are cut into
            {t}x{p}x{p} tubelets ({frames // t} x {size // p} x {size // p} = {n} tokens, (time,
            row, col) row-major) and projected by Conv3d({c} -> {d}, kernel = stride = ({t}, {p},
            {p})) + bias; proj_weight is that conv weight flattened to [{d}, {c * t * p * p}] in
            (channel, t, row, col) order. The fixed sin-cos position table position_embeddings
            [{n}, {d}] bf16 is added. fp32 accumulation, bf16 result [batch_size, {n}, {d}]. A GEMM
            with K = {c * t * p * p} whose A operand is gathered from 5-D pixels.
        """,
        axes={
            "batch_size": var("clips in the batch"),
            "num_frames": const(frames),
            "num_channels": const(c),
            "image_size": const(size),
            "patch_dim": const(c * t * p * p),
            "num_tokens": const(n),
            "hidden_size": const(d),
        },
        inputs={
            "pixel_values": tensor(
                ["batch_size", "num_frames", "num_channels", "image_size", "image_size"], BF, "video"
            ),
            "proj_weight": tensor(
                ["hidden_size", "patch_dim"], BF, "conv weight flattened (channel, t, row, col)"
            ),
            "proj_bias": tensor(["hidden_size"], BF, "conv bias"),
            "position_embeddings": tensor(["num_tokens", "hidden_size"], BF, "sin-cos position table"),
        },
        outputs={"embeddings": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "tubelet tokens")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16,
    )
