"""FLOP and byte counts for one workload, derived from the problem's PyTorch reference.

The speed-of-light model (docs/design.md section 3) needs three numbers per workload: the FLOPs that
tensor cores can execute (per dtype), the other FLOPs (run on the CUDA cores at the fp32 rate) and
the DRAM bytes. This module derives them from the reference itself, so a problem needs no
hand-written formula:

1. **meta**: ``run(...)`` is called on *meta* tensors (shapes and dtypes only, no data) built from
   the definition, under a :class:`~torch.utils._python_dispatch.TorchDispatchMode` that sees every
   aten operator the reference executes and charges it with the cost rules below. This takes
   milliseconds even for the largest workloads, and needs no GPU.
2. **device**: when the reference cannot run on meta tensors (it calls ``.item()``, indexes with a
   boolean mask, branches on values, routes tokens data-dependently), it is run for real under the
   same mode: on the caller's inputs when given, else on inputs made here (the problem's
   ``custom_inputs_entrypoint``, the workload's safetensors, or random tensors), on the GPU when
   one is visible and otherwise on the CPU.
3. **override**: the definition's ``flops`` (:class:`~solforge.problems.definition.SolOverride`)
   and ``bytes`` fields, numbers or expressions over the axes (and scalar inputs), replace the
   derived values field by field. When every FLOP field is overridden the reference is not run.
   ``tensor_core_flops`` is keyed by ``tensor_core_dtype``, else by the widest float input's dtype
   (as :class:`~solforge.problems.definition.SolOverride` documents); ``tensor_core_dtype`` alone
   re-keys the derived tensor-core FLOPs, for a reference that dequantises fp8/fp4 operands before
   a bf16 matmul while a kernel would use the low-precision tensor cores.

Python-scalar inputs take their value from ``inputs``, else from the workload, else a stand-in
(1.0 for floats, 1 for integers, False for bools): enough for counting unless a scalar sets a
shape, in which case pass the workload.

Cost rules
----------
Tensor-core FLOPs (``tensor_core_flops``, keyed by the *operand* dtype name, e.g. ``"bfloat16"``):
2 per multiply-accumulate of every matrix product: ``mm``, ``addmm``, ``bmm``, ``baddbmm``,
``mv``, ``addmv``, ``dot``, convolutions (forward and backward, groups respected), ``_scaled_mm``,
``_int_mm``, ``_grouped_mm`` / ``_scaled_grouped_mm`` and attention. The formulas are
:mod:`torch.utils.flop_counter`'s; ``F.scaled_dot_product_attention`` is intercepted before it
decomposes and counted as its two matrix products, over only the unmasked (query, key) pairs when
``is_causal`` (torch's top-left aligned mask), plus its softmax as other FLOPs. For packed fp4
(``float4_e2m1fn_x2``) operands the reduction length is the logical one, twice the stored one.

**fp32 matrix products are keyed ``"float32"`` and the score charges them at the CUDA-core fp32
rate, never at the TF32 tensor-core rate.** PyTorch computes fp32 matmuls in full fp32 by default,
and SOL-ExecBench treats using TF32 where fp32 is required as a precision downgrade (a reward
hack), so a speed of light that assumed TF32 would be unreachable by an honest kernel. SOLAR does
the same: its fp32 precision selects the SM fp32 MAC rate.

Other FLOPs (``other_flops``), per element:

- pointwise operators: per *output* element, :data:`POINTWISE_COST` (1 for add, mul, compare,
  where, ...; a few for transcendentals), and 1 for any other operator torch tags ``pointwise``;
- reductions: per *input* element, :data:`REDUCTION_COST` (1 for sum, mean, max, ...; 3 for
  var/std), and 1 for any other operator torch tags ``reduction``;
- fused normalisations and softmax: per *input* element, :data:`FUSED_COST`;
- data movement (views, copies, dtype casts, cat, gather, index, factories): 0 (:data:`FREE_OPS`);
- anything else: 0, and its name is listed in ``uncounted_ops`` so the gap is visible.

Transcendentals are charged low, 2 FLOPs (one SFU instruction plus one FMA-pipe instruction),
because the speed of light must stay a lower bound. On sm_90/sm_100 the SFU (MUFU) issues 16
exp2/rsqrt/tanh per SM per clock against 128 fp32 FMAs, so charging its throughput would cost about
16 FLOPs per exp; but the SFU runs beside the FMA pipe, and kernels split exp2 between it and FMA
polynomials (FlashAttention-4), so the achievable cost is far lower. docs/design.md adds the CUDA-core
time to the tensor-core time rather than overlapping them, which already charges attention's
softmax in full; the low per-element costs keep that sum reachable.

Bytes
-----
``bytes`` = every tensor input read once + every output written once (the *fused* bound of
docs/design.md section 3), from the definition's shapes and dtypes: ``numel * bits / 8`` where packed
fp4 (``float4_e2m1fn_x2``) shapes already count bytes and unpacked ``float4_e2m1`` is stored one
code per byte; 0-D tensors are one element; Python scalars (``shape: null``) are free.
Intermediates are not counted: a perfectly fused kernel keeps them on chip.

Known limits (override the counts in the definition when they bite): a reference that computes
more than the operation needs (a causal mask applied by hand to a full score matrix, a dense
all-experts MoE, a whole paged KV pool of which only some pages are read) yields counts above what
a good kernel must do, and the T_SOL derived from them can be beaten legitimately.

This module holds the entry points; the cost rules are in :mod:`~solforge.sandbox.sol.cost_rules`,
the modes and the arguments they run on in :mod:`~solforge.sandbox.sol.tracing`, and the kept counts in
:mod:`~solforge.sandbox.sol.count_cache`.

torch is imported lazily, inside functions: ``solforge.problems`` must import without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from solforge.problems import expr
from solforge.problems.definition import Definition, TensorSpec
from solforge.problems.dtypes import DType
from solforge.problems.errors import SolforgeError
from solforge.problems.files import write_text_atomic
from solforge.problems.workload import Workload

from .cost_rules import (
    COUNTING_VERSION,
    FREE_OPS,
    FUSED_COST,
    POINTWISE_COST,
    REDUCTION_COST,
    SOFTMAX_COST,
    Tally,
)
from .count_cache import SHIPPED_COUNTS, cached_tally, keep_tally, meta_cache_key, tally_to_json
from .tracing import CountingError, meta_args, real_args, reference_module, run_counted, scalar_values

if TYPE_CHECKING:
    from solforge.problems.load import Problem

__all__ = [
    "COUNTING_VERSION",
    "FREE_OPS",
    "FUSED_COST",
    "POINTWISE_COST",
    "REDUCTION_COST",
    "SHIPPED_COUNTS",
    "SOFTMAX_COST",
    "CountMethod",
    "CountingError",
    "SolCounts",
    "count_workload",
    "counts_for_problem",
    "counts_for_workloads",
    "load_counts",
    "meta_inputs",
    "save_counts",
    "shipped_count_record",
]

CountMethod = Literal["meta", "device", "override"]


class SolCounts(BaseModel):
    """What one workload costs: FLOPs by kind and DRAM bytes (hardware-independent)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    tensor_core_flops: dict[str, float] = Field(default_factory=dict)
    """Matrix-product FLOPs (2 per multiply-add) keyed by the operand dtype name (``bfloat16``,
    ``float8_e4m3fn``, ``float32``, ...); which peak each key runs at is the score's business."""
    other_flops: float = 0.0
    """Elementwise, reduction and softmax FLOPs, run on the CUDA cores at the fp32 rate."""
    bytes: float = 0.0
    """DRAM bytes: inputs read once + outputs written once, or the definition's override."""
    input_bytes: float = 0.0
    """Bytes of the definition's tensor inputs (part of ``bytes`` unless it is overridden)."""
    output_bytes: float = 0.0
    """Bytes of the definition's outputs (part of ``bytes`` unless it is overridden)."""
    method: CountMethod
    """How the FLOPs were obtained: meta (traced on meta tensors), device (traced on real inputs),
    override (every FLOP field came from the definition; the reference was not run)."""
    overridden: list[str] = Field(default_factory=list)
    """Fields taken from the definition: tensor_core_flops, tensor_core_dtype, other_flops, bytes."""
    flops_by_op: dict[str, float] = Field(default_factory=dict)
    """Derived FLOPs per aten operator (tensor-core and other together), largest first."""
    uncounted_ops: list[str] = Field(default_factory=list)
    """Operators the reference ran that have no cost rule (charged 0)."""
    notes: list[str] = Field(default_factory=list)
    """Why the device path was needed, and other caveats."""

    @property
    def total_tensor_core_flops(self) -> float:
        return float(sum(self.tensor_core_flops.values()))

    @property
    def total_flops(self) -> float:
        return self.total_tensor_core_flops + self.other_flops


# -- the entry points ---------------------------------------------------------------------------------


def _tensor_bytes(definition: Definition, specs: Mapping[str, TensorSpec], sizes: Mapping[str, int]) -> float:
    total = 0
    for spec in specs.values():
        shape = definition.shape_of(spec, dict(sizes))
        if shape is None:
            continue  # a Python scalar travels as a kernel argument
        total += math.prod(shape) * spec.dtype.bits // 8
    return float(total)


def _evaluate(source: str | float, names: Mapping[str, Any], what: str, definition: Definition) -> float:
    if isinstance(source, int | float):
        return float(source)
    try:
        return float(expr.evaluate(source, names))
    except SolforgeError as exc:
        raise CountingError(f"{definition.name}: the {what} override {source!r} does not evaluate: {exc}") from exc


def _widest_float_input(definition: Definition) -> str:
    floats = [s.dtype for s in definition.inputs.values() if s.shape is not None and s.dtype.is_float]
    if not floats:
        return DType.float32.value
    return max(floats, key=lambda d: d.bits).value


def _resolve_sizes(definition: Definition, sizes: Mapping[str, int]) -> dict[str, int]:
    if all(name in sizes for name in definition.axes):
        return {n: int(v) for n, v in sizes.items()}
    return definition.resolve_axes(dict(sizes))


def meta_inputs(problem: Problem, workload: Workload) -> dict[str, Any] | None:
    """The workload's inputs as a judge generates them, on the meta device: no data, but the layouts that
    key the count caches, so that a count made outside a judge (get_sol_score in the server, the shipped
    table) finds what a judge counted, and the reverse. None when they cannot be generated there."""
    from solforge.problems.inputs import generate_inputs

    sizes = problem.definition.resolve_axes(workload.axes)
    try:
        return generate_inputs(problem.definition, workload, sizes, device="meta", seed_or_generator=0,
                               problem_folder=problem.folder)
    except Exception:  # a custom input generator that needs data: count as if no inputs were given
        return None


def shipped_count_record(problem: Problem, workload: Workload) -> dict[str, Any] | None:
    """One line of :data:`SHIPPED_COUNTS`: the meta count of ``workload``, keyed as a judge keys it (inputs
    generated on the meta device have the layouts the judge's have). None when the reference does not
    run on meta tensors (a judge then counts on real inputs, which are never kept)."""
    definition = problem.definition
    sizes = definition.resolve_axes(workload.axes)
    inputs = meta_inputs(problem, workload)
    if inputs is None:
        return None
    scalars = scalar_values(definition, inputs, workload)
    key = meta_cache_key(definition, sizes, inputs, scalars)
    try:
        tally = run_counted(reference_module(definition).run, meta_args(definition, sizes, inputs, scalars), to_meta=True)
    except Exception:
        return None
    return {"key": key, "problem": problem.name, "workload": workload.uuid, "tally": tally_to_json(tally)}


def _trace(definition: Definition, sizes: dict[str, int], inputs: Mapping[str, Any] | None,
           scalars: dict[str, Any], workload: Workload | None, folder: Path | None,
           input_bytes: float, store: Path | None = None) -> tuple[Tally, CountMethod, list[str]]:
    key = meta_cache_key(definition, sizes, inputs, scalars)
    cached = cached_tally(store, key)
    if cached is not None:
        return cached, "meta", []
    module = reference_module(definition)
    try:
        tally = run_counted(module.run, meta_args(definition, sizes, inputs, scalars), to_meta=True)
    except Exception as meta_exc:  # any failure on meta tensors sends us to the device path
        first_line = (str(meta_exc).splitlines() or [""])[0]
        meta_error = f"{type(meta_exc).__name__}: {first_line[:200]}"
    else:
        keep_tally(store, key, tally)
        return tally, "meta", []
    try:
        args, device = real_args(definition, sizes, inputs, scalars, workload, folder, input_bytes)
        tally = run_counted(module.run, args, to_meta=False)
    except CountingError:
        raise
    except Exception as exc:
        raise CountingError(
            f"{definition.name}: the reference could not be counted. On meta tensors: {meta_error}. "
            f"On real inputs: {type(exc).__name__}: {exc}. Fix the reference or add a `flops` override."
        ) from exc
    return tally, "device", [f"meta tensors failed ({meta_error}); counted on real inputs on {device}"]


def count_workload(
    definition: Definition,
    sizes: Mapping[str, int],
    inputs: Mapping[str, Any] | None = None,
    *,
    workload: Workload | None = None,
    folder: Path | None = None,
    cache_dir: Path | None = None,
) -> SolCounts:
    """Count the FLOPs and bytes of one workload.

    Parameters
    ----------
    definition
        The problem.
    sizes
        Axis sizes: all of them (as ``Definition.resolve_axes`` returns), or just the var axes.
    inputs
        Optional values by input name: tensors (any device; on the meta path only their shapes,
        strides and dtypes are used, on the device path they are the inputs) and Python scalars.
        Inputs left out are built from the definition.
    workload
        Optional: its scalar values stand in for scalars missing from ``inputs``, and its
        safetensors inputs are loaded if the device path needs real data.
    folder
        The problem folder, for relative safetensors paths.
    cache_dir
        Optional folder where counts made on meta tensors are kept, one small file per key (the
        reference, the sizes, the inputs' layouts, the torch version and :data:`COUNTING_VERSION`):
        a fresh process then skips the first trace, which costs a second or more (it imports
        torch._dynamo). Counts made on real inputs are never kept.

    Returns
    -------
    SolCounts
        FLOPs by kind, bytes, and how they were obtained.

    Raises
    ------
    CountingError
        If the reference runs neither on meta tensors nor on real inputs and the definition has
        no override for what is missing, or an override expression does not evaluate.
    ValueError
        If ``sizes`` lacks a var axis, or a constraint fails.
    """
    sizes = _resolve_sizes(definition, sizes)
    scalars = scalar_values(definition, inputs, workload)
    input_bytes = _tensor_bytes(definition, definition.inputs, sizes)
    output_bytes = _tensor_bytes(definition, definition.outputs, sizes)
    names: dict[str, Any] = {n: v for n, v in scalars.items() if isinstance(v, int | float)}
    names.update(sizes)
    overridden: list[str] = []
    override = definition.flops
    tc_override = override.tensor_core_flops if override is not None else None
    other_override = override.other_flops if override is not None else None
    dtype_override = override.tensor_core_dtype if override is not None else None

    tally: Tally | None = None
    method: CountMethod = "override"
    notes: list[str] = []
    if tc_override is None or other_override is None:
        tally, method, notes = _trace(definition, sizes, inputs, scalars, workload, folder, input_bytes,
                                      Path(cache_dir) if cache_dir is not None else None)

    if tc_override is not None:
        key = (dtype_override.value if dtype_override is not None else _widest_float_input(definition))
        tensor = {key: _evaluate(tc_override, names, "flops.tensor_core_flops", definition)}
        overridden.append("tensor_core_flops")
        if dtype_override is not None:
            overridden.append("tensor_core_dtype")
    else:
        assert tally is not None
        tensor = {k: float(v) for k, v in tally.tensor.items() if v}
        if dtype_override is not None and tensor:
            tensor = {dtype_override.value: float(sum(tensor.values()))}
            overridden.append("tensor_core_dtype")
    if other_override is not None:
        other = _evaluate(other_override, names, "flops.other_flops", definition)
        overridden.append("other_flops")
    else:
        assert tally is not None
        other = float(tally.other)
    if definition.bytes is not None:
        total_bytes = _evaluate(definition.bytes, names, "bytes", definition)
        overridden.append("bytes")
    else:
        total_bytes = input_bytes + output_bytes

    by_op: dict[str, float] = {}
    uncounted: list[str] = []
    if tally is not None:
        by_op = {k: float(v) for k, v in sorted(tally.by_op.items(), key=lambda kv: -kv[1]) if v}
        uncounted = sorted(tally.uncounted)
        if uncounted:
            notes = [*notes, f"no cost rule for {', '.join(uncounted)} (charged 0)"]
    return SolCounts(
        tensor_core_flops=tensor,
        other_flops=other,
        bytes=total_bytes,
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        method=method,
        overridden=overridden,
        flops_by_op=by_op,
        uncounted_ops=uncounted,
        notes=notes,
    )


def _problem_digest(problem: Problem) -> str:
    import torch

    payload = {
        "v": COUNTING_VERSION,
        "torch": torch.__version__.split("+")[0],  # decompositions, hence counts, follow torch
        "definition": problem.definition.to_json_dict(),
        "workloads": [w.to_json_dict() for w in problem.workloads],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def counts_for_problem(problem: Problem, *, cache_dir: Path | None = None) -> dict[str, SolCounts]:
    """Counts for every workload of a problem, keyed by workload uuid.

    Parameters
    ----------
    problem
        The problem (definition and workloads).
    cache_dir
        When given, the counts are read from and written to
        ``<cache_dir>/sol_counts/<problem name>-<digest>.json``; the digest covers the definition,
        the workloads, the torch version and :data:`COUNTING_VERSION`, so any change recounts.
        Counts are hardware-independent, so one file serves every GPU.

    Returns
    -------
    dict[str, SolCounts]
        One entry per workload.

    Raises
    ------
    CountingError
        As :func:`count_workload`, for the first workload that cannot be counted.
    """
    path: Path | None = None
    if cache_dir is not None:
        path = Path(cache_dir) / "sol_counts" / f"{problem.name}-{_problem_digest(problem)}.json"
        if path.is_file():
            with contextlib.suppress(ValueError, OSError):
                return load_counts(path)
    result = counts_for_workloads(problem, [w.uuid for w in problem.workloads], cache_dir=cache_dir)
    if path is not None:
        save_counts(path, result)
    return result


def counts_for_workloads(problem: Problem, uuids: Sequence[str], *, cache_dir: Path | None = None) -> dict[str, SolCounts]:
    """Counts for some of a problem's workloads, keyed by uuid, each found where a judge would find it: in
    this process, in ``<cache_dir>/sol_counts/meta`` (which judges on the same host fill), or in the
    shipped table; traced only when none has it.

    Raises
    ------
    KeyError
        For a uuid that is not one of the problem's workloads.
    CountingError
        As :func:`count_workload`.
    """
    by_uuid = {w.uuid: w for w in problem.workloads}
    store = Path(cache_dir) / "sol_counts" / "meta" if cache_dir is not None else None
    result: dict[str, SolCounts] = {}
    for uuid in uuids:
        w = by_uuid[uuid]
        result[uuid] = count_workload(problem.definition, w.axes, meta_inputs(problem, w), workload=w,
                                      folder=problem.folder, cache_dir=store)
    return result


def save_counts(path: Path, counts: Mapping[str, SolCounts]) -> None:
    """Write counts keyed by workload uuid as one JSON object (atomically)."""
    data = {uuid: c.model_dump(mode="json") for uuid, c in counts.items()}
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def load_counts(path: Path) -> dict[str, SolCounts]:
    """Read counts written by :func:`save_counts`.

    Raises
    ------
    ValueError
        If the file is not a JSON object of valid counts.
    """
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of workload uuid -> counts")
    return {uuid: SolCounts.model_validate(c) for uuid, c in data.items()}
