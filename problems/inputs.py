"""Input generation: every input of a definition for one workload, seeded and reproducible.

Only worker processes import this module (it imports torch). :func:`generate_inputs` follows
SOL-ExecBench's ``gen_inputs`` and adds name heuristics so that random inputs are well posed.
The random values themselves are made in :mod:`solforge.problems.random_inputs`.

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

import os
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from .definition import Definition, TensorSpec
from .dtypes import DType
from .errors import FormatError
from .random_inputs import fp4_e2m1_codes, name_tokens, random_value
from .workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Workload

__all__ = ["InputValue", "fp4_e2m1_codes", "generate_inputs", "name_tokens"]

InputValue = torch.Tensor | int | float | bool

_FP4 = (DType.float4_e2m1, DType.float4_e2m1fn_x2)


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
            value = random_value(definition, name, spec, sizes, shape, gen=gen, shared=shared)
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
# seeding
# ----------------------------------------------------------------------------------------------


def _input_generator(seed: int, name: str, device: torch.device) -> torch.Generator:
    gen_device = device if device.type in ("cuda", "cpu") else torch.device("cpu")
    gen = torch.Generator(device=gen_device)
    # crc32, not hash(): str hashes differ from process to process.
    gen.manual_seed((seed * 1_000_003 + zlib.crc32(name.encode("utf-8"))) % (2**63))
    return gen


def _draw_seed(gen: torch.Generator | None) -> int:
    assert gen is not None
    return int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device).item())
