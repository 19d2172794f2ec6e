"""The values of random inputs: the default rule of each dtype, and the name heuristics that keep
random inputs well posed (the rules are listed in :mod:`solforge.problems.inputs`).

Only worker processes import this module (it imports torch).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import torch

from .definition import Definition, TensorSpec
from .dtypes import DType
from .errors import FormatError

_INT_RANGES: dict[DType, tuple[int, int]] = {
    DType.int8: (-128, 128),
    DType.uint8: (0, 256),
    DType.int16: (-1024, 1024),
    DType.int32: (-1024, 1024),
    DType.int64: (-1024, 1024),
}
_FP8 = (DType.float8_e4m3fn, DType.float8_e5m2)
# Rounding boundaries between the magnitudes of e2m1 codes 0..7 (0, 0.5, 1, 1.5, 2, 3, 4, 6).
_E2M1_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
_RANGE_HINT = re.compile(r"\[\s*(-?\d+)\s*,\s*([A-Za-z_]\w*|\d+)\s*([)\]])")
_DEFAULT_BOUND = 1024


class _Context:
    """What a random rule may look at."""

    __slots__ = ("definition", "gen", "name", "shared", "sizes", "spec", "tokens")

    def __init__(
        self,
        *,
        definition: Definition,
        name: str,
        spec: TensorSpec,
        sizes: Mapping[str, int],
        gen: torch.Generator,
        shared: dict[str, Any],
    ) -> None:
        self.definition = definition
        self.shared = shared
        self.name = name
        self.spec = spec
        self.sizes = sizes
        self.gen = gen
        self.tokens = name_tokens(name)

    @property
    def device(self) -> torch.device:
        return self.gen.device

    @property
    def is_norm_definition(self) -> bool:
        text = f"{self.definition.name} {self.definition.op_type or ''}".lower()
        return "norm" in text

    @property
    def has_low_precision(self) -> bool:
        specs = list(self.definition.inputs.values()) + list(self.definition.outputs.values())
        return any(s.dtype.is_low_precision for s in specs)


def name_tokens(name: str) -> list[str]:
    """Lowercase word and number tokens of a name: ``"q_proj.Weight2"`` -> q, proj, weight, 2."""
    return re.findall(r"[a-z]+|\d+", name.lower())


def random_value(
    definition: Definition,
    name: str,
    spec: TensorSpec,
    sizes: Mapping[str, int],
    shape: tuple[int, ...] | None,
    *,
    gen: torch.Generator,
    shared: dict[str, Any],
) -> torch.Tensor | int | float | bool:
    """A random value for input ``name``: a Python scalar when ``shape`` is None, else a tensor on ``gen``'s
    device. ``shared`` holds what the inputs of one call must agree on (the rotary tables' positions)."""
    ctx = _Context(definition=definition, name=name, spec=spec, sizes=sizes, gen=gen, shared=shared)
    return _random_scalar(ctx) if shape is None else _random_tensor(ctx, shape)


def _randn(ctx: _Context, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(shape, generator=ctx.gen, device=ctx.device, dtype=dtype)


def _rand(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.rand(shape, generator=ctx.gen, device=ctx.device, dtype=torch.float32)


def _randint(ctx: _Context, low: int, high: int, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=ctx.gen, device=ctx.device, dtype=dtype)


def _random_tensor(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    dtype = ctx.spec.dtype
    if dtype is DType.bool:
        return _random_bool(ctx, shape)
    if not dtype.is_float:
        return _random_int(ctx, shape)
    if dtype is DType.float4_e2m1fn_x2:
        if not shape:
            codes = _randint(ctx, 0, 256, (), torch.uint8)
            return codes.view(dtype.to_torch())
        values = _randn(ctx, (*shape[:-1], 2 * shape[-1]))
        codes = fp4_e2m1_codes(values)
        packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
        return packed.view(dtype.to_torch())
    if dtype is DType.float4_e2m1:
        return fp4_e2m1_codes(_randn(ctx, shape))
    value = _float_heuristic(ctx, shape)
    if value is not None:
        return value.to(dtype.to_torch())
    if dtype in _FP8:
        return _randn(ctx, shape).clamp_(-2.0, 2.0).to(dtype.to_torch())
    return _randn(ctx, shape, dtype.to_torch())


def fp4_e2m1_codes(values: torch.Tensor) -> torch.Tensor:
    """Round float values to the nearest fp4 e2m1 value and return its 4-bit codes as uint8.

    Code bits are sign (8), then the magnitude index 0..7 for 0, 0.5, 1, 1.5, 2, 3, 4, 6.
    """
    bounds = torch.tensor(_E2M1_BOUNDS, device=values.device, dtype=torch.float32)
    magnitude = torch.bucketize(values.abs().float().contiguous(), bounds).to(torch.uint8)
    sign = (values < 0).to(torch.uint8) << 3
    return magnitude | sign


_PROB_TOKENS = {"probs", "prob", "probabilities", "softmax"}
_STAT_TOKENS = {"var", "variance", "rstd", "std", "invstd"}
_SCALE_TOKENS = {"scale", "scales", "sf", "sfa", "sfb"}
_MATRIX_LAST = {"weight", "weights", "proj", "kernel"}
_MATRIX_NAMES = re.compile(r"^w(\d+|q|k|v|o)?$")


def _is_normish(tokens: list[str]) -> bool:
    return any("norm" in t or t in ("ln", "rms") for t in tokens)


def _float_heuristic(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor | None:
    """A float tensor by name, or None for the dtype's default rule (result is fp32)."""
    tokens = ctx.tokens
    low_precision = ctx.spec.dtype in _FP8
    last = tokens[-1] if tokens else ""
    is_scale = bool(set(tokens) & _SCALE_TOKENS) or "scale_inv" in ctx.name.lower()
    if is_scale and (ctx.has_low_precision or low_precision):
        return 0.5 + _rand(ctx, shape)
    if low_precision:
        return None
    if any("mask" in t for t in tokens):
        return _additive_mask(ctx, shape)
    if set(tokens) & _PROB_TOKENS or "attn_weights" in ctx.name.lower():
        if not shape:
            return torch.ones((), device=ctx.device)
        return torch.softmax(_randn(ctx, shape), dim=-1)
    if "cos" in tokens or "sin" in tokens or "cosine" in tokens or "sine" in tokens:
        return _rotary_table(ctx, shape, use_sin="sin" in tokens or "sine" in tokens)
    normish = _is_normish(tokens)
    if (normish and set(tokens) & {"weight", "scale", "w"}) or "gamma" in tokens or (
        ctx.is_norm_definition and tokens in (["weight"], ["gamma"]) and len(shape) == 1
    ):
        return 1.0 + 0.1 * _randn(ctx, shape)
    if (normish and "bias" in tokens) or "beta" in tokens or (
        ctx.is_norm_definition and tokens == ["bias"] and len(shape) == 1
    ):
        return 0.1 * _randn(ctx, shape)
    if set(tokens) & _STAT_TOKENS:
        return 0.5 + _rand(ctx, shape)
    is_matrix = last in _MATRIX_LAST or "proj" in tokens or bool(_MATRIX_NAMES.match(ctx.name.lower()))
    if is_matrix and len(shape) >= 2:
        fan_in = math.prod(shape[1:]) if any("conv" in t for t in tokens) else shape[-1]
        return _randn(ctx, shape) / math.sqrt(max(1, fan_in))
    return None


def _causal_keep(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    """True where a query may attend a key, bottom-right aligned; broadcast over leading dims."""
    q, k = shape[-2], shape[-1]
    rows = torch.arange(q, device=ctx.device)[:, None]
    cols = torch.arange(k, device=ctx.device)[None, :]
    keep = cols <= rows + (k - q)
    return keep.expand(shape).contiguous()


def _prefix_keep(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    n = shape[-1] if shape else 1
    length = int(torch.randint(1, n + 1, (1,), generator=ctx.gen, device=ctx.device).item()) if n > 0 else 0
    keep = torch.arange(n, device=ctx.device) < length
    return keep.reshape(shape) if shape else keep.reshape(())


def _additive_mask(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    keep = _causal_keep(ctx, shape) if len(shape) >= 2 else _prefix_keep(ctx, shape)
    # The target dtype's most negative finite value: -inf would turn fully masked rows into NaN.
    lowest = torch.finfo(ctx.spec.dtype.to_torch()).min
    work = torch.float64 if ctx.spec.dtype is DType.float64 else torch.float32
    return torch.zeros(shape, device=ctx.device, dtype=work).masked_fill(~keep, lowest)


def _rotary_table(ctx: _Context, shape: tuple[int, ...], *, use_sin: bool) -> torch.Tensor:
    if not shape:
        return torch.ones((), device=ctx.device) if not use_sin else torch.zeros((), device=ctx.device)
    dim = shape[-1]
    n_pos = shape[-2] if len(shape) >= 2 else 1
    half = max(1, dim // 2)
    # cos and sin of one call share their positions, drawn by whichever table comes first.
    if "rotary_start" not in ctx.shared:
        ctx.shared["rotary_start"] = int(torch.randint(0, 4096, (1,), generator=ctx.gen, device=ctx.device).item())
    start = ctx.shared["rotary_start"]
    positions = torch.arange(start, start + n_pos, device=ctx.device, dtype=torch.float64)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, half, device=ctx.device, dtype=torch.float64) * 2.0 / dim))
    freqs = positions[:, None] * inv_freq[None, :]
    freqs = torch.cat([freqs, freqs], dim=-1)[:, :dim]
    if freqs.shape[-1] < dim:  # odd head dim: repeat the last frequency
        freqs = torch.cat([freqs, freqs[:, -1:]], dim=-1)
    table = (torch.sin(freqs) if use_sin else torch.cos(freqs)).float()
    if len(shape) == 1:
        return table[0].contiguous()
    return table.expand(shape).contiguous()


def _random_bool(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    if any("mask" in t for t in ctx.tokens):
        return _causal_keep(ctx, shape) if len(shape) >= 2 else _prefix_keep(ctx, shape)
    return _randint(ctx, 0, 2, shape, torch.bool)


_OFFSET_WORDS = ("cu_seqlen", "indptr")
_LENGTH_TOKENS = {"len", "lens", "length", "lengths", "seqlen", "seqlens"}
_INDEX_TOKENS = {
    "idx", "ids", "id", "index", "indices", "indexes", "pos", "position", "positions",
    "slot", "slots", "table", "mapping", "label", "labels", "token", "tokens",
}  # fmt: skip
# (name tokens) -> substrings of an axis name, tried in order.
_INDEX_SUBJECTS: list[tuple[frozenset[str], tuple[str, ...]]] = [
    (frozenset({"expert", "experts", "topk"}), ("expert", "=e", "=num_experts")),
    (frozenset({"token", "tokens", "input", "vocab", "word"}), ("vocab",)),
    (frozenset({"pos", "position", "positions"}), ("max_pos", "max_seq", "seq", "len")),
    (frozenset({"page", "pages", "block", "blocks", "slot", "slots", "table"}), ("page", "block", "slot")),
    (frozenset({"batch", "req", "request", "seq"}), ("batch",)),
    (frozenset({"head", "heads"}), ("head",)),
    (frozenset({"label", "labels", "class", "classes"}), ("class", "label", "vocab")),
]


def _range_hint(ctx: _Context) -> tuple[int, int] | None:
    """``[LOW, HIGH)`` / ``[LOW, HIGH]`` in the description, as an inclusive (low, high)."""
    match = _RANGE_HINT.search(ctx.spec.description or "")
    if not match:
        return None
    low, high_text, bracket = int(match.group(1)), match.group(2), match.group(3)
    if high_text.isdigit():
        high = int(high_text)
    elif high_text in ctx.sizes:
        high = int(ctx.sizes[high_text])
    else:
        raise FormatError(
            f"{ctx.definition.name}: input {ctx.name!r}: description gives the range bound {high_text!r}, "
            f"which is not an axis; axes: {sorted(ctx.sizes)}"
        )
    high = high if bracket == "]" else high - 1
    if high < low:
        raise FormatError(f"{ctx.definition.name}: input {ctx.name!r}: description range [{low}, {high}] is empty")
    return low, high


def _axis_like(ctx: _Context, needles: tuple[str, ...], *, exclude: tuple[str, ...] = ()) -> int | None:
    """Size of the first axis containing a needle (``=name`` matches the whole name)."""
    for needle in needles:
        for axis, size in ctx.sizes.items():
            lowered = axis.lower()
            hit = lowered == needle[1:] if needle.startswith("=") else needle in lowered
            if hit and not any(x in lowered for x in exclude):
                return int(size)
    return None


def _clamp_to_dtype(ctx: _Context, low: int, high: int) -> tuple[int, int]:
    """Clamp an inclusive range to what the dtype holds."""
    info = torch.iinfo(ctx.spec.dtype.to_torch())
    return max(low, info.min), min(high, info.max)


def _random_int(ctx: _Context, shape: tuple[int, ...]) -> torch.Tensor:
    dtype = ctx.spec.dtype.to_torch()
    tokens = set(ctx.tokens)
    lowered = ctx.name.lower()
    hint = _range_hint(ctx)
    is_offsets = any(w in lowered for w in _OFFSET_WORDS) or "offsets" in tokens
    is_lengths = bool(tokens & _LENGTH_TOKENS) or "seq_len" in lowered
    if is_offsets and len(shape) == 1:
        total = hint[1] if hint else _axis_like(ctx, ("total", "nnz", "token")) or _DEFAULT_BOUND
        return _offsets(ctx, shape[0], total).to(dtype)
    if is_lengths:
        if hint:
            low, high = max(hint[0], 0), hint[1]
        else:
            bound = (
                _axis_like(ctx, ("max_seq", "max_len", "max_kv"))
                or _axis_like(ctx, ("kv", "cache", "ctx"))
                or _axis_like(ctx, ("seq", "len"))
                or _DEFAULT_BOUND
            )
            low, high = 1, bound
        low, high = _clamp_to_dtype(ctx, low, high)
        return _randint(ctx, low, high + 1, shape, dtype)
    if hint:
        low, high = _clamp_to_dtype(ctx, *hint)
        return _maybe_distinct(ctx, shape, low, high, dtype)
    if tokens & _INDEX_TOKENS or "topk" in tokens or "expert" in tokens:
        bound = None
        for subject, needles in _INDEX_SUBJECTS:
            if tokens & subject:
                bound = _axis_like(ctx, needles, exclude=("_per_", "top") if "expert" in needles[0] else ())
                if bound is not None:
                    break
        low, high = _clamp_to_dtype(ctx, 0, (bound or _DEFAULT_BOUND) - 1)
        return _maybe_distinct(ctx, shape, low, high, dtype)
    low, high = _INT_RANGES[ctx.spec.dtype]
    return _randint(ctx, low, high, shape, dtype)


def _maybe_distinct(ctx: _Context, shape: tuple[int, ...], low: int, high: int, dtype: torch.dtype) -> torch.Tensor:
    """Uniform in [low, high]; top-k-like indices are distinct along the last dimension."""
    span = high - low + 1
    topk_like = bool(set(ctx.tokens) & {"topk", "expert", "experts"})
    if topk_like and len(shape) >= 2 and shape[-1] <= span and math.prod(shape[:-1]) * span <= 2**26:
        rows = math.prod(shape[:-1])
        order = torch.argsort(_rand(ctx, (rows, span)), dim=-1)[:, : shape[-1]]
        return (order + low).reshape(shape).to(dtype)
    return _randint(ctx, low, high + 1, shape, dtype)


def _offsets(ctx: _Context, n: int, total: int) -> torch.Tensor:
    """n sorted offsets from 0 to total (cumulative sequence lengths)."""
    if n <= 0:
        return torch.zeros((0,), dtype=torch.int64, device=ctx.device)
    if n == 1:
        return torch.zeros((1,), dtype=torch.int64, device=ctx.device)
    inner = torch.randint(0, total + 1, (n - 2,), generator=ctx.gen, device=ctx.device).sort().values
    ends = torch.tensor([0, total], dtype=torch.int64, device=ctx.device)
    return torch.cat([ends[:1], inner, ends[1:]])


def _random_scalar(ctx: _Context) -> int | float | bool:
    dtype = ctx.spec.dtype
    tokens = set(ctx.tokens)
    lowered = ctx.name.lower()
    if dtype is DType.bool:
        return False
    if not dtype.is_float:
        for axis, size in ctx.sizes.items():
            if axis.lower() == lowered:
                return int(size)
        return 1
    if tokens & {"eps", "epsilon"}:
        return 1e-6
    if tokens & {"scale", "scaling"}:
        for axis in ("head_dim", "head_size", "D", "d"):
            if axis in ctx.sizes:
                return 1.0 / math.sqrt(ctx.sizes[axis])
        return 1.0
    if tokens & {"theta", "base"}:
        return 10000.0
    if tokens & {"alpha", "temperature"}:
        return 1.0
    if lowered in ("top_p", "topp"):
        return 0.9
    if tokens & {"dropout"}:
        return 0.0
    return float(0.5 + torch.rand((), generator=ctx.gen, device=ctx.device).item())
