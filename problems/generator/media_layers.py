"""Layer templates that recur across diffusion, vision, audio, video and multimodal models.

MLPs and projectors, quantised linears (fp8 per-tensor, nvfp4 weights) and a pre-LN encoder layer; the
backward passes of such layers are in :mod:`.media_backward`. Each takes the model and the config keys
(or literal sizes from modelling code) of the layer it describes, and ``site``, a phrase saying where in
the model the layer sits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..load import Problem
from .common import BF16, BF16_BLOCK, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, E4M3, F32, U8, Dim, dim, problem_name, with_tensor_core_dtype
from .models import ModelConfig

Activation = Literal["gelu", "gelu_tanh", "quick_gelu", "relu", "silu"]

_ACT_CODE: dict[str, str] = {
    "gelu": "F.gelu({x})",
    "gelu_tanh": 'F.gelu({x}, approximate="tanh")',
    "quick_gelu": "{x} * torch.sigmoid(1.702 * {x})",
    "relu": "F.relu({x})",
    "silu": "F.silu({x})",
}


def act_code(act: str, x: str) -> str:
    """Python source applying ``act`` to the variable ``x``."""
    return _ACT_CODE[act].format(x=x)


_ACT_TEXT: dict[str, str] = {
    "gelu": "exact erf GELU",
    "gelu_tanh": "tanh-approximated GELU",
    "quick_gelu": "QuickGELU x * sigmoid(1.702 x)",
    "relu": "ReLU",
    "silu": "SiLU",
}


def _token_axes(per_item: int | None, item: str) -> tuple[dict, list[str], str]:
    """Axes for ``num_tokens`` rows: free, or ``batch_size`` items of ``per_item`` tokens each."""
    if per_item is None:
        return {"num_tokens": var("rows (tokens) in the call")}, ["num_tokens"], "num_tokens"
    axes = {
        "batch_size": var(f"{item}s in the batch"),
        "seq_len": const(per_item, f"tokens per {item}"),
    }
    return axes, ["batch_size", "seq_len"], f"batch_size * {per_item}"


def gelu_mlp(
    model: ModelConfig,
    *,
    suffix: str,
    site: str,
    in_dim: Dim,
    hidden_dim: Dim,
    out_dim: Dim,
    act: Activation,
    sizes: Sequence[int],
    per_item: int | None = None,
    item: str = "image",
    bias: bool = True,
    tags: Sequence[str] = (),
) -> Problem:
    """Linear -> activation -> Linear (a transformer MLP or a vision-language projector)."""
    d_in, d_hidden, d_out = dim(model, in_dim), dim(model, hidden_dim), dim(model, out_dim)
    bias_args = ", fc1_bias, fc2_bias" if bias else ""
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F


        def run(hidden_states, fc1_weight, fc2_weight$BIAS_ARGS):
            h = F.linear(hidden_states, fc1_weight, $B1)
            h = $ACT
            return F.linear(h, fc2_weight, $B2)
        """,
        BIAS_ARGS=bias_args,
        B1="fc1_bias" if bias else "None",
        B2="fc2_bias" if bias else "None",
        ACT=act_code(act, "h"),
    )
    axes, rows, row_text = _token_axes(per_item, item)
    inputs = {
        "hidden_states": tensor([*rows, "in_dim"], BF, "input activations"),
        "fc1_weight": tensor(["hidden_dim", "in_dim"], BF, "first Linear, [out, in]"),
        "fc2_weight": tensor(["out_dim", "hidden_dim"], BF, "second Linear, [out, in]"),
    }
    if bias:
        inputs["fc1_bias"] = tensor(["hidden_dim"], BF, "first Linear bias")
        inputs["fc2_bias"] = tensor(["out_dim"], BF, "second Linear bias")
    per_item_text = f" ({per_item} tokens per {item})" if per_item else ""
    return make_problem(
        name=problem_name(model, suffix),
        model=model,
        op_type="mlp",
        tags=["mlp", "gemm", act.replace("_", "-"), "bf16", "tensor-core", *tags],
        description=f"""
            {site} of {model.display_name}: Linear({d_in} -> {d_hidden}{" + bias" if bias else ", no bias"}),
            {_ACT_TEXT[act]}, Linear({d_hidden} -> {d_out}{" + bias" if bias else ", no bias"}).
            hidden_states is [{", ".join(rows)}, {d_in}] bf16{per_item_text}; weights are bf16 in
            nn.Linear layout [out, in]. Both GEMMs accumulate in fp32 and round to bf16; the
            activation runs on the bf16 first-GEMM output (rounded before the activation, as PyTorch
            does), so the {d_hidden}-wide intermediate can stay on chip in a fused kernel. Output
            [{", ".join(rows)}, {d_out}] bf16. M = {row_text} rows, compute-bound once M reaches a
            few hundred.
        """,
        axes={**axes, "in_dim": const(d_in), "hidden_dim": const(d_hidden), "out_dim": const(d_out)},
        inputs=inputs,
        outputs={"output": tensor([*rows, "out_dim"], BF, "MLP output")},
        reference=reference,
        workloads=[{rows[0]: s} for s in sizes],
        tolerance=BF16,
    )


def fp8_linear(
    model: ModelConfig,
    *,
    suffix: str,
    site: str,
    in_dim: Dim,
    out_dim: Dim,
    tokens: Sequence[int],
    token_text: str,
) -> Problem:
    """A Linear with fp8 e4m3 activations and weights, one fp32 scale per tensor, bf16 output."""
    k, n = dim(model, in_dim), dim(model, out_dim)
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F


        def run(x_fp8, x_scale, weight_fp8, weight_scale, bias):
            # Exact dequantisation: every e4m3 value times an fp32 scale is exact in fp32.
            x = x_fp8.to(torch.float32) * x_scale
            w = weight_fp8.to(torch.float32) * weight_scale
            y = F.linear(x, w) + bias.to(torch.float32)
            return y.to(torch.bfloat16)
        """
    )
    problem = make_problem(
        name=problem_name(model, suffix),
        model=model,
        op_type="gemm_fp8",
        tags=["gemm", "fp8", "e4m3", "quantization", "per-tensor", "tensor-core", "dit"],
        description=f"""
            {site} of {model.display_name} served with fp8 (e4m3) per-tensor quantisation, as fp8
            DiT checkpoints and torchao/Transformer Engine recipes do: out = (x_fp8 * x_scale) @
            (weight_fp8 * weight_scale)^T + bias. x_fp8 is [num_tokens, {k}] float8_e4m3fn (already
            quantised activations; {token_text}), weight_fp8 [{n}, {k}] float8_e4m3fn in nn.Linear
            layout, x_scale and weight_scale 0-D fp32 dequantisation scales, bias [{n}] bf16. The
            products are exact in fp32; accumulate in fp32 (fp8 tensor cores with an fp32
            accumulator, e.g. torch._scaled_mm), apply both scales and the bias in the epilogue and
            round to bf16. Output [num_tokens, {n}] bf16. FLOPs are charged at the fp8 tensor-core
            rate.
        """,
        axes={"num_tokens": var("rows (tokens)"), "in_features": const(k), "out_features": const(n)},
        inputs={
            "x_fp8": tensor(["num_tokens", "in_features"], E4M3, "quantised activations"),
            "x_scale": tensor([], F32, "activation dequantisation scale"),
            "weight_fp8": tensor(["out_features", "in_features"], E4M3, "quantised weight, [out, in]"),
            "weight_scale": tensor([], F32, "weight dequantisation scale"),
            "bias": tensor(["out_features"], BF, "Linear bias"),
        },
        outputs={"output": tensor(["num_tokens", "out_features"], BF, "linear output")},
        reference=reference,
        workloads=[{"num_tokens": t} for t in tokens],
        tolerance=BF16,
    )
    return with_tensor_core_dtype(problem, E4M3)


def nvfp4_linear(
    model: ModelConfig,
    *,
    suffix: str,
    site: str,
    in_dim: Dim,
    out_dim: Dim,
    tokens: Sequence[int],
    token_text: str,
    block: int = 16,  # NVFP4: one e4m3 scale per 16 consecutive values along K
) -> Problem:
    """W4A16: a Linear whose weight is NVFP4 (packed e2m1 + e4m3 block scales + fp32 global scale)."""
    k, n = dim(model, in_dim), dim(model, out_dim)
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        BLOCK = $BLOCK
        # e2m1 code -> value: sign bit 3, then the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
        E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


        def run(hidden_states, weight_fp4, weight_scale, weight_global_scale):
            packed = weight_fp4.view(torch.uint8)
            n, half_k = packed.shape
            # Low nibble holds the even element, high nibble the odd one.
            codes = torch.stack([packed & 0xF, packed >> 4], dim=-1).reshape(n, 2 * half_k).long()
            table = torch.tensor(E2M1, dtype=torch.float32, device=packed.device)
            values = table[codes]
            scales = weight_scale.to(torch.float32).repeat_interleave(BLOCK, dim=1)
            acc = torch.promote_types(hidden_states.dtype, torch.float32)
            w = values.to(acc) * scales.to(acc) * weight_global_scale.to(acc)
            return F.linear(hidden_states.to(acc), w).to(hidden_states.dtype)
        """,
        BLOCK=block,
    )
    problem = make_problem(
        name=problem_name(model, suffix),
        model=model,
        op_type="gemm_fp4",
        tags=["gemm", "fp4", "nvfp4", "w4a16", "quantization", "dequant", "tensor-core", "bf16"],
        description=f"""
            {site} of {model.display_name} with an NVFP4-quantised weight and bf16 activations
            (weight-only W4A16, as ModelOpt NVFP4 checkpoints run on GPUs without fp4 MMA or when
            activations stay bf16). weight_fp4 is [{n}, {k // 2}] uint8 holding float4_e2m1fn_x2
            data (declared uint8 because torch has no CPU kernels for that dtype): two e2m1 codes
            per byte along K, the low nibble the even element; code bit 3 is the sign and bits 0-2
            index the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6. weight_scale is [{n}, {k // block}]
            float8_e4m3fn, one scale per {block} consecutive K values; weight_global_scale is a 0-D
            fp32 scale. Dequantised weight w = e2m1 * block scale * global scale in fp32; out =
            hidden_states @ w^T with fp32 accumulation, rounded to bf16 (a kernel may round w to
            bf16 for the MMA: that moves outputs by ~0.2%, inside the tolerance). hidden_states is [num_tokens, {k}] bf16 ({token_text}); output [num_tokens,
            {n}] bf16. The weight is read at 4.5 bits per value: at small num_tokens the kernel is
            bound by the weight read, at large ones by the bf16 MMA.
        """,
        axes={
            "num_tokens": var("rows (tokens)"),
            "in_features": const(k),
            "packed_in": expr("in_features // 2", "bytes per weight row"),
            "scale_blocks": expr(f"in_features // {block}", "scales per weight row"),
            "out_features": const(n),
        },
        constraints=[f"in_features % {block} == 0"],
        inputs={
            "hidden_states": tensor(["num_tokens", "in_features"], BF, "activations"),
            "weight_fp4": tensor(
                ["out_features", "packed_in"], U8, "packed e2m1 codes, two per byte, [out, in/2]"
            ),
            "weight_scale": tensor(["out_features", "scale_blocks"], E4M3, "per-16 block scales"),
            "weight_global_scale": tensor([], F32, "per-tensor global scale"),
        },
        outputs={"output": tensor(["num_tokens", "out_features"], BF, "linear output")},
        reference=reference,
        workloads=[{"num_tokens": t} for t in tokens],
        tolerance=BF16,
    )
    return with_tensor_core_dtype(problem, BF)  # W4A16: bf16 MMAs on the dequantised weight


# k_proj has no bias in Whisper: the K third of the packed bias is not used.
K_BIAS_DROP = "torch.cat([qkv_bias[:D], torch.zeros_like(qkv_bias[D : 2 * D]), qkv_bias[2 * D :]])"


def pre_ln_encoder_layer(
    model: ModelConfig,
    *,
    site: str,
    hidden: Dim,
    heads: Dim,
    ffn: Dim,
    eps: float,
    act: Activation,
    seq_len: int,
    sizes: Sequence[int],
    item: str = "image",
    layer_scale: bool = False,
    k_bias: bool = True,
    seq_text: str = "",
    suffix: str = "encoder_layer",
) -> Problem:
    """A whole pre-LN transformer encoder layer: LN, MHA, residual, LN, MLP, residual."""
    d, h, f = dim(model, hidden), dim(model, heads), dim(model, ffn)
    hd = d // h
    names = [
        "hidden_states", "ln1_weight", "ln1_bias", "qkv_weight", "qkv_bias", "out_proj_weight", "out_proj_bias",
        "ln2_weight", "ln2_bias", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
    ]  # fmt: skip
    if layer_scale:
        names += ["layer_scale1", "layer_scale2"]
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        EPS = $EPS
        D = $D


        def linear(x, w, b):
            # A bf16 tensor-core GEMM: operands in the weight dtype, exact products, fp32 accumulation.
            acc = torch.promote_types(w.dtype, torch.float32)
            return F.linear(x.to(w.dtype).to(acc), w.to(acc), b.to(acc))


        def layer_norm(x, weight, bias):
            return F.layer_norm(x, (x.shape[-1],), weight.to(x.dtype), bias.to(x.dtype), EPS)


        def run($ARGS):
            acc = torch.promote_types(hidden_states.dtype, torch.float32)
            h = hidden_states.to(acc)
            b, s, d = h.shape
            x = layer_norm(h, ln1_weight, ln1_bias)
            qkv = linear(x, qkv_weight, $QKV_BIAS)
            q, k, v = qkv.to(qkv_weight.dtype).to(acc).reshape(b, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
            attn = F.scaled_dot_product_attention(q, k, v)
            attn = linear(attn.transpose(1, 2).reshape(b, s, d), out_proj_weight, out_proj_bias)
            h = h + ${LS1}attn
            x = layer_norm(h, ln2_weight, ln2_bias)
            x = linear(x, fc1_weight, fc1_bias)
            x = $ACT
            x = linear(x, fc2_weight, fc2_bias)
            return (h + ${LS2}x).to(hidden_states.dtype)
        """,
        HEADS=h,
        EPS=eps,
        D=d,
        ARGS=", ".join(names),
        QKV_BIAS="qkv_bias" if k_bias else K_BIAS_DROP,
        LS1="layer_scale1.to(acc) * " if layer_scale else "",
        LS2="layer_scale2.to(acc) * " if layer_scale else "",
        ACT=act_code(act, "x"),
    )
    inputs = {
        "hidden_states": tensor(["batch_size", "seq_len", "hidden_size"], BF, "residual stream"),
        "ln1_weight": tensor(["hidden_size"], BF, "pre-attention LayerNorm weight"),
        "ln1_bias": tensor(["hidden_size"], BF, "pre-attention LayerNorm bias"),
        "qkv_weight": tensor(
            ["qkv_size", "hidden_size"], BF, "q, k, v projections stacked, [3*hidden, hidden]"
        ),
        "qkv_bias": tensor(
            ["qkv_size"], BF, "q, k, v biases stacked" + ("" if k_bias else " (K third unused)")
        ),
        "out_proj_weight": tensor(["hidden_size", "hidden_size"], BF, "attention output projection"),
        "out_proj_bias": tensor(["hidden_size"], BF, "attention output bias"),
        "ln2_weight": tensor(["hidden_size"], BF, "pre-MLP LayerNorm weight"),
        "ln2_bias": tensor(["hidden_size"], BF, "pre-MLP LayerNorm bias"),
        "fc1_weight": tensor(["ffn_size", "hidden_size"], BF, "MLP up projection"),
        "fc1_bias": tensor(["ffn_size"], BF, "MLP up bias"),
        "fc2_weight": tensor(["hidden_size", "ffn_size"], BF, "MLP down projection"),
        "fc2_bias": tensor(["hidden_size"], BF, "MLP down bias"),
    }
    if layer_scale:
        inputs["layer_scale1"] = tensor(["hidden_size"], BF, "LayerScale after attention")
        inputs["layer_scale2"] = tensor(["hidden_size"], BF, "LayerScale after the MLP")
    ls_text = (
        " Each branch is multiplied by its LayerScale vector before the residual add." if layer_scale else ""
    )
    kb_text = (
        ""
        if k_bias
        else " The key projection has no bias (Whisper's k_proj): ignore the middle third of qkv_bias."
    )
    problem = make_problem(
        name=problem_name(model, suffix),
        model=model,
        op_type="encoder_layer",
        tags=["transformer-layer", "attention", "layernorm", "mlp", "gemm", "fusion", "bf16", "tensor-core"],
        description=f"""
            One whole {site} layer of {model.display_name}, pre-LN: h = x + out_proj(MHA(LN1(x)));
            out = h + fc2({_ACT_TEXT[act]}(fc1(LN2(h)))).{ls_text} hidden_states is [batch_size,
            {seq_len}, {d}] bf16 ({seq_len} tokens per {item}{seq_text}); LayerNorms have eps {eps:g}
            with fp32 statistics and affine weights; attention is non-causal with {h} heads of
            {hd}, scale {hd**-0.5:g}; q, k, v come from one packed projection qkv_weight [{3 * d},
            {d}] (rows q, then k, then v; heads contiguous within each).{kb_text} MLP {d} -> {f} ->
            {d}. Precision contract of a fused kernel: the residual stream, norms, softmax and
            activations stay in fp32; each GEMM takes its activation operand rounded to bf16 (the
            tensor-core input) and accumulates in fp32; only the output is rounded to bf16.
            Output [batch_size, {seq_len}, {d}] bf16. The layer's weights total
            {2 * (4 * d * d + 2 * d * f) / 2**20:.1f} MiB.
        """,
        axes={
            "batch_size": var(f"{item}s in the batch"),
            "seq_len": const(seq_len),
            "hidden_size": const(d),
            "qkv_size": expr("3 * hidden_size"),
            "ffn_size": const(f),
        },
        inputs=inputs,
        outputs={"output": tensor(["batch_size", "seq_len", "hidden_size"], BF, "layer output")},
        reference=reference,
        workloads=[{"batch_size": b} for b in sizes],
        tolerance=BF16_BLOCK,
    )
    return with_tensor_core_dtype(problem, BF)


__all__ = [
    "fp8_linear",
    "gelu_mlp",
    "nvfp4_linear",
    "pre_ln_encoder_layer",
]
