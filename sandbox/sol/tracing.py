"""Running the reference under the counting modes, on meta tensors or on real inputs, and its arguments.

The modes charge every aten operator into a :class:`~solforge.sandbox.sol.cost_rules.Tally`;
:mod:`solforge.sandbox.sol.counting` says when each path is taken. torch is imported lazily, inside
functions.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solforge.problems.definition import Definition, TensorSpec
from solforge.problems.dtypes import DType
from solforge.problems.errors import SolforgeError
from solforge.problems.workload import SafetensorsInput, ScalarInput, Workload

from .cost_rules import Tally, count_op, count_sdpa

if TYPE_CHECKING:
    import types

    import torch

_DEVICE_FALLBACK_MAX_BYTES = 16 * 2**30
"""Largest input set (bytes) the device fallback will generate on the CPU: beyond it, running the
reference for real to count it would be slower than writing a ``flops`` override."""


class CountingError(SolforgeError):
    """The FLOPs of a workload could not be derived from its reference; add a ``flops`` override."""


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

            def __init__(self, tally: Tally, to_meta: bool) -> None:
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
                    count_sdpa(self.tally, args, kwargs)
                    with self.tally.suppressed():
                        return func(*args, **kwargs)
                return func(*args, **kwargs)

        class CountingDispatchMode(TorchDispatchMode):
            """Charges every aten operator the reference executes."""

            def __init__(self, tally: Tally) -> None:
                super().__init__()
                self.tally = tally

            def __torch_dispatch__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if self.tally.suppress == 0:
                    count_op(self.tally, func, args, kwargs, out)
                return out

        _MODES = (CountingFunctionMode, CountingDispatchMode)
        return _MODES


def run_counted(fn: Any, args: Sequence[Any], *, to_meta: bool) -> Tally:
    """Call ``fn(*args)`` under the counting modes (every tensor kept on meta when ``to_meta``)."""
    import torch

    function_mode_cls, dispatch_mode_cls = _mode_classes()
    tally = Tally()
    device_ctx = torch.device("meta") if to_meta else contextlib.nullcontext()
    with device_ctx, function_mode_cls(tally, to_meta), dispatch_mode_cls(tally):
        fn(*args)
    return tally


# -- inputs ---------------------------------------------------------------------------------------------

_REFERENCE_CACHE: dict[str, types.ModuleType] = {}
_REFERENCE_LOCK = threading.Lock()


def reference_module(definition: Definition) -> types.ModuleType:
    """The definition's reference, loaded once per source."""
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


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch."""
    torch = sys.modules.get("torch")  # if torch was never imported, nothing here can be a tensor
    return torch is not None and isinstance(value, torch.Tensor)


def scalar_values(definition: Definition, inputs: Mapping[str, Any] | None, workload: Workload | None) -> dict[str, Any]:
    """Python-scalar inputs' values from ``inputs``, else from the workload; absent when neither has one."""
    scalars: dict[str, Any] = {}
    for name, spec in definition.inputs.items():
        if spec.shape is not None:
            continue
        if inputs is not None and name in inputs and not is_tensor(inputs[name]):
            scalars[name] = inputs[name]
        elif workload is not None and isinstance(workload.inputs.get(name), ScalarInput):
            scalars[name] = workload.inputs[name].value  # type: ignore[union-attr]
    return scalars


def meta_args(definition: Definition, sizes: Mapping[str, int], inputs: Mapping[str, Any] | None,
              scalars: Mapping[str, Any]) -> list[Any]:
    """The reference's arguments on the meta device, with the layouts of the tensors given."""
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


def real_args(definition: Definition, sizes: Mapping[str, int], inputs: Mapping[str, Any] | None,
              scalars: Mapping[str, Any], workload: Workload | None, folder: Path | None,
              input_bytes: float) -> tuple[list[Any], str]:
    """The reference's arguments as real tensors, and the device they are on: the tensors given, the rest
    made from the custom entrypoint, the workload's safetensors or random values."""
    import torch

    # Tensors on the meta device only describe layouts (see counting.meta_inputs): real ones are made here.
    given = {n: v for n, v in (inputs or {}).items() if is_tensor(v) and v.device.type != "meta"}
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
        entry = getattr(reference_module(definition), definition.custom_inputs_entrypoint)
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
