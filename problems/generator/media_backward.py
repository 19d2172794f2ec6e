"""Backward-pass templates of layers that recur across diffusion, vision, audio, video and multimodal
models: LayerNorm, GroupNorm, non-causal attention, Conv2d and Conv1d.

As in :mod:`.media_layers`, each takes the model and the config keys (or literal sizes from modelling
code) of the layer it describes, and ``site``, a phrase saying where in the model the layer sits.
Gradients are written out explicitly (no autograd), as in :mod:`.llm_backward`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, BF16_GRAD, FP32_REDUCTION, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, F32, Dim, dim, problem_name, with_tensor_core_dtype
from .models import ModelConfig


def layernorm_backward(
    model: ModelConfig,
    *,
    site: str,
    hidden: Dim,
    eps_key: str,
    sizes: Sequence[int],
    per_item: int,
    item: str = "image",
) -> Problem:
    """Backward of an affine LayerNorm: grad_input, grad_weight, grad_bias from x, weight and grad_output."""
    d = dim(model, hidden)
    eps = model.number(eps_key)
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run(x, norm_weight, grad_output):
            d = x.shape[-1]
            x2 = x.reshape(-1, d)
            dy = grad_output.reshape(-1, d)
            mean = x2.mean(dim=-1, keepdim=True)
            rstd = torch.rsqrt((x2 - mean).pow(2).mean(dim=-1, keepdim=True) + EPS)
            xhat = (x2 - mean) * rstd
            g = dy * norm_weight
            dx = rstd * (g - g.mean(dim=-1, keepdim=True) - xhat * (g * xhat).mean(dim=-1, keepdim=True))
            return dx.reshape(x.shape), (dy * xhat).sum(dim=0), dy.sum(dim=0)
        """,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "layernorm_backward"),
        model=model,
        op_type="layernorm_backward",
        tags=["norm", "layernorm", "backward", "training", "reduction", "fp32", "memory-bound"],
        description=f"""
            Backward of {site} of {model.display_name} in training: LayerNorm over {d} channels, eps
            {eps:g}, with affine weight (the forward ran in fp32, as autocast keeps layer_norm).
            x and grad_output are [batch_size, {per_item}, {d}] fp32 ({per_item} tokens per {item}),
            norm_weight [{d}] fp32. With mean and rstd = 1/sqrt(var + eps) recomputed per token
            (biased variance) and xhat = (x - mean) * rstd, g = grad_output * weight:
            grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)) per token;
            grad_weight = sum over tokens of grad_output * xhat; grad_bias = sum over tokens of
            grad_output, all fp32. The two column sums reduce across every token of the batch: a
            per-block partial sum and a second pass (or atomics) are needed. Memory-bound.
        """,
        axes={
            "batch_size": var(f"{item}s in the batch"),
            "seq_len": const(per_item),
            "hidden_size": const(d),
        },
        inputs={
            "x": tensor(["batch_size", "seq_len", "hidden_size"], F32, "forward input"),
            "norm_weight": tensor(["hidden_size"], F32, "LayerNorm weight"),
            "grad_output": tensor(["batch_size", "seq_len", "hidden_size"], F32, "gradient of the output"),
        },
        outputs={
            "grad_input": tensor(["batch_size", "seq_len", "hidden_size"], F32, "gradient of x"),
            "grad_weight": tensor(["hidden_size"], F32, "gradient of the LayerNorm weight"),
            "grad_bias": tensor(["hidden_size"], F32, "gradient of the LayerNorm bias"),
        },
        reference=reference,
        workloads=[{"batch_size": b} for b in sizes],
        tolerance=FP32_REDUCTION,
    )


def groupnorm_backward(
    model: ModelConfig,
    *,
    site: str,
    channels: Dim,
    groups_key: str,
    eps_key: str,
    sizes: Sequence[tuple[int, int, int]],
) -> Problem:
    """Backward of an affine GroupNorm over NCHW: grad_input, grad_weight, grad_bias."""
    c = dim(model, channels)
    groups = model.integer(groups_key)
    eps = model.number(eps_key)
    reference = reference_source(
        """
        import torch

        GROUPS = $GROUPS
        EPS = $EPS


        def run(x, norm_weight, grad_output):
            b, c, h, w = x.shape
            xg = x.reshape(b, GROUPS, -1)
            mean = xg.mean(dim=-1, keepdim=True)
            rstd = torch.rsqrt((xg - mean).pow(2).mean(dim=-1, keepdim=True) + EPS)
            xhat = ((xg - mean) * rstd).reshape(b, c, h, w)
            g = (grad_output * norm_weight[None, :, None, None]).reshape(b, GROUPS, -1)
            xh = xhat.reshape(b, GROUPS, -1)
            dx = rstd * (g - g.mean(dim=-1, keepdim=True) - xh * (g * xh).mean(dim=-1, keepdim=True))
            grad_weight = (grad_output * xhat).sum(dim=(0, 2, 3))
            grad_bias = grad_output.sum(dim=(0, 2, 3))
            return dx.reshape(b, c, h, w), grad_weight, grad_bias
        """,
        GROUPS=groups,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "groupnorm_backward"),
        model=model,
        op_type="groupnorm_backward",
        tags=["norm", "groupnorm", "backward", "training", "reduction", "nchw", "fp32", "memory-bound"],
        description=f"""
            Backward of {site} of {model.display_name} in fine-tuning: GroupNorm over {c} channels in
            {groups} groups of {c // groups}, eps {eps:g}, affine (autocast runs group_norm in
            fp32). x and grad_output are NCHW [batch_size, {c}, height, width] fp32 (latent sizes:
            image / 8), norm_weight [{c}] fp32. Per (sample, group): mean and rstd over
            {c // groups} * height * width values (biased variance), xhat = (x - mean) * rstd,
            g = grad_output * weight[channel]; grad_input = rstd * (g - mean(g) - xhat * mean(g *
            xhat)) with the means over the group. grad_weight[c] = sum over batch, height, width of
            grad_output * xhat; grad_bias[c] = sum of grad_output. All fp32. Two reductions of
            different shapes (per group, per channel across the batch) over the same data.
        """,
        axes={
            "batch_size": var("latents in the batch"),
            "height": var("latent height"),
            "width": var("latent width"),
            "num_channels": const(c),
            "num_groups": const(groups),
        },
        constraints=["num_channels % num_groups == 0"],
        inputs={
            "x": tensor(["batch_size", "num_channels", "height", "width"], F32, "forward input, NCHW"),
            "norm_weight": tensor(["num_channels"], F32, "GroupNorm weight"),
            "grad_output": tensor(
                ["batch_size", "num_channels", "height", "width"], F32, "gradient of the output"
            ),
        },
        outputs={
            "grad_input": tensor(["batch_size", "num_channels", "height", "width"], F32, "gradient of x"),
            "grad_weight": tensor(["num_channels"], F32, "gradient of the GroupNorm weight"),
            "grad_bias": tensor(["num_channels"], F32, "gradient of the GroupNorm bias"),
        },
        reference=reference,
        workloads=[{"batch_size": b, "height": h, "width": w} for b, h, w in sizes],
        tolerance=FP32_REDUCTION,
    )


def attention_backward(
    model: ModelConfig,
    *,
    site: str,
    heads: Dim,
    head_dim: Dim,
    seq_len: int,
    sizes: Sequence[int],
    item: str = "image",
) -> Problem:
    """Backward of non-causal softmax attention: dq, dk, dv from q, k, v and the output gradient."""
    h, d = dim(model, heads), dim(model, head_dim)
    scale = d**-0.5
    reference = reference_source(
        """
        import torch

        SCALE = $SCALE


        def run(q, k, v, grad_output):
            qf, kf, vf, do = (t.to(torch.float32) for t in (q, k, v, grad_output))
            p = torch.softmax((qf @ kf.transpose(-1, -2)) * SCALE, dim=-1)
            o = p @ vf
            dv = p.transpose(-1, -2) @ do
            dp = do @ vf.transpose(-1, -2)
            delta = (do * o).sum(dim=-1, keepdim=True)  # rowsum(dO * O) = rowsum(P * dP)
            ds = p * (dp - delta)
            dq = (ds @ kf) * SCALE
            dk = (ds.transpose(-1, -2) @ qf) * SCALE
            return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)
        """,
        SCALE=scale,
    )
    problem = make_problem(
        name=problem_name(model, "attention_backward"),
        model=model,
        op_type="attention_backward",
        tags=["attention", "backward", "training", "softmax", "bf16", "tensor-core"],
        description=f"""
            Backward of {site} of {model.display_name}: non-causal softmax attention with {h} heads
            of head_dim {d} over {seq_len} tokens per {item}, scale {scale:g}. Given q, k, v and
            grad_output, all [batch_size, {h}, {seq_len}, {d}] bf16 (BHSD): P = softmax(q k^T *
            scale), O = P v (recomputed, as FlashAttention's backward does), dv = P^T dO, dP = dO
            v^T, dS = P * (dP - rowsum(dO * O)), dq = dS k * scale, dk = dS^T q * scale. All math
            in fp32, outputs dq, dk, dv rounded to bf16. The {seq_len}x{seq_len} score tiles fit on
            chip: one CTA per (sample, head) can keep P and dS in shared memory.
        """,
        axes={
            "batch_size": var(f"{item}s in the batch"),
            "num_heads": const(h),
            "seq_len": const(seq_len),
            "head_dim": const(d),
        },
        inputs={
            n: tensor(["batch_size", "num_heads", "seq_len", "head_dim"], BF, desc)
            for n, desc in (
                ("q", "queries"),
                ("k", "keys"),
                ("v", "values"),
                ("grad_output", "gradient of O"),
            )
        },
        outputs={
            n: tensor(["batch_size", "num_heads", "seq_len", "head_dim"], BF, f"gradient of {n[1]}")
            for n in ("dq", "dk", "dv")
        },
        reference=reference,
        workloads=[{"batch_size": b} for b in sizes],
        tolerance=BF16_GRAD,
    )
    # The reference upcasts to fp32 for clarity; a kernel runs the five matmuls on bf16 tensor cores.
    return with_tensor_core_dtype(problem, BF)


def conv2d_backward(
    model: ModelConfig,
    *,
    site: str,
    channels: Dim,
    kernel: int,
    sizes: Sequence[tuple[int, int]],
) -> Problem:
    """Backward of a stride-1 same-padded Conv2d without bias: grad_input and grad_weight."""
    c = dim(model, channels)
    pad = kernel // 2
    reference = reference_source(
        """
        import torch
        from torch.nn.grad import conv2d_input, conv2d_weight

        PAD = $PAD


        def run(x, conv_weight, grad_output):
            grad_input = conv2d_input(x.shape, conv_weight, grad_output, padding=PAD)
            grad_weight = conv2d_weight(x, conv_weight.shape, grad_output, padding=PAD)
            return grad_input, grad_weight
        """,
        PAD=pad,
    )
    return make_problem(
        name=problem_name(model, f"conv{kernel}x{kernel}_backward"),
        model=model,
        op_type="conv2d_backward",
        tags=["conv2d", "backward", "training", "implicit-gemm", "nchw", "bf16", "tensor-core"],
        description=f"""
            Backward of {site} of {model.display_name}: Conv2d({c} -> {c}, kernel {kernel}x{kernel},
            stride 1, padding {pad}, no bias). x is the forward input [batch_size, {c}, height,
            width] bf16 NCHW, conv_weight [{c}, {c}, {kernel}, {kernel}] bf16, grad_output
            [batch_size, {c}, height, width] bf16. Outputs: grad_input (the transposed convolution
            of grad_output with the weight, [batch_size, {c}, height, width]) and grad_weight
            ([{c}, {c}, {kernel}, {kernel}], the correlation of x with grad_output summed over the
            batch and all positions), both bf16 with fp32 accumulation. Two implicit GEMMs: dgrad
            with K = {c * kernel * kernel}, wgrad with K = batch * height * width (split-K across
            CTAs pays off at small output sizes).
        """,
        axes={
            "batch_size": var("images in the batch"),
            "height": var("feature-map height"),
            "width": expr("height"),
            "channels": const(c),
            "kernel": const(kernel),
        },
        inputs={
            "x": tensor(["batch_size", "channels", "height", "width"], BF, "forward input"),
            "conv_weight": tensor(["channels", "channels", "kernel", "kernel"], BF, "conv weight"),
            "grad_output": tensor(
                ["batch_size", "channels", "height", "width"], BF, "gradient of the output"
            ),
        },
        outputs={
            "grad_input": tensor(["batch_size", "channels", "height", "width"], BF, "gradient of x"),
            "grad_weight": tensor(["channels", "channels", "kernel", "kernel"], BF, "gradient of the weight"),
        },
        reference=reference,
        workloads=[{"batch_size": b, "height": h} for b, h in sizes],
        tolerance=BF16,
    )


def conv1d_backward(
    model: ModelConfig,
    *,
    site: str,
    in_channels: Dim,
    out_channels: Dim,
    kernel: int,
    sizes: Sequence[tuple[int, int]],
) -> Problem:
    """Backward of a stride-1 same-padded Conv1d with bias: grad_input, grad_weight, grad_bias."""
    cin, cout = dim(model, in_channels), dim(model, out_channels)
    pad = kernel // 2
    reference = reference_source(
        """
        import torch
        from torch.nn.grad import conv1d_input, conv1d_weight

        PAD = $PAD


        def run(x, conv_weight, grad_output):
            grad_input = conv1d_input(x.shape, conv_weight, grad_output, padding=PAD)
            grad_weight = conv1d_weight(x, conv_weight.shape, grad_output, padding=PAD)
            grad_bias = grad_output.to(torch.float32).sum(dim=(0, 2)).to(grad_output.dtype)
            return grad_input, grad_weight, grad_bias
        """,
        PAD=pad,
    )
    return make_problem(
        name=problem_name(model, "conv1d_backward"),
        model=model,
        op_type="conv1d_backward",
        tags=["conv1d", "backward", "training", "audio", "implicit-gemm", "bf16", "tensor-core"],
        description=f"""
            Backward of {site} of {model.display_name} (fine-tuning): Conv1d({cin} -> {cout}, kernel
            {kernel}, stride 1, padding {pad}) + bias. x is the forward input [batch_size, {cin},
            num_frames] bf16 (channels first, 100 frames per second of audio), conv_weight [{cout},
            {cin}, {kernel}] bf16, grad_output [batch_size, {cout}, num_frames] bf16. Outputs:
            grad_input [batch_size, {cin}, num_frames], grad_weight [{cout}, {cin}, {kernel}] and
            grad_bias [{cout}] (grad_output summed over batch and frames), all bf16 with fp32
            accumulation. wgrad reduces over batch * num_frames: split it across CTAs.
        """,
        axes={
            "batch_size": var("audio windows in the batch"),
            "num_frames": var("spectrogram frames"),
            "in_channels": const(cin),
            "out_channels": const(cout),
            "kernel": const(kernel),
        },
        inputs={
            "x": tensor(["batch_size", "in_channels", "num_frames"], BF, "forward input"),
            "conv_weight": tensor(["out_channels", "in_channels", "kernel"], BF, "conv weight"),
            "grad_output": tensor(["batch_size", "out_channels", "num_frames"], BF, "gradient of the output"),
        },
        outputs={
            "grad_input": tensor(["batch_size", "in_channels", "num_frames"], BF, "gradient of x"),
            "grad_weight": tensor(["out_channels", "in_channels", "kernel"], BF, "gradient of the weight"),
            "grad_bias": tensor(["out_channels"], BF, "gradient of the bias"),
        },
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": t} for b, t in sizes],
        tolerance=BF16,
    )
