"""Small helpers the media templates share: reading dimensions, naming, workload sweeps."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..definition import SolOverride
from ..dtypes import DType
from ..load import Problem
from .models import ModelConfig

BF = DType.bfloat16
HALF = DType.float16
F32 = DType.float32
I64 = DType.int64
E4M3 = DType.float8_e4m3fn
FP4X2 = DType.float4_e2m1fn_x2
U8 = DType.uint8

Dim = int | str | tuple[str, ...]
"""A dimension: a literal (from modelling code, documented where it is passed), a config key, or a
tuple of config keys whose values multiply (heads x head_dim)."""


def dim(model: ModelConfig, spec: Dim) -> int:
    """Resolve a :data:`Dim` against a model's config."""
    if isinstance(spec, int):
        return spec
    if isinstance(spec, str):
        return model.integer(spec)
    return math.prod(model.integer(k) for k in spec)


def problem_name(model: ModelConfig, suffix: str) -> str:
    return f"{model.key}_{suffix}"


def with_tensor_core_dtype(problem: Problem, dtype: DType) -> Problem:
    """Key the derived tensor-core FLOPs by ``dtype``: the reference dequantises low-precision
    operands before an fp32/bf16 matmul, while a kernel runs the matmul on ``dtype`` tensor cores."""
    definition = problem.definition.model_copy(update={"flops": SolOverride(tensor_core_dtype=dtype)})
    return Problem(definition=definition, workloads=problem.workloads)


def grid(first: Sequence[int], second: Sequence[int]) -> list[tuple[int, int]]:
    """Every (a, b) pair, in order: a small sweep over two axes."""
    return [(a, b) for a in first for b in second]


FUSED_HELPERS = """\
def linear(x, w, b=None):
    # A tensor-core GEMM: activation operand rounded to the weight dtype, exact products, fp32
    # accumulation, result kept in the accumulator dtype (fp64 when the inputs are fp64).
    acc = torch.promote_types(w.dtype, torch.float32)
    return F.linear(x.to(w.dtype).to(acc), w.to(acc), None if b is None else b.to(acc))
"""
"""Reference helper of fused templates; paste with ``$HELPERS`` (needs torch and F imported)."""

FUSED_CONTRACT = (
    "Precision contract of a fused kernel: intermediates stay in fp32; every GEMM or convolution "
    "takes its activation operand rounded to bf16 (the tensor-core input) and accumulates in fp32; "
    "only the final outputs are rounded to bf16."
)
"""The sentence descriptions of fused templates end with."""
