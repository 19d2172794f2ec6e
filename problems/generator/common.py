"""Building blocks the operator templates share: axes, tensors, tolerances, workloads, uuids."""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterable, Mapping, Sequence
from string import Template
from typing import Any

from ..definition import ConstAxis, Definition, ExprAxis, TensorSpec, VarAxis
from ..dtypes import DType
from ..load import Problem
from ..workload import RandomInput, ScalarInput, Tolerance, Workload
from .models import ModelConfig

UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/solforge/solforge/catalogue")
"""Namespace of the workload uuids: uuid5(namespace, problem name + axes), stable across runs."""

# -- tolerances ---------------------------------------------------------------------------------
# An element matches when |out - ref| <= atol + rtol * |ref| (compared in fp32).

BF16 = Tolerance(max_atol=1e-2, max_rtol=1e-2, required_matched_ratio=0.99)
"""bf16 outputs: one bf16 ulp is 2^-8 (0.4%) relative, so 1e-2 admits about two ulps of rounding
difference between a kernel and the reference (different accumulation order, fused vs. unfused
rounding) and still rejects a wrong formula, a missing weight or a wrong epsilon."""

BF16_ATTENTION = Tolerance(max_atol=2e-3, max_rtol=1e-2, required_matched_ratio=0.99)
"""bf16 attention outputs: each is a softmax-weighted mean of random values, so |out| is only about
1/sqrt(context) (0.01-0.1); atol 1e-2 would be as large as the signal and would pass a kernel that
attends to the wrong positions. A bf16 ulp at 0.05 is 2e-4, and rounding P to bf16 before P @ V (as
FlashAttention does) moves outputs by ~1e-4, both well inside 2e-3."""

FP16 = Tolerance(max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=0.99)
"""fp16 outputs: one fp16 ulp is at most 2^-10 (0.1%) relative, so 1e-3 admits a one-ulp rounding
flip; statistics must be accumulated in fp32 to pass."""

FP32 = Tolerance(max_atol=1e-5, max_rtol=1e-5, required_matched_ratio=0.99)
"""fp32 outputs of well-conditioned elementwise/reduction ops: fast-math exp and a different
reduction order stay within a few 1e-7; 1e-5 leaves margin while rejecting bf16/tf32 shortcuts."""

FP32_FROM_BF16_GEMM = Tolerance(max_atol=1e-4, max_rtol=1e-3, required_matched_ratio=0.99)
"""fp32 outputs derived from a bf16 x bf16 reduction with fp32 accumulation: summation order moves
results by ~1e-6 relative; rounding the logits to bf16 (2^-9 relative) does not pass."""

FP8_QUANT = Tolerance(max_atol=1e-5, max_rtol=2e-2, required_matched_ratio=0.95)
"""fp8 quantisation with fp32 scales. rtol 2e-2 and matched 0.95 follow SOL-ExecBench's FP8 preset.
atol is 1e-5 rather than the preset's 5e-3 because the fp32 scales themselves are ~5e-3 (amax/448):
an atol of 5e-3 would accept any scale, including zero. An e4m3 ulp is 6-12% relative, so rtol 2e-2
only accepts the exact code; the 5% slack absorbs codes that flip at a rounding midpoint when a
kernel computes x * (1/s) instead of x / s."""

# -- token counts -----------------------------------------------------------------------------

DECODE_TO_PREFILL = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
"""Token counts from single-token decode to a long prefill chunk."""


# -- definition pieces --------------------------------------------------------------------------


def const(value: int, description: str | None = None) -> ConstAxis:
    return ConstAxis(value=value, description=description)


def var(description: str | None = None) -> VarAxis:
    return VarAxis(description=description)


def expr(expression: str, description: str | None = None) -> ExprAxis:
    return ExprAxis(expression=expression, description=description)


def tensor(shape: Sequence[str | int] | None, dtype: DType | str, description: str | None = None) -> TensorSpec:
    return TensorSpec(shape=None if shape is None else list(shape), dtype=DType(dtype), description=description)


def reference_source(source: str, **constants: int | float | str) -> str:
    """Dedent a reference template and substitute ``$NAME`` placeholders (every one must be given).

    Floats are written with ``repr`` so that the source holds exactly the configured value.
    """
    values = {k: repr(v) if isinstance(v, float) else str(v) for k, v in constants.items()}
    text = Template(textwrap.dedent(source).strip("\n") + "\n").substitute(values)
    compile(text, "<reference>", "exec")  # a template typo fails at generation, not in a worker
    return text


def workload_uuid(name: str, axes: Mapping[str, int]) -> str:
    """The stable uuid of one workload: uuid5 over the problem name and its var axes."""
    return str(uuid.uuid5(UUID_NAMESPACE, f"{name}:{json.dumps(dict(axes), sort_keys=True)}"))


def make_problem(
    *,
    name: str,
    model: ModelConfig,
    op_type: str,
    tags: Iterable[str],
    description: str,
    axes: Mapping[str, ConstAxis | VarAxis | ExprAxis],
    inputs: Mapping[str, TensorSpec],
    outputs: Mapping[str, TensorSpec],
    reference: str,
    workloads: Sequence[Mapping[str, int]],
    tolerance: Tolerance,
    constraints: Sequence[str] = (),
    scalars: Mapping[str, int | float | bool] | None = None,
) -> Problem:
    """Assemble and validate one problem.

    Every input is listed in every workload (``random``, or ``scalar`` with the value in
    ``scalars``) so that the files read the same in solforge and in SOL-ExecBench.

    Raises
    ------
    ValueError
        If the definition does not validate, a workload repeats or fails the constraints.
    """
    scalars = dict(scalars or {})
    unknown = set(scalars) - set(inputs)
    if unknown:
        raise ValueError(f"{name}: scalar values for unknown inputs {sorted(unknown)}")
    definition = Definition(
        name=name,
        op_type=op_type,
        hf_id=model.hf_id,
        description=" ".join(textwrap.dedent(description).split()),
        axes=dict(axes),
        inputs=dict(inputs),
        outputs=dict(outputs),
        reference=reference,
        constraints=list(constraints),
        tags=sorted(set(tags)),
        category=model.category,
    )
    descriptors: dict[str, Any] = {
        n: ScalarInput(value=scalars[n]) if n in scalars else RandomInput() for n in definition.inputs
    }
    seen: set[str] = set()
    built: list[Workload] = []
    for axes_values in workloads:
        values = {k: int(v) for k, v in axes_values.items()}
        if set(values) != set(definition.var_axes):
            raise ValueError(f"{name}: workload {values} must set exactly the var axes {definition.var_axes}")
        definition.resolve_axes(values)  # raises on a failed constraint
        uid = workload_uuid(name, values)
        if uid in seen:
            raise ValueError(f"{name}: workload {values} repeats")
        seen.add(uid)
        built.append(Workload(uuid=uid, axes=values, inputs=dict(descriptors), tolerance=tolerance))
    return Problem(definition=definition, workloads=built)
