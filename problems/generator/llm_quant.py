"""Quantised language-model templates: fp8 block-scale GEMM (DeepSeek-V3), per-tensor fp8 GEMM, dynamic
per-token fp8 quantisation, NVFP4 quantisation and NVFP4 GEMM.

References dequantise to fp32 and multiply there (products of fp8/fp4 values are exact in fp32); the
speed of light re-keys those FLOPs to the low-precision tensor cores a kernel would use.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import EXACT_CODES, FP8_GEMM, FP8_QUANT, const, expr, make_problem, reference_source, tensor, var
from .llm_ops import gemm_shape
from .llm_shapes import (
    BF,
    E4M3,
    F32,
    FP4X2,
    NUM_TOKENS,
    U8,
    hidden_size,
    token_workloads,
    tokens_between,
    tp_suffix,
    tp_text,
    with_counting,
)
from .models import ModelConfig

GEMM_TOKENS = tokens_between(1, 8192, (3, 100, 1000))


def _shape(model: ModelConfig, which: str, tp: int, shape: tuple[int, int] | None) -> tuple[int, int]:
    return shape if shape is not None else gemm_shape(model, which, tp)


def fp8_block_gemm(
    model: ModelConfig,
    *,
    which: str,
    label: str | None = None,
    shape: tuple[int, int] | None = None,
    tp: int = 1,
    tokens: Sequence[int] = GEMM_TOKENS,
) -> Problem:
    """C = dequant(A) dequant(B)^T with 1x128 activation groups and 128x128 weight blocks (DeepGEMM)."""
    n, k = _shape(model, which, tp, shape)
    block = model.integer("quantization_config.weight_block_size")
    n_blocks = -(-n // block)
    reference = reference_source(
        """
        import torch

        BLOCK = $BLOCK


        def run(a_fp8, a_scales, b_fp8, b_scales):
            n, k = b_fp8.shape
            a = (a_fp8.to(torch.float32).unflatten(-1, (-1, BLOCK)) * a_scales[..., None]).flatten(-2)
            s = b_scales.repeat_interleave(BLOCK, dim=0)[:n].repeat_interleave(BLOCK, dim=1)
            b = b_fp8.to(torch.float32) * s
            return (a @ b.t()).to(torch.bfloat16)
        """,
        BLOCK=block,
    )
    what = label or which
    problem = make_problem(
        name=f"{model.key}_fp8_block_gemm_{what}{tp_suffix(tp)}",
        model=model,
        op_type="gemm",
        tags=["gemm", "fp8", "e4m3", "block-scale", "quantization", "decode", "prefill", "tensor-core"],
        description=f"""
            The {what} GEMM of {model.display_name}{tp_text(tp)} with the checkpoint's fp8 block quantisation
            (e4m3, weight_block_size {block}): output = dequant(a) @ dequant(b)^T with M = num_tokens, N =
            {n}, K = {k}. a_fp8 [num_tokens, {k}] e4m3 carries one fp32 scale per token and {block}-wide K
            group (a_scales [num_tokens, {k // block}]); b_fp8 [{n}, {k}] e4m3 (nn.Linear layout) one fp32
            scale per {block}x{block} block (b_scales [{n_blocks}, {k // block}]); dequantised value = fp8
            value * its scale. Output [num_tokens, {n}] bf16. This is DeepGEMM's fp8 GEMM: fp8 tensor-core
            MMAs per {block}-wide K block, scaled and accumulated in fp32 registers (Hopper's fp8 accumulator
            alone is too narrow for K={k}). Decode sizes stream the {n * k / 2**20:.0f} MiB weight.
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "n": const(n),
            "k": const(k),
            "k_groups": const(k // block),
            "n_blocks": const(n_blocks),
        },
        constraints=[f"k % {block} == 0"],
        inputs={
            "a_fp8": tensor(["num_tokens", "k"], E4M3, "quantised activations"),
            "a_scales": tensor(["num_tokens", "k_groups"], F32, "activation scale per token and K group"),
            "b_fp8": tensor(["n", "k"], E4M3, "quantised weight, [out, in]"),
            "b_scales": tensor(["n_blocks", "k_groups"], F32, "weight scale per 128x128 block"),
        },
        outputs={"output": tensor(["num_tokens", "n"], BF, "GEMM output")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=FP8_GEMM,
    )
    return with_counting(problem, tensor_core_dtype=E4M3)


def fp8_tensor_gemm(
    model: ModelConfig,
    *,
    which: str,
    tp: int = 1,
    tokens: Sequence[int] = GEMM_TOKENS,
) -> Problem:
    """C = (a * a_scale) (b * b_scale)^T with one fp32 scale per tensor (FP8 W8A8, static scales)."""
    n, k = gemm_shape(model, which, tp)
    reference = reference_source(
        """
        import torch


        def run(a_fp8, a_scale, b_fp8, b_scale):
            a = a_fp8.to(torch.float32) * a_scale
            b = b_fp8.to(torch.float32) * b_scale
            return (a @ b.t()).to(torch.bfloat16)
        """
    )
    problem = make_problem(
        name=f"{model.key}_fp8_tensor_gemm_{which}{tp_suffix(tp)}",
        model=model,
        op_type="gemm",
        tags=["gemm", "fp8", "e4m3", "per-tensor", "quantization", "decode", "prefill", "tensor-core"],
        description=f"""
            The {which} GEMM of {model.display_name}{tp_text(tp)} served with per-tensor FP8 (W8A8 e4m3 with
            static scales, the layout of vLLM's fp8 checkpoints and torch._scaled_mm): output = (a_fp8 *
            a_scale) @ (b_fp8 * b_scale)^T, M = num_tokens, N = {n}, K = {k}. a_fp8 [num_tokens, {k}] and
            b_fp8 [{n}, {k}] (nn.Linear layout) are e4m3; a_scale and b_scale are 0-D fp32 tensors. Output
            [num_tokens, {n}] bf16 with fp32 accumulation; apply the product of the two scales once in the
            epilogue. Decode sizes stream the {n * k / 2**20:.0f} MiB fp8 weight; prefill sizes run at the
            fp8 tensor-core rate, twice bf16's.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "n": const(n), "k": const(k)},
        inputs={
            "a_fp8": tensor(["num_tokens", "k"], E4M3, "quantised activations"),
            "a_scale": tensor([], F32, "activation dequantisation scale"),
            "b_fp8": tensor(["n", "k"], E4M3, "quantised weight, [out, in]"),
            "b_scale": tensor([], F32, "weight dequantisation scale"),
        },
        outputs={"output": tensor(["num_tokens", "n"], BF, "GEMM output")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=FP8_GEMM,
    )
    return with_counting(problem, tensor_core_dtype=E4M3)


def fp8_per_token_quant(
    model: ModelConfig,
    *,
    width_key: str = "hidden_size",
    tokens: Sequence[int] = tokens_between(4, 16384, (1000,)),
    fp8_max: float = 448.0,
) -> Problem:
    """Dynamic per-token fp8 quantisation (one scale per row), as FP8-dynamic W8A8 checkpoints use."""
    width = hidden_size(model) if width_key == "hidden_size" else model.integer(width_key)
    reference = reference_source(
        """
        import torch

        FP8_MAX = $FP8_MAX


        def run(x):
            xf = x.to(torch.float32)
            scales = xf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-10) / FP8_MAX
            q = (xf / scales).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
            return q, scales
        """,
        FP8_MAX=fp8_max,
    )
    return make_problem(
        name=f"{model.key}_fp8_per_token_quant" + ("" if width_key == "hidden_size" else "_intermediate"),
        model=model,
        op_type="quantize_fp8",
        tags=["quantization", "fp8", "e4m3", "per-token", "dynamic", "memory-bound", "decode", "prefill"],
        description=f"""
            Dynamic per-token FP8 quantisation of the {width_key} ({width}) activations of
            {model.display_name} before a W8A8 fp8 GEMM (vLLM's dynamic_per_token_scaled_fp8_quant). x is
            [num_tokens, {width}] bf16. Per token: scale = max(|x|) / {fp8_max:g} in fp32 (max floored at
            1e-10); x_fp8 = clamp(x / scale, -{fp8_max:g}, {fp8_max:g}) cast to float8_e4m3fn
            (round-to-nearest-even). Outputs x_fp8 [num_tokens, {width}] e4m3 and scales [num_tokens, 1]
            fp32. One row reduction, then an elementwise pass over the same row: keep the row on chip.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "width": const(width)},
        inputs={"x": tensor(["num_tokens", "width"], BF, "activations to quantise")},
        outputs={
            "x_fp8": tensor(["num_tokens", "width"], E4M3, "quantised activations"),
            "scales": tensor(["num_tokens", 1], F32, "per-token dequantisation scale"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=FP8_QUANT,
    )


_E2M1_SOURCE = """
E2M1_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)  # midpoints between 0, .5, 1, 1.5, 2, 3, 4, 6
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
"""


def nvfp4_quant(
    model: ModelConfig,
    *,
    width: int | None = None,
    label: str = "",
    tokens: Sequence[int] = tokens_between(1, 16384, (1000,)),
) -> Problem:
    """NVFP4 quantisation: e2m1 values two per byte, one e4m3 scale per 16 values, a global fp32 scale."""
    k = width or hidden_size(model)
    reference = reference_source(
        """
        import torch

        $E2M1
        BLOCK = 16


        def e2m1_codes(v):
            # Round |v| to the nearest e2m1 magnitude, ties to the even code, then add the sign bit.
            bounds = torch.tensor(E2M1_BOUNDS, dtype=torch.float32, device=v.device)
            a = v.abs()
            down = torch.bucketize(a, bounds, right=False)  # a tie rounds down
            up = torch.bucketize(a, bounds, right=True)  # a tie rounds up
            magnitude = torch.where((down != up) & (down % 2 == 1), up, down)
            return magnitude.to(torch.uint8) | ((v < 0).to(torch.uint8) << 3)


        def run(x, global_scale):
            rows, k = x.shape
            blocks = x.to(torch.float32).reshape(rows, k // BLOCK, BLOCK)
            amax = blocks.abs().amax(dim=-1, keepdim=True)
            block_scales = (global_scale * (amax / 6.0)).clamp(max=448.0).to(torch.float8_e4m3fn)
            # Values are divided by the decoded block scale over the global scale; a zero block stays zero.
            decoded = block_scales.to(torch.float32) / global_scale
            inverse = torch.where(decoded > 0, 1.0 / decoded, torch.zeros_like(decoded))
            codes = e2m1_codes((blocks * inverse).clamp(-6.0, 6.0)).reshape(rows, k)
            packed = codes[:, 0::2] | (codes[:, 1::2] << 4)  # element 2i in the low nibble
            return packed, block_scales.reshape(rows, k // BLOCK)
        """,
        E2M1=_E2M1_SOURCE.strip(),
    )
    return make_problem(
        name=f"{model.key}_nvfp4_quant{label}",
        model=model,
        op_type="quantize_fp4",
        tags=["quantization", "nvfp4", "fp4", "e2m1", "block-scale", "memory-bound", "decode", "prefill"],
        description=f"""
            NVFP4 activation quantisation of {model.display_name} ({k}-wide rows) before an FP4 GEMM on
            Blackwell, as NVIDIA's FP4 checkpoints and FlashInfer's fp4_quantize do. x is [num_tokens, {k}]
            bf16; global_scale a 0-D fp32 tensor (448 * 6 / calibrated amax). Per 16-value block: amax = max
            |x|; block_scale = e4m3(min(global_scale * amax / 6, 448)) (round to nearest even); each value is
            multiplied by 1 / (fp32(block_scale) / global_scale) (0 for a zero scale), clamped to [-6, 6] and
            rounded to the nearest e2m1 value (0, 0.5, 1, 1.5, 2, 3, 4, 6; ties to even code; sign in bit 3).
            Outputs: x_fp4 [num_tokens, {k // 2}] uint8 holding two e2m1 codes per byte, element 2i in the low
            nibble (the packed layout FlashInfer and vLLM return), compared byte for byte; block_scales
            [num_tokens, {k // 16}] e4m3, row-major (not the 128x4 swizzled layout of the GEMM kernels).
            Memory-bound: 2 bytes in, 0.5625 out per value.
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "k": const(k),
            "k_packed": expr("k // 2", "bytes per row: two fp4 values each"),
            "k_blocks": expr("k // 16", "16-value scale blocks per row"),
        },
        constraints=["k % 32 == 0"],
        inputs={
            "x": tensor(["num_tokens", "k"], BF, "activations"),
            "global_scale": tensor([], F32, "global fp32 scale"),
        },
        outputs={
            "x_fp4": tensor(["num_tokens", "k_packed"], U8, "packed e2m1 codes, two per byte"),
            "block_scales": tensor(["num_tokens", "k_blocks"], E4M3, "e4m3 scale per 16 values"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=EXACT_CODES,
    )


def nvfp4_gemm(
    model: ModelConfig,
    *,
    which: str,
    label: str | None = None,
    shape: tuple[int, int] | None = None,
    tp: int = 1,
    alpha: float = 0.5,
    tokens: Sequence[int] = GEMM_TOKENS,
) -> Problem:
    """W4A4 NVFP4 GEMM: both operands packed e2m1 with e4m3 block scales per 16 values, times alpha."""
    n, k = _shape(model, which, tp, shape)
    reference = reference_source(
        """
        import torch

        $E2M1
        BLOCK = 16


        def dequant(packed, scales):
            table = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=packed.device)
            # The low nibble is the even element.
            codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).flatten(-2)
            return table[codes.to(torch.int64)] * scales.to(torch.float32).repeat_interleave(BLOCK, dim=-1)


        def run(a_fp4, a_scales, b_fp4, b_scales, alpha):
            return (alpha * (dequant(a_fp4, a_scales) @ dequant(b_fp4, b_scales).t())).to(torch.bfloat16)
        """,
        E2M1=_E2M1_SOURCE.strip(),
    )
    what = label or which
    problem = make_problem(
        name=f"{model.key}_nvfp4_gemm_{what}{tp_suffix(tp)}",
        model=model,
        op_type="gemm",
        tags=[
            "gemm",
            "nvfp4",
            "fp4",
            "e2m1",
            "block-scale",
            "quantization",
            "decode",
            "prefill",
            "tensor-core",
        ],
        description=f"""
            The {what} GEMM of {model.display_name}{tp_text(tp)} in NVFP4 (W4A4, as NVIDIA's FP4 checkpoints
            run on Blackwell): output = alpha * dequant(a) @ dequant(b)^T with M = num_tokens, N = {n}, K =
            {k}. a_fp4 [num_tokens, {k // 2}] and b_fp4 [{n}, {k // 2}] are uint8 holding two e2m1 codes per
            byte (packed float4_e2m1fn_x2 storage, element 2i in the low nibble; codes 0-7 = 0, 0.5, 1, 1.5,
            2, 3, 4, 6, bit 3 the sign); a_scales [num_tokens, {k // 16}] and b_scales [{n}, {k // 16}] are
            e4m3, one per 16 consecutive K values, row-major (un-swizzled); dequantised value = e2m1 value *
            block scale. alpha is a Python float (1 / (global_scale_a * global_scale_b); {alpha:g} here).
            Output [num_tokens, {n}] bf16 with fp32 accumulation. Decode sizes stream the
            {n * k / 2 / 2**20:.0f} MiB packed weight; prefill sizes run on the fp4 tensor cores (block-scaled
            MMA).
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "n": const(n),
            "k": const(k),
            "k_packed": expr("k // 2", "bytes per row"),
            "k_blocks": expr("k // 16", "scale blocks per row"),
        },
        constraints=["k % 32 == 0"],
        inputs={
            "a_fp4": tensor(["num_tokens", "k_packed"], U8, "packed e2m1 activations, two per byte"),
            "a_scales": tensor(["num_tokens", "k_blocks"], E4M3, "activation block scales"),
            "b_fp4": tensor(["n", "k_packed"], U8, "packed e2m1 weight, two per byte, [out, in]"),
            "b_scales": tensor(["n", "k_blocks"], E4M3, "weight block scales"),
            "alpha": tensor(None, F32, "product of the inverse global scales"),
        },
        outputs={"output": tensor(["num_tokens", "n"], BF, "GEMM output")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=FP8_GEMM,
        scalars={"alpha": alpha},
    )
    return with_counting(problem, tensor_core_dtype=FP4X2)
