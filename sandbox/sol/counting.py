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

torch is imported lazily, inside functions: ``solforge.problems`` must import without it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from solforge.problems import expr
from solforge.problems.definition import Definition, TensorSpec
from solforge.problems.dtypes import DType
from solforge.problems.errors import SolforgeError
from solforge.problems.workload import SafetensorsInput, ScalarInput, Workload

if TYPE_CHECKING:
    import types

    import torch

    from solforge.problems.load import Problem

COUNTING_VERSION = 1
"""Bumped whenever a cost rule changes, so cached counts are recomputed."""

CountMethod = Literal["meta", "device", "override"]

# -- cost tables ------------------------------------------------------------------------------------

POINTWISE_COST: dict[str, float] = {
    # Transcendentals: one SFU (MUFU) instruction plus one FMA-pipe instruction for range reduction
    # or scaling. The SFU's own throughput is not charged: it runs beside the FMA pipe (see above).
    "exp": 2, "exp2": 2, "log": 2, "log2": 2, "sin": 2, "cos": 2, "tanh": 2, "erf": 2,
    "sqrt": 2, "rsqrt": 2, "reciprocal": 2,
    "expm1": 3, "log1p": 3, "log10": 3, "erfc": 3, "tan": 3, "erfinv": 6,
    "asin": 4, "acos": 4, "atan": 4, "atan2": 5, "sinh": 4, "cosh": 4, "asinh": 4, "acosh": 4, "atanh": 4,
    "logit": 4, "special_i0": 8, "digamma": 8, "lgamma": 8,
    # Activations, written as their usual definitions in the costs above.
    "sigmoid": 3,  # 0.5 * tanh(0.5 x) + 0.5
    "silu": 4,  # x * sigmoid(x)
    "gelu": 6,  # 0.5 * x * (1 + erf(x / sqrt 2)); the tanh form costs about the same
    "softplus": 4,  # log1p(exp(x))
    "mish": 7,  # x * tanh(softplus(x))
    "elu": 3, "celu": 3, "selu": 4,
    "hardswish": 4, "hardsigmoid": 3, "hardtanh": 2, "leaky_relu": 2, "relu": 1, "relu6": 2,
    "glu": 4,  # per output element: sigmoid + mul
    # Multi-operand arithmetic.
    "addcmul": 2, "addcdiv": 2, "lerp": 2, "remainder": 2, "fmod": 2, "xlogy": 3,
    # Backward pointwise kernels of common activations.
    "sigmoid_backward": 3, "tanh_backward": 3, "silu_backward": 7, "gelu_backward": 10,
    "threshold_backward": 1, "hardswish_backward": 4, "softplus_backward": 5, "elu_backward": 4,
}
"""FLOPs per output element of pointwise aten operators (overload packet name, in-place ``_``
dropped). Operators torch tags ``pointwise`` that are not listed cost 1 (add, sub, mul, div,
neg, abs, clamp, where, comparisons, bitwise ops, ...). ``pow`` is special-cased: exponent 1, 2
or -1 costs 1, 0.5 or -0.5 costs 2, others 4 (log, multiply, exp)."""

REDUCTION_COST: dict[str, float] = {
    "sum": 1, "nansum": 1, "mean": 1, "nanmean": 1, "prod": 1, "amax": 1, "amin": 1, "aminmax": 1,
    "max": 1, "min": 1, "argmax": 1, "argmin": 1, "any": 1, "all": 1, "count_nonzero": 1,
    "var": 3, "std": 3, "var_mean": 3, "std_mean": 3,  # subtract the mean, square, accumulate
    "norm": 2, "linalg_vector_norm": 2, "frobenius_norm": 2,  # square (or abs), accumulate
    "logsumexp": 5,  # max, subtract, exp, accumulate
    "cumsum": 1, "cumprod": 1, "logcumsumexp": 5,
    "bincount": 1, "histc": 1,
}
"""FLOPs per *input* element of reductions and scans. Operators torch tags ``reduction`` that are
not listed cost 1."""

SOFTMAX_COST = 6.0
"""FLOPs per element of a softmax: max 1, subtract 1, exp 2, sum 1, divide 1."""

FUSED_COST: dict[str, float] = {
    "_softmax": SOFTMAX_COST, "_safe_softmax": SOFTMAX_COST, "_log_softmax": SOFTMAX_COST,
    "_softmax_backward_data": 4, "_log_softmax_backward_data": 5,
    # mean 1 + variance 3 + normalise 2 + affine 2
    "native_layer_norm": 8, "native_group_norm": 8, "native_batch_norm": 8,
    "_native_batch_norm_legit": 8, "_native_batch_norm_legit_functional": 8,
    "_native_batch_norm_legit_no_training": 4,  # running statistics: normalise 2 + affine 2
    "_fused_rms_norm": 4,  # square 1 + accumulate 1 + scale 1 + weight 1
    "native_layer_norm_backward": 12, "native_group_norm_backward": 12, "native_batch_norm_backward": 12,
    "_fused_rms_norm_backward": 8,
}
"""FLOPs per input element of fused normalisation and softmax kernels."""

FREE_OPS: frozenset[str] = frozenset(
    {
        # copies, casts and layout
        "_to_copy", "copy", "clone", "contiguous", "_copy_from", "_copy_from_and_resize", "lift_fresh",
        "lift_fresh_copy", "detach", "alias", "resize", "set", "_reshape_alias", "_unsafe_view", "as_strided",
        "as_strided_scatter", "view_copy", "permute_copy", "transpose_copy", "t_copy", "expand_copy",
        "unsqueeze_copy", "squeeze_copy", "slice_copy", "select_copy", "_pin_memory", "record_stream",
        # factories and fills
        "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "zeros",
        "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
        "scalar_tensor", "arange", "linspace", "logspace", "eye", "fill", "zero", "tensor", "_local_scalar_dense",
        # random numbers: a reference should not need them, and they are not the operation's work
        "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
        "normal", "uniform", "exponential", "multinomial", "native_dropout",
        # gathering, scattering without arithmetic, concatenation, masking by position
        "cat", "stack", "split", "split_with_sizes", "chunk", "unbind", "index", "index_select", "gather",
        "scatter", "embedding", "masked_select", "nonzero", "nonzero_static", "take", "take_along_dim",
        "slice_scatter", "select_scatter", "diagonal_scatter", "index_copy", "index_fill", "masked_scatter",
        "flip", "roll", "repeat", "repeat_interleave", "tril", "triu", "tril_indices", "triu_indices",
        "constant_pad_nd", "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
        "pad", "unfold", "im2col", "col2im", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
        "sort_stable_indices", "unique_consecutive", "_assert_async", "_assert_scalar",
        "_assert_tensor_metadata", "sym_constrain_range", "sym_constrain_range_for_size", "_functional_assert_async",
        "view_as_real", "view_as_complex", "_conj", "_neg_view", "resolve_conj", "resolve_neg",
    }
)
"""aten operators that move or create data without arithmetic: charged nothing (their traffic is
already in the fused byte count of the definition's inputs and outputs)."""

_DEVICE_FALLBACK_MAX_BYTES = 16 * 2**30
"""Largest input set (bytes) the device fallback will generate on the CPU: beyond it, running the
reference for real to count it would be slower than writing a ``flops`` override."""


class CountingError(SolforgeError):
    """The FLOPs of a workload could not be derived from its reference; add a ``flops`` override."""


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


# -- the tally the modes write into -------------------------------------------------------------------


@dataclass
class _Tally:
    tensor: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    other: float = 0.0
    by_op: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    uncounted: set[str] = field(default_factory=set)
    suppress: int = 0

    def add_tensor(self, op: str, dtype_name: str, flops: float) -> None:
        self.tensor[dtype_name] += flops
        self.by_op[op] += flops

    def add_other(self, op: str, flops: float) -> None:
        self.other += flops
        self.by_op[op] += flops

    @contextlib.contextmanager
    def suppressed(self) -> Iterator[None]:
        self.suppress += 1
        try:
            yield
        finally:
            self.suppress -= 1


def _dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    try:
        return DType(name).value
    except ValueError:
        return name


def _packet_name(func: Any) -> str:
    """``aten.add_.Tensor`` -> ``add``; ``aten._softmax.default`` -> ``_softmax``."""
    name: str = func.overloadpacket.__name__
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    return name


def _first_tensor(value: Any) -> torch.Tensor | None:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, list | tuple):
        for v in value:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _fp4_factor(t: torch.Tensor) -> int:
    """Logical elements per stored element along the packed (reduction) dimension."""
    return 2 if _dtype_name(t.dtype) == DType.float4_e2m1fn_x2.value else 1


def _causal_pairs(q_len: int, k_len: int) -> int:
    """(query, key) pairs torch's ``is_causal`` keeps: the top-left aligned lower triangle."""
    if q_len <= k_len:
        return q_len * (q_len + 1) // 2
    return k_len * (k_len + 1) // 2 + (q_len - k_len) * k_len


_SDPA_PARAMS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _count_sdpa(tally: _Tally, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    bound: dict[str, Any] = dict(zip(_SDPA_PARAMS, args, strict=False))
    bound.update(kwargs)
    q, k, v = bound["query"], bound["key"], bound["value"]
    batch = math.prod(q.shape[:-2])
    q_len, head_dim = int(q.shape[-2]), int(q.shape[-1])
    k_len, v_dim = int(k.shape[-2]), int(v.shape[-1])
    pairs = _causal_pairs(q_len, k_len) if bound.get("is_causal") else q_len * k_len
    op = "scaled_dot_product_attention"
    tally.add_tensor(op, _dtype_name(q.dtype), 2.0 * batch * pairs * (head_dim + v_dim))
    per_pair = SOFTMAX_COST + 1.0 + (1.0 if bound.get("attn_mask") is not None else 0.0)  # + scale (+ mask)
    tally.add_other(op, float(batch * pairs) * per_pair)


def _matmul_flops(name: str, args: Sequence[Any], out: Any) -> tuple[float, Any] | None:
    """FLOPs and the operand tensor for matrix products torch's flop counter does not cover."""
    if name in ("mv", "dot", "vdot"):
        return 2.0 * args[0].numel(), args[0]  # mv: 2*M*N; dot: 2*N
    if name == "addmv":
        return 2.0 * args[1].numel(), args[1]
    if name == "_int_mm":
        a, b = args[0], args[1]
        return 2.0 * a.shape[0] * a.shape[1] * b.shape[1], a
    if name in ("_grouped_mm", "_scaled_grouped_mm"):
        a, b = args[0], args[1]
        f = _fp4_factor(a)
        if a.dim() == 2 and b.dim() == 3:  # ragged rows: each row of a meets one group's K x N
            return 2.0 * a.shape[0] * a.shape[1] * f * b.shape[2], a
        if a.dim() == 3 and b.dim() == 3:
            return 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * f * b.shape[2], a
        if a.dim() == 3 and b.dim() == 2:  # ragged columns of b
            return 2.0 * a.shape[1] * a.shape[2] * f * b.shape[1], a
        return 2.0 * a.shape[0] * a.shape[1] * f * b.shape[1], a  # ragged K: out is [G, M, N]
    return None


_EXTRA_MATMULS = frozenset({"mv", "addmv", "dot", "vdot", "_int_mm", "_grouped_mm", "_scaled_grouped_mm"})
# Index of the left operand (whose dtype keys the FLOPs) for the registry's ops; 0 when absent.
_OPERAND_INDEX = {"addmm": 1, "baddbmm": 1, "addbmm": 1}


def _count_op(tally: _Tally, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any) -> None:
    import torch
    from torch.utils.flop_counter import flop_registry

    packet = getattr(func, "overloadpacket", None)
    if packet is None:  # a higher-order operator: its body's operators arrive on their own
        return
    name = _packet_name(func)
    if packet in flop_registry:
        flops = float(flop_registry[packet](*args, **kwargs, out_val=out))
        operand = _first_tensor(args[_OPERAND_INDEX.get(name, 0) :])
        if operand is None:
            return
        if name.startswith("_scaled_mm"):
            flops *= _fp4_factor(operand)
        tally.add_tensor(name, _dtype_name(operand.dtype), flops)
        return
    if name in _EXTRA_MATMULS:
        result = _matmul_flops(name, args, out)
        if result is not None:
            flops, operand = result
            tally.add_tensor(name, _dtype_name(operand.dtype), flops)
        return
    if func.is_view or name in FREE_OPS:
        return
    first_in = _first_tensor(args)
    first_out = _first_tensor(out)
    if name in FUSED_COST:
        if first_in is not None:
            tally.add_other(name, FUSED_COST[name] * first_in.numel())
        return
    if name == "pow":
        exponent = args[1] if len(args) > 1 else kwargs.get("exponent")
        cost = 4.0
        if isinstance(exponent, int | float):
            cost = 1.0 if exponent in (2, -1, 1) else 2.0 if exponent in (0.5, -0.5) else 4.0
        elif exponent is not None:  # a tensor exponent: log, multiply, exp
            cost = 5.0
        if first_out is not None:
            tally.add_other(name, cost * first_out.numel())
        return
    if name in POINTWISE_COST:
        if first_out is not None:
            tally.add_other(name, POINTWISE_COST[name] * first_out.numel())
        return
    if name in REDUCTION_COST:
        if first_in is not None:
            tally.add_other(name, REDUCTION_COST[name] * first_in.numel())
        return
    if name in ("sort", "argsort", "msort"):
        if first_in is not None and first_in.numel():
            dim = args[1] if len(args) > 1 and isinstance(args[1], int) else kwargs.get("dim", -1)
            length = first_in.shape[dim] if first_in.dim() else 1
            tally.add_other(name, first_in.numel() * max(1.0, math.log2(max(length, 2))))
        return
    if name == "topk":
        if first_in is not None:
            k = args[1] if len(args) > 1 else kwargs.get("k", 1)
            tally.add_other(name, first_in.numel() * (1.0 + math.log2(max(int(k), 1))))
        return
    if name in ("scatter_add", "scatter_reduce", "index_add", "index_reduce", "_index_put_impl", "index_put"):
        if name in ("_index_put_impl", "index_put"):
            accumulate = bool(args[3] if len(args) > 3 else kwargs.get("accumulate", False))
            source = args[2] if len(args) > 2 else kwargs.get("values")
            if not accumulate:
                return
        else:
            source = args[3] if len(args) > 3 else kwargs.get("src", kwargs.get("source"))
        if isinstance(source, torch.Tensor):
            tally.add_other(name, float(source.numel()))
        return
    tags = getattr(func, "tags", ())
    if torch.Tag.pointwise in tags:
        if first_out is not None:
            tally.add_other(name, float(first_out.numel()))
        return
    if torch.Tag.reduction in tags:
        if first_in is not None:
            tally.add_other(name, float(first_in.numel()))
        return
    tally.uncounted.add(str(packet))


# -- the modes ------------------------------------------------------------------------------------------

_MODES: tuple[type, type] | None = None
_MODES_LOCK = threading.Lock()


def _mode_classes() -> tuple[type, type]:
    """Build (once) the function and dispatch mode classes; torch is imported only here."""
    global _MODES
    with _MODES_LOCK:
        if _MODES is not None:
            return _MODES
        import torch
        import torch.nn.functional as F
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        sdpa = F.scaled_dot_product_attention

        def is_device(value: Any) -> bool:
            if isinstance(value, torch.device):
                return True
            if isinstance(value, str):
                try:
                    torch.device(value)
                except (RuntimeError, ValueError):
                    return False
                return True
            return isinstance(value, int) and not isinstance(value, bool)

        class CountingFunctionMode(TorchFunctionMode):
            """Counts attention before it decomposes and, on meta, keeps every tensor on meta."""

            def __init__(self, tally: _Tally, to_meta: bool) -> None:
                super().__init__()
                self.tally = tally
                self.to_meta = to_meta

            def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
                kwargs = dict(kwargs or {})
                if self.to_meta:
                    fname = getattr(func, "__name__", "")
                    if fname in ("cuda", "cpu", "pin_memory") and args and isinstance(args[0], torch.Tensor):
                        return args[0].to("meta")
                    if kwargs.get("device") is not None:
                        kwargs["device"] = "meta"
                    if "pin_memory" in kwargs:
                        kwargs["pin_memory"] = False
                    if fname == "to" and args:
                        args = (args[0], *("meta" if is_device(a) else a for a in args[1:]))
                if func is sdpa and self.tally.suppress == 0:
                    _count_sdpa(self.tally, args, kwargs)
                    with self.tally.suppressed():
                        return func(*args, **kwargs)
                return func(*args, **kwargs)

        class CountingDispatchMode(TorchDispatchMode):
            """Charges every aten operator the reference executes."""

            def __init__(self, tally: _Tally) -> None:
                super().__init__()
                self.tally = tally

            def __torch_dispatch__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if self.tally.suppress == 0:
                    _count_op(self.tally, func, args, kwargs, out)
                return out

        _MODES = (CountingFunctionMode, CountingDispatchMode)
        return _MODES


def _run_counted(fn: Any, args: Sequence[Any], *, to_meta: bool) -> _Tally:
    import torch

    function_mode_cls, dispatch_mode_cls = _mode_classes()
    tally = _Tally()
    device_ctx = torch.device("meta") if to_meta else contextlib.nullcontext()
    with device_ctx, function_mode_cls(tally, to_meta), dispatch_mode_cls(tally):
        fn(*args)
    return tally


# -- inputs ---------------------------------------------------------------------------------------------

_REFERENCE_CACHE: dict[str, types.ModuleType] = {}
_REFERENCE_LOCK = threading.Lock()


def _reference(definition: Definition) -> types.ModuleType:
    from solforge.problems.reference import load_reference_module

    key = hashlib.sha256(definition.reference.encode()).hexdigest()
    with _REFERENCE_LOCK:
        module = _REFERENCE_CACHE.get(key)
        if module is None:
            module = load_reference_module(definition)
            _REFERENCE_CACHE[key] = module
        return module


def _default_scalar(spec: TensorSpec) -> int | float | bool:
    """A stand-in for a Python-scalar input the caller did not give (meta counting only)."""
    if spec.dtype is DType.bool:
        return False
    return 1.0 if spec.dtype.is_float else 1


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")  # if torch was never imported, nothing here can be a tensor
    return torch is not None and isinstance(value, torch.Tensor)


def _scalar_values(definition: Definition, inputs: Mapping[str, Any] | None, workload: Workload | None) -> dict[str, Any]:
    scalars: dict[str, Any] = {}
    for name, spec in definition.inputs.items():
        if spec.shape is not None:
            continue
        if inputs is not None and name in inputs and not _is_tensor(inputs[name]):
            scalars[name] = inputs[name]
        elif workload is not None and isinstance(workload.inputs.get(name), ScalarInput):
            scalars[name] = workload.inputs[name].value  # type: ignore[union-attr]
    return scalars


def _meta_args(definition: Definition, sizes: Mapping[str, int], inputs: Mapping[str, Any] | None,
               scalars: Mapping[str, Any]) -> list[Any]:
    import torch

    args: list[Any] = []
    for name, spec in definition.inputs.items():
        given = inputs.get(name) if inputs is not None else None
        if given is not None and isinstance(given, torch.Tensor):
            args.append(torch.empty_strided(tuple(given.shape), tuple(given.stride()), dtype=given.dtype, device="meta"))
        elif spec.shape is None:
            args.append(scalars.get(name, _default_scalar(spec)))
        else:
            shape = definition.shape_of(spec, dict(sizes))
            args.append(torch.empty(shape or (), dtype=spec.dtype.to_torch(), device="meta"))
    return args


def _random_tensor(spec: TensorSpec, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """Inputs for the counting fallback only: values valid as indices, not a faithful distribution."""
    import torch

    dtype = spec.dtype.to_torch()
    if spec.dtype is DType.float4_e2m1fn_x2 or spec.dtype is DType.float4_e2m1:
        raw = torch.randint(0, 256, shape, dtype=torch.uint8, device=device)
        return raw.view(dtype) if dtype != torch.uint8 else raw
    if spec.dtype.is_float:
        return torch.randn(shape, device=device).clamp_(-2, 2).to(dtype)
    if spec.dtype is DType.bool:
        return torch.randint(0, 2, shape, device=device).bool()
    return torch.randint(0, 2, shape, dtype=dtype, device=device)


def _real_args(definition: Definition, sizes: Mapping[str, int], inputs: Mapping[str, Any] | None,
               scalars: Mapping[str, Any], workload: Workload | None, folder: Path | None,
               input_bytes: float) -> tuple[list[Any], str]:
    import torch

    # Tensors on the meta device only describe layouts (see meta_inputs): real ones are made here.
    given = {n: v for n, v in (inputs or {}).items() if _is_tensor(v) and v.device.type != "meta"}
    device: torch.device
    if given:
        device = next(iter(given.values())).device
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    missing = [n for n, s in definition.inputs.items() if s.shape is not None and n not in given]
    if missing and device.type == "cpu" and input_bytes > _DEVICE_FALLBACK_MAX_BYTES:
        raise CountingError(
            f"{definition.name}: the reference needs real inputs to be counted, and this workload's "
            f"{input_bytes / 2**30:.1f} GiB of inputs are too many to generate on the CPU; "
            "add a `flops` override to the definition"
        )
    made: dict[str, Any] = {}
    if missing and definition.custom_inputs_entrypoint:
        entry = getattr(_reference(definition), definition.custom_inputs_entrypoint)
        produced = entry({**sizes, **scalars}, device)
        made.update({n: produced[n] for n in missing if n in produced})
    for name in missing:
        if name in made:
            continue
        descriptor = workload.inputs.get(name) if workload is not None else None
        if isinstance(descriptor, SafetensorsInput):
            from safetensors.torch import load_file

            path = Path(descriptor.path)
            if not path.is_absolute() and folder is not None:
                path = folder / path
            made[name] = load_file(str(path), device=str(device))[descriptor.tensor_key]
            continue
        spec = definition.inputs[name]
        made[name] = _random_tensor(spec, definition.shape_of(spec, dict(sizes)) or (), device)
    args: list[Any] = []
    for name, spec in definition.inputs.items():
        if name in given:
            args.append(given[name])
        elif spec.shape is None:
            args.append(scalars.get(name, _default_scalar(spec)))
        else:
            args.append(made[name])
    return args, str(device)


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


def _meta_cache_key(definition: Definition, sizes: Mapping[str, int], inputs: Mapping[str, Any] | None,
                    scalars: Mapping[str, Any]) -> str:
    described: dict[str, Any] = {}
    for name, value in (inputs or {}).items():
        if _is_tensor(value):
            described[name] = [list(value.shape), list(value.stride()), str(value.dtype)]
    import torch

    payload = {
        "v": COUNTING_VERSION,
        "torch": torch.__version__.split("+")[0],  # decompositions, hence counts, follow torch
        "ref": definition.reference,
        "inputs": {n: s.model_dump(mode="json") for n, s in definition.inputs.items()},
        "sizes": dict(sorted(sizes.items())),
        "given": described,
        "scalars": {n: repr(v) for n, v in sorted(scalars.items())},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


_META_CACHE: dict[str, _Tally] = {}
_META_CACHE_MAX = 4096


def _tally_from_json(data: Mapping[str, Any]) -> _Tally:
    return _Tally(tensor=defaultdict(float, {str(k): float(v) for k, v in data["tensor"].items()}),
                  other=float(data["other"]),
                  by_op=defaultdict(float, {str(k): float(v) for k, v in data["by_op"].items()}),
                  uncounted={str(u) for u in data["uncounted"]})


def _tally_to_json(tally: _Tally) -> dict[str, Any]:
    return {"tensor": dict(tally.tensor), "other": tally.other, "by_op": dict(tally.by_op),
            "uncounted": sorted(tally.uncounted)}


def _stored_tally(folder: Path | None, key: str) -> _Tally | None:
    """A meta count kept on disk by an earlier process (see :func:`count_workload`'s ``cache_dir``)."""
    if folder is None:
        return None
    try:
        return _tally_from_json(json.loads((folder / f"{key}.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _store_tally(folder: Path | None, key: str, tally: _Tally) -> None:
    if folder is None:
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"  # judges on one host share the folder
        tmp.write_text(json.dumps(_tally_to_json(tally), sort_keys=True))
        tmp.replace(folder / f"{key}.json")  # atomic: a reader sees a whole file or none


SHIPPED_COUNTS = "sol_counts.jsonl"
"""The catalogue's meta counts, in the shipped tables' folder (:func:`solforge.problems.tables_dir`): one
:func:`shipped_count_record` per line. A first evaluation of a catalogue problem reads its counts there
instead of tracing the reference (5.5-6.6 s on an H200 host, most of it importing torch._dynamo)."""


@functools.cache
def _shipped_tallies(path: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                found[str(record["key"])] = record["tally"]
    return found


def _shipped_tally(key: str) -> _Tally | None:
    """The shipped count with exactly this key (the same reference, sizes, layouts, torch and counting
    version), or None."""
    from solforge.problems.load import tables_dir

    data = _shipped_tallies(tables_dir() / SHIPPED_COUNTS).get(key)
    try:
        return _tally_from_json(data) if data is not None else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


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
    scalars = _scalar_values(definition, inputs, workload)
    key = _meta_cache_key(definition, sizes, inputs, scalars)
    try:
        tally = _run_counted(_reference(definition).run, _meta_args(definition, sizes, inputs, scalars), to_meta=True)
    except Exception:
        return None
    return {"key": key, "problem": problem.name, "workload": workload.uuid, "tally": _tally_to_json(tally)}


def _trace(definition: Definition, sizes: dict[str, int], inputs: Mapping[str, Any] | None,
           scalars: dict[str, Any], workload: Workload | None, folder: Path | None,
           input_bytes: float, store: Path | None = None) -> tuple[_Tally, CountMethod, list[str]]:
    key = _meta_cache_key(definition, sizes, inputs, scalars)
    cached = _META_CACHE.get(key) or _stored_tally(store, key) or _shipped_tally(key)
    if cached is not None:
        _META_CACHE[key] = cached
        return cached, "meta", []
    module = _reference(definition)
    try:
        tally = _run_counted(module.run, _meta_args(definition, sizes, inputs, scalars), to_meta=True)
    except Exception as meta_exc:  # any failure on meta tensors sends us to the device path
        first_line = (str(meta_exc).splitlines() or [""])[0]
        meta_error = f"{type(meta_exc).__name__}: {first_line[:200]}"
    else:
        if len(_META_CACHE) >= _META_CACHE_MAX:
            _META_CACHE.clear()
        _META_CACHE[key] = tally
        _store_tally(store, key, tally)
        return tally, "meta", []
    try:
        args, device = _real_args(definition, sizes, inputs, scalars, workload, folder, input_bytes)
        tally = _run_counted(module.run, args, to_meta=False)
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
    scalars = _scalar_values(definition, inputs, workload)
    input_bytes = _tensor_bytes(definition, definition.inputs, sizes)
    output_bytes = _tensor_bytes(definition, definition.outputs, sizes)
    names: dict[str, Any] = {n: v for n, v in scalars.items() if isinstance(v, int | float)}
    names.update(sizes)
    overridden: list[str] = []
    override = definition.flops
    tc_override = override.tensor_core_flops if override is not None else None
    other_override = override.other_flops if override is not None else None
    dtype_override = override.tensor_core_dtype if override is not None else None

    tally: _Tally | None = None
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
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {uuid: c.model_dump(mode="json") for uuid, c in counts.items()}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


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
