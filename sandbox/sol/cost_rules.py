"""The tally a traced reference is charged into, and the cost rules that charge each aten operator.

The rules are documented in :mod:`solforge.sandbox.sol.counting`. torch is imported lazily, inside
functions.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from solforge.problems.dtypes import DType

if TYPE_CHECKING:
    import torch

COUNTING_VERSION = 1
"""Bumped whenever a cost rule changes, so cached counts are recomputed."""

# -- cost tables ------------------------------------------------------------------------------------

POINTWISE_COST: dict[str, float] = {
    # Transcendentals: one SFU (MUFU) instruction plus one FMA-pipe instruction for range reduction
    # or scaling. The SFU's own throughput is not charged: it runs beside the FMA pipe (see counting.py).
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


# -- the tally the modes write into -------------------------------------------------------------------


@dataclass
class Tally:
    """The FLOPs charged so far; nothing is charged while ``suppress`` is above 0 (inside an operator
    counted whole, such as attention)."""

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


def count_sdpa(tally: Tally, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Charge attention before it decomposes: its two matrix products and its softmax."""
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


def count_op(tally: Tally, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any) -> None:
    """Charge one aten operator by the cost rules; one without a rule is added to ``tally.uncounted``."""
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

