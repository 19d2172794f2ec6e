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


# -- tolerances of the media catalogue (added for diffusion/vision/audio/video/multimodal) ----------

BF16_GRAD = Tolerance(max_atol=1e-3, max_rtol=2e-2, required_matched_ratio=0.99)
"""bf16 attention gradients: dq/dk are sums of small dS * k terms (|dq| ~ 0.01-0.1), so the BF16
preset's atol of 1e-2 would accept a gradient that is mostly wrong. FlashAttention's backward rounds
dS and P to bf16 before its matmuls, which moves a gradient by a few bf16 ulps (2^-8 each), well
inside rtol 2e-2 plus atol 1e-3; a dropped rowsum(dO * O) term or a missing scale does not pass."""

FP32_REDUCTION = Tolerance(max_atol=1e-4, max_rtol=1e-4, required_matched_ratio=0.99)
"""fp32 outputs of reductions over 10^4-10^6 values (norm backward weight/bias gradients, sums
over a whole batch): a different summation order (per-CTA partials, atomics) moves such a sum by
~sqrt(n) * 2^-24 relative, up to ~1e-5 for the largest workloads; 1e-4 leaves margin and still
rejects bf16 accumulation (2^-8 relative per partial)."""

FP32_LOG_SPECTRUM = Tolerance(max_atol=1e-4, max_rtol=1e-4, required_matched_ratio=0.99)
"""fp32 log-mel features: a kernel may compute the STFT with an FFT instead of the reference's DFT
matmul, which moves each power bin by ~1e-6 relative (more for the weakest bins, which the mel
filters average and the log compresses). The log10 outputs are O(1), so 1e-4 admits any correct
transform and still rejects a wrong window, hop, filterbank or a bf16 spectrum (2^-8 relative)."""

FP8_GEMM = Tolerance(max_atol=1e-2, max_rtol=2e-2, required_matched_ratio=0.98)
"""bf16 outputs of fp8 / fp4 GEMMs with block or tensor scales. Products of e4m3 (or e2m1 times an e4m3
scale) are exact in fp32, so a kernel that promotes its partial sums to fp32 at least every 128-wide K
block (as DeepSeek-V3 does on Hopper) differs from the fp32 reference only by summation order (~1e-6
relative) plus the final bf16 rounding (2^-9); rtol 2e-2 is SOL-ExecBench's FP8 preset. 2% of elements
may miss: outputs that cancel to near zero, and re-quantised intermediates whose code flips at a
rounding midpoint. A wrong scale layout or a skipped scale moves outputs by far more than 2%."""

EXACT_CODES = Tolerance(max_atol=0.0, max_rtol=1e-3, required_matched_ratio=0.99)
"""Quantised codes (packed fp4 bytes, compared as integers 0-255) and the e4m3 block scales beside them:
rtol 1e-3 accepts only the exact byte or fp8 value (neighbouring codes differ by >= 0.4%, neighbouring
e4m3 values by >= 6%). 1% may differ: values at a rounding midpoint flip when a kernel multiplies by a
reciprocal instead of dividing."""

BF16_BLOCK = Tolerance(max_atol=3e-2, max_rtol=3e-2, required_matched_ratio=0.99)
"""bf16 fused blocks (a whole encoder/DiT layer, a conv block, a norm + GEMM chain): three to six
chained bf16 roundings (GEMM operands, normalised or modulated activations), each 2^-9 relative,
amplified by LayerScale/adaLN gains and gates, put the bf16 reference itself ~1e-2 away from an
fp64 evaluation on a few percent of elements; the tolerance is twice that so that any kernel at
least as accurate as the reference passes. A missing term, a wrong epsilon, activation or gate
changes outputs by O(1) (|out| ~ 1) and is still rejected."""

BF16_RELATIVE = Tolerance(max_atol=1e-9, max_rtol=1e-2, required_matched_ratio=0.99)
"""bf16 outputs whose scale spans decades, such as softmax gradients over a 50k-260k vocabulary
(~1/vocab each, 1e-6 to 1e-4) beside O(1) entries: any fixed atol above their scale would accept
zeros. Relative error only: one bf16 rounding is 2^-9 (0.2%) and an fp32 softmax in another order
moves values by ~1e-6 relative, so rtol 1e-2 passes every accurate kernel and rejects a wrong
normaliser, label or upstream gradient (errors of 10% and more)."""
