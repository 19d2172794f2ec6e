"""Input generation: every input of a definition for one workload, seeded and reproducible.

Only worker processes import this module (it imports torch). :func:`generate_inputs` follows
SOL-ExecBench's ``gen_inputs`` and adds name heuristics so that random inputs are well posed.

Descriptors
-----------
``random``
    Generated from the seed, by dtype and by the input's name (rules below). An input the workload
    does not list is random.
``scalar``
    The workload's ``value``: a Python number for a ``shape: null`` input, a 0-D tensor for
    ``shape: []``. A scalar for a tensor with dimensions is an error.
``safetensors``
    ``tensor_key`` from the file at ``path`` (absolute, or relative to the problem folder, then to
    ``$FLASHINFER_TRACE_DIR`` as SOL-ExecBench does). Shape and dtype must match the definition.
``custom``
    The reference's ``custom_inputs_entrypoint(axes_and_scalars, device) -> dict`` is called with the
    resolved axis sizes and the workload's scalar values. torch's global RNG is seeded from the seed
    for the call (and restored afterwards), so custom inputs are reproducible too.

Seeding
-------
With an integer seed, every input gets its own ``torch.Generator`` on the target device, seeded
from the seed and the input's name (crc32), so adding an input to a definition does not change the
others. With a ``torch.Generator``, inputs are drawn from it in definition order on the generator's
device and moved to the target device. The global RNG is never used except around a custom
entrypoint. Values are reproducible for one (seed, device type); CPU and CUDA streams differ.

Dtypes (default rule)
---------------------
float64/32/16, bfloat16: ``randn``. float8_e4m3fn, float8_e5m2: ``randn`` clamped to +-2, then cast.
float4_e2m1fn_x2: ``randn`` rounded to the nearest e2m1 code, two codes per byte (low nibble = even
element), stored as ``torch.float4_e2m1fn_x2`` when torch has it, else uint8; the definition's shape
counts bytes, so the last dimension holds twice as many fp4 values. float4_e2m1: one code per uint8.
bool: ``randint(0, 2)``. int16/32/64: ``randint(-1024, 1024)``; int8 ``[-128, 128)``; uint8 ``[0, 256)``.

Name heuristics (case-insensitive)
----------------------------------
A name is split into lowercase word tokens (``q_proj_weight`` -> q, proj, weight; ``w13`` -> w, 13).
The first matching rule applies; float rules skip fp8/fp4 inputs except the quantisation-scale rule.

Float tensors:

1. *quantisation scales* (tokens ``scale``, ``scales``, ``sf``, ``sfa``, ``sfb``, or ``scale_inv``)
   in a definition with an fp8/fp4 input or output, or an fp8 input named so: uniform in
   [0.5, 1.5). (AdaLN's ``scale`` in a bf16 problem falls through to the rules below: randn.)
2. *mask* (a token containing ``mask``): an additive causal mask over the last two dimensions
   (queries, keys), aligned bottom-right as in decoding with a cache (query i of Q sees keys
   ``<= i + K - Q``): 0 where allowed, the dtype's most negative finite value above the diagonal.
   A 1-D mask is a padding mask: 0 on a random prefix (at least one key), the minimum after it.
3. *probabilities* (tokens ``probs``, ``prob``, ``probabilities``, ``softmax``, or ``attn_weights``):
   rows of ``softmax(randn)`` over the last dimension.
4. *rotary tables* (token ``cos`` or ``sin``): ``cos``/``sin`` of positions x inverse frequencies
   (base 10000, Hugging Face layout ``cat(freqs, freqs)`` over the last dimension, which is the head
   dimension); the second-to-last dimension counts consecutive positions from a random start in
   [0, 4096), shared by the cos and sin inputs of one call; leading dimensions repeat the table.
5. *norm weight*: a ``norm``-like token (containing ``norm``, or ``ln``/``rms``) with ``weight``,
   ``scale`` or ``w``, or a ``gamma`` token, or a 1-D ``weight`` in a definition whose name or
   op_type mentions norm: ``1 + 0.1 * randn`` (near ones, but a kernel that ignores it fails).
6. *norm bias*: a ``norm``-like token with ``bias``, or ``beta``, or a 1-D ``bias`` in a norm
   definition: ``0.1 * randn``.
7. *statistics* (tokens ``var``, ``variance``, ``rstd``, ``std``, ``invstd``): uniform in [0.5, 1.5).
8. *weight matrices* (at least 2-D; last token ``weight``, ``weights``, ``proj`` or ``kernel``, any
   ``proj`` token, or names ``w``, ``w1``, ``w2``, ``w3``, ``w13``, ``wq``/``wk``/``wv``/``wo``):
   ``randn / sqrt(fan_in)``, fan_in = the last dimension ([out, in] layout), or the product of all
   but the first dimension when a token contains ``conv`` ([out, in, *kernel] layout).

Integer tensors (values are always inside the dtype's range):

1. An explicit range in the input's description wins: ``[LOW, HIGH)`` or ``[LOW, HIGH]`` where
   HIGH is an axis name or an integer, e.g. ``"valid cache length per sequence, in [1, kv_len]"``.
   Offsets and lengths use it as their bound, everything else draws uniformly from it.
2. *offsets* (names containing ``cu_seqlen`` or ``indptr``, or an ``offsets`` token, 1-D): sorted,
   first 0, last = the bound (range hint, else an axis whose name contains ``total``, ``nnz`` or
   ``token``; else 1024).
3. *lengths* (tokens ``len``, ``lens``, ``length``, ``lengths``, ``seqlen``, ``seqlens``): uniform
   in [1, bound], bound = the first axis whose name contains ``max`` and ``len``/``seq``, else
   ``kv``/``cache``/``ctx``, else ``seq``/``len``; else 1024.
4. *indices* (tokens ``idx``, ``ids``, ``id``, ``index``, ``indices``, ``pos``, ``position(s)``,
   ``slot(s)``, ``table``, ``mapping``, ``label(s)``, ``token(s)``): uniform in [0, bound) with the
   bound from the first axis whose name matches the index's subject: ``expert``/``topk`` -> an axis
   with ``expert`` (not ``_per_``/``top``, which count experts per token) or named ``E``; ``token``/``input``/``vocab`` -> ``vocab``; ``pos``/``position`` ->
   ``max_pos``/``max_seq``/``seq``/``len``; ``page``/``block``/``slot``/``table`` -> ``page``/``block``/
   ``slot``; ``batch``/``req``/``seq`` -> ``batch``; ``head`` -> ``head``; ``label``/``class`` ->
   ``class``/``label``/``vocab``. Without a bound: [0, 1024). Expert-like or ``topk`` indices of 2+
   dimensions whose last dimension fits under the bound are distinct along each row, as top-k
   indices are.

Bool tensors: a *mask* of 2+ dimensions is a causal keep-mask (True where attention is allowed,
bottom-right aligned); a 1-D mask keeps a random non-empty prefix.

Python scalars (``shape: null``) without a scalar descriptor: ``eps``/``epsilon`` -> 1e-6; a float
with a ``scale`` token (``sm_scale``, ``softmax_scale``, ``scale``) -> 1/sqrt(head dim) from an axis
named ``head_dim``/``head_size``/``D``, else 1.0; ``theta``/``base`` -> 10000.0; ``alpha``/``temperature``
-> 1.0; ``top_p`` -> 0.9; ``dropout`` -> 0.0; other floats uniform in [0.5, 1.5); an int named like
an axis -> that axis's size, other ints 1; bools False.
"""

from __future__ import annotations

import math
import os
import re
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from .definition import Definition, TensorSpec
from .dtypes import DType
from .errors import FormatError
from .workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Workload

InputValue = torch.Tensor | int | float | bool

_INT_RANGES: dict[DType, tuple[int, int]] = {
    DType.int8: (-128, 128),
    DType.uint8: (0, 256),
    DType.int16: (-1024, 1024),
    DType.int32: (-1024, 1024),
    DType.int64: (-1024, 1024),
}
_FP8 = (DType.float8_e4m3fn, DType.float8_e5m2)
_FP4 = (DType.float4_e2m1, DType.float4_e2m1fn_x2)
# Rounding boundaries between the magnitudes of e2m1 codes 0..7 (0, 0.5, 1, 1.5, 2, 3, 4, 6).
_E2M1_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
_RANGE_HINT = re.compile(r"\[\s*(-?\d+)\s*,\s*([A-Za-z_]\w*|\d+)\s*([)\]])")
_DEFAULT_BOUND = 1024


# ----------------------------------------------------------------------------------------------
# public entry
# ----------------------------------------------------------------------------------------------


def generate_inputs(
    definition: Definition,
    workload: Workload,
    sizes: Mapping[str, int] | None = None,
    *,
    device: str | torch.device,
    seed_or_generator: int | torch.Generator,
    problem_folder: str | Path | None = None,
    reference_module: ModuleType | None = None,
) -> dict[str, InputValue]:
    """Produce every input of ``definition`` for ``workload``.

    Parameters
    ----------
    definition
        The problem.
    workload
        The workload whose descriptors say how each input is made (an unlisted input is random).
    sizes
        Resolved sizes of all axes; ``None`` resolves them from ``workload.axes``.
    device
        Where the tensors end up.
    seed_or_generator
        An integer seed (each input then gets its own generator, seeded from the seed and the
        input's name) or a ``torch.Generator`` to draw from in definition order.
    problem_folder
        The folder relative safetensors paths are resolved against.
    reference_module
        The already loaded reference (see :func:`solforge.problems.reference.load_reference_module`);
        loaded here when a custom input needs it and none is given.

    Returns
    -------
    dict
        Input name to tensor or Python scalar, in the definition's input order.

    Raises
    ------
    FormatError
        When the workload cannot be made into inputs; the message names the input.
    """
    device = torch.device(device)
    if sizes is None:
        try:
            sizes = definition.resolve_axes(workload.axes)
        except ValueError as exc:
            raise FormatError(f"{definition.name}: workload {workload.uuid}: axes: {exc}") from exc
    sizes = dict(sizes)
    unknown = sorted(set(workload.inputs) - set(definition.inputs))
    if unknown:
        raise FormatError(
            f"{definition.name}: workload {workload.uuid} names inputs {unknown} that the definition "
            f"does not have; known: {list(definition.inputs)}"
        )
    shared_generator = seed_or_generator if isinstance(seed_or_generator, torch.Generator) else None
    seed = None if shared_generator is not None else int(seed_or_generator)

    custom: Mapping[str, Any] | None = None
    if any(isinstance(d, CustomInput) for d in workload.inputs.values()):
        custom_seed = seed if seed is not None else _draw_seed(shared_generator)
        custom = _call_custom_entrypoint(definition, workload, sizes, device, custom_seed, reference_module)

    out: dict[str, InputValue] = {}
    shared: dict[str, Any] = {}  # values inputs must agree on (the positions of cos and sin tables)
    for name, spec in definition.inputs.items():
        descriptor = workload.inputs.get(name, RandomInput())
        where = f"{definition.name}: input {name!r}"
        shape = _shape(definition, spec, sizes, where)
        if isinstance(descriptor, ScalarInput):
            out[name] = _scalar_value(descriptor.value, spec, shape, device, where)
        elif isinstance(descriptor, SafetensorsInput):
            out[name] = _load_safetensors(descriptor, spec, shape, device, problem_folder, where)
        elif isinstance(descriptor, CustomInput):
            assert custom is not None
            out[name] = _custom_value(custom, name, spec, shape, device, where)
        else:
            gen = shared_generator or _input_generator(seed, name, device)  # type: ignore[arg-type]
            ctx = _Context(definition=definition, name=name, spec=spec, sizes=sizes, gen=gen, shared=shared)
            value = _random_scalar(ctx) if shape is None else _random_tensor(ctx, shape)
            if isinstance(value, torch.Tensor) and value.device != device:
                value = value.to(device)
            out[name] = value
    return out


# ----------------------------------------------------------------------------------------------
# descriptors other than random
# ----------------------------------------------------------------------------------------------


def _shape(definition: Definition, spec: TensorSpec, sizes: Mapping[str, int], where: str) -> tuple[int, ...] | None:
    try:
        return definition.shape_of(spec, dict(sizes))
    except KeyError as exc:
        raise FormatError(f"{where}: shape names axis {exc.args[0]!r}, which has no size for this workload") from exc


def _scalar_value(
    value: int | float | bool, spec: TensorSpec, shape: tuple[int, ...] | None, device: torch.device, where: str
) -> InputValue:
    dtype = spec.dtype
    if shape is not None and shape != ():
        raise FormatError(
            f"{where}: a scalar descriptor was given for a tensor of shape {list(shape)}; use random or "
            "safetensors, or declare the input with shape null (Python scalar) or [] (0-D tensor)"
        )
    if dtype is DType.bool:
        py: InputValue = bool(value)
    elif dtype.is_float:
        py = float(value)
    else:
        if isinstance(value, float) and not value.is_integer():
            raise FormatError(f"{where}: scalar value {value} is not an integer but the dtype is {dtype.value}")
        py = int(value)
    if shape is None:
        return py
    if dtype in _FP4:
        raise FormatError(f"{where}: a scalar descriptor cannot give an fp4 0-D tensor; use random or safetensors")
    return torch.tensor(py, dtype=dtype.to_torch(), device=device)


def _resolve_path(path: str, problem_folder: str | Path | None, where: str) -> Path:
    candidate = Path(path)
    if candidate.is_absolute():
        if not candidate.is_file():
            raise FormatError(f"{where}: safetensors file {candidate} does not exist")
        return candidate
    tried: list[Path] = []
    if problem_folder is not None:
        tried.append(Path(problem_folder) / candidate)
    trace_dir = os.environ.get("FLASHINFER_TRACE_DIR")
    if trace_dir:
        tried.append(Path(trace_dir) / candidate)
    for p in tried:
        if p.is_file():
            return p
    if not tried:
        raise FormatError(
            f"{where}: safetensors path {path!r} is relative but no problem folder is known; "
            "give an absolute path or load the problem from its folder"
        )
    raise FormatError(f"{where}: safetensors file {path!r} not found (looked in {[str(p) for p in tried]})")


def _load_safetensors(
    descriptor: SafetensorsInput,
    spec: TensorSpec,
    shape: tuple[int, ...] | None,
    device: torch.device,
    problem_folder: str | Path | None,
    where: str,
) -> torch.Tensor:
    from safetensors import safe_open

    path = _resolve_path(descriptor.path, problem_folder, where)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            keys = list(f.keys())
            if descriptor.tensor_key not in keys:
                raise FormatError(
                    f"{where}: safetensors file {path} has no tensor {descriptor.tensor_key!r}; keys: {keys[:20]}"
                )
            tensor = f.get_tensor(descriptor.tensor_key)
    except FormatError:
        raise
    except Exception as exc:
        raise FormatError(f"{where}: cannot read safetensors file {path}: {exc}") from exc
    want = spec.dtype.to_torch()
    if tensor.dtype != want:
        # fp4 tensors are often saved as their uint8 storage.
        if spec.dtype in _FP4 and tensor.dtype == torch.uint8:
            tensor = tensor.view(want)
        else:
            raise FormatError(
                f"{where}: tensor {descriptor.tensor_key!r} in {path} has dtype {tensor.dtype}, "
                f"the definition says {spec.dtype.value}"
            )
    expected = shape if shape is not None else ()
    if tuple(tensor.shape) != tuple(expected):
        raise FormatError(
            f"{where}: tensor {descriptor.tensor_key!r} in {path} has shape {list(tensor.shape)}, "
            f"this workload needs {list(expected)}"
        )
    return tensor.contiguous().to(device)


def _call_custom_entrypoint(
    definition: Definition,
    workload: Workload,
    sizes: Mapping[str, int],
    device: torch.device,
    seed: int,
    reference_module: ModuleType | None,
) -> Mapping[str, Any]:
    custom_names = sorted(n for n, d in workload.inputs.items() if isinstance(d, CustomInput))
    entry = definition.custom_inputs_entrypoint
    if not entry:
        raise FormatError(
            f"{definition.name}: inputs {custom_names} are custom but the definition names no "
            "custom_inputs_entrypoint; add one to the reference or use random descriptors"
        )
    if reference_module is None:
        from .reference import load_reference_module

        reference_module = load_reference_module(definition)
    fn: Callable[..., Any] | None = getattr(reference_module, entry, None)
    if not callable(fn):
        raise FormatError(f"{definition.name}: custom_inputs_entrypoint {entry!r} is not a function of the reference")
    scalars = {n: d.value for n, d in workload.inputs.items() if isinstance(d, ScalarInput)}
    axes_and_scalars = {**sizes, **scalars}
    devices = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        try:
            result = fn(axes_and_scalars, device)
        except Exception as exc:
            raise FormatError(
                f"{definition.name}: inputs {custom_names}: custom_inputs_entrypoint {entry!r} raised {exc!r}"
            ) from exc
    if not isinstance(result, Mapping):
        raise FormatError(
            f"{definition.name}: inputs {custom_names}: custom_inputs_entrypoint {entry!r} returned "
            f"{type(result).__name__}, not a dict of input name to tensor"
        )
    return result


def _custom_value(
    custom: Mapping[str, Any], name: str, spec: TensorSpec, shape: tuple[int, ...] | None, device: torch.device, where: str
) -> InputValue:
    if name not in custom:
        raise FormatError(f"{where}: the custom_inputs_entrypoint returned no value for it; got {sorted(custom)}")
    value = custom[name]
    if not isinstance(value, torch.Tensor):
        if shape is None and isinstance(value, bool | int | float):
            return value
        raise FormatError(f"{where}: the custom_inputs_entrypoint returned {type(value).__name__}, not a tensor")
    if shape is None:
        raise FormatError(f"{where}: declared a Python scalar (shape null) but the custom entrypoint returned a tensor")
    want = spec.dtype.to_torch()
    if value.dtype != want and not (spec.dtype in _FP4 and value.dtype == torch.uint8):
        raise FormatError(f"{where}: custom value has dtype {value.dtype}, the definition says {spec.dtype.value}")
    if tuple(value.shape) != shape:
        raise FormatError(f"{where}: custom value has shape {list(value.shape)}, this workload needs {list(shape)}")
    if value.dtype != want:
        value = value.view(want)
    return value.to(device)


# ----------------------------------------------------------------------------------------------
# random values
# ----------------------------------------------------------------------------------------------


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


def _input_generator(seed: int, name: str, device: torch.device) -> torch.Generator:
    gen_device = device if device.type in ("cuda", "cpu") else torch.device("cpu")
    gen = torch.Generator(device=gen_device)
    # crc32, not hash(): str hashes differ from process to process.
    gen.manual_seed((seed * 1_000_003 + zlib.crc32(name.encode("utf-8"))) % (2**63))
    return gen


def _draw_seed(gen: torch.Generator | None) -> int:
    assert gen is not None
    return int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device).item())


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
