"""Inspects one KernelBench file in a child process: ``python -I _kernelbench_child.py FILE OUT.json``.

The KernelBench file is user-supplied code, so it is executed here and never in the process that
runs the command line. This script imports only the standard library and torch (no solforge), runs
the file's ``Model`` on the CPU at the file's sizes, probes on meta tensors which module constant
sets which dimension, renders the definition's reference (the file followed by solforge's glue) and
checks that the reference reproduces ``Model.forward``. It writes one JSON object to OUT.json:
``{"ok": true, ...}`` with the facts, or ``{"ok": false, "field": ..., "message": ...}``.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import traceback
import types
from typing import Any

import torch

GLUE_MARKER = "# ---- solforge glue"
ENTRYPOINT = "solforge_make_inputs"


class Failure(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def load_module(path: str, source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def tail(exc: BaseException) -> str:
    lines = traceback.format_exception(exc)
    return "".join(lines[-3:]).strip()


def shape_of(value: Any) -> list[int] | None:
    return list(value.shape) if isinstance(value, torch.Tensor) else None


def describe(value: Any) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, bool):
        return {"shape": None, "dtype": "bool", "value": value}
    if isinstance(value, int):
        return {"shape": None, "dtype": "int64", "value": value}
    if isinstance(value, float):
        return {"shape": None, "dtype": "float32", "value": value}
    raise Failure("get_inputs", f"returned a {type(value).__name__}; return tensors (or Python numbers)")


def as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def state_of(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    return state


def unregistered_tensors(model: torch.nn.Module) -> list[str]:
    """Tensor attributes that are neither parameters nor buffers (a meta-built model would lose them)."""
    found = []
    for prefix, module in model.named_modules():
        for key, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not key.startswith("_"):
                found.append(f"{prefix}.{key}" if prefix else key)
    return found


def probe(module: types.ModuleType, overrides: dict[str, int]) -> dict[str, Any] | None:
    """Shapes of everything on meta tensors with some constants changed (None if that fails)."""
    saved = {k: getattr(module, k) for k in overrides}
    try:
        for k, v in overrides.items():
            setattr(module, k, v)
        with torch.device("meta"), torch.no_grad():
            init = list(module.get_init_inputs())
            model = module.Model(*init)
            inputs = list(module.get_inputs())
            outputs = as_list(model(*inputs))
        return {
            "init": repr(init),
            "inputs": [shape_of(v) for v in inputs],
            "outputs": [shape_of(v) for v in outputs],
            "state": {k: list(v.shape) for k, v in state_of(model).items()},
        }
    except Exception:
        return None
    finally:
        for k, v in saved.items():
            setattr(module, k, v)


def sanitise(names: list[str], taken: set[str]) -> list[str]:
    out = []
    for name in names:
        base = re.sub(r"\W", "_", name).strip("_") or "w"
        if base[0].isdigit():
            base = f"w_{base}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def render_glue(forward_inputs: list[str], state: dict[str, str], meta_model: bool) -> str:
    """The code appended to the KernelBench file: ``run(...)`` and the custom inputs entrypoint."""
    params = ", ".join([*forward_inputs, *state])
    args = "(" + ", ".join(forward_inputs) + ("," if len(forward_inputs) == 1 else "") + ")"
    tensors = ", ".join(f"{key!r}: {name}" for name, key in state.items())
    first = forward_inputs[0] if forward_inputs else None
    device = f"{first}.device if isinstance({first}, _sf_torch.Tensor) else 'cpu'" if first else "'cpu'"
    return f'''

{GLUE_MARKER} (written by `solforge problems import`; everything above is the KernelBench file) ----
import torch as _sf_torch

_SOLFORGE_FORWARD_INPUTS = {forward_inputs!r}
"""Model.forward's arguments, as named in the definition."""
_SOLFORGE_STATE = {state!r}
"""Definition input name -> the Model's parameter or buffer it replaces."""
_SOLFORGE_META_MODEL = {meta_model!r}
_solforge_models = {{}}


def _solforge_model(device):
    # The module only supplies the computation: its weights arrive as inputs through functional_call,
    # so it is built once on the meta device (no memory, no init cost) when that is safe.
    key = "meta" if _SOLFORGE_META_MODEL else str(device)
    if key not in _solforge_models:
        if _SOLFORGE_META_MODEL:
            with _sf_torch.device("meta"):
                _solforge_models[key] = Model(*get_init_inputs())
        else:
            _solforge_models[key] = Model(*get_init_inputs()).to(device)
    return _solforge_models[key]


def run({params}):
    model = _solforge_model({device})
    with _sf_torch.no_grad():
        out = _sf_torch.func.functional_call(model, {{{tensors}}}, {args})
    return tuple(out) if isinstance(out, list) else out


def {ENTRYPOINT}(axes_and_scalars, device):
    """get_inputs() and the weights of Model(*get_init_inputs()), with var axes set as module constants."""
    g = globals()
    var = {{k: int(v) for k, v in axes_and_scalars.items() if k in g and type(g[k]) is int}}
    saved = {{k: g[k] for k in var}}
    g.update(var)
    try:
        with _sf_torch.device(device):
            model = Model(*get_init_inputs())
            values = list(get_inputs())
    finally:
        g.update(saved)
    out = {{}}
    for name, value in zip(_SOLFORGE_FORWARD_INPUTS, values):
        out[name] = value.to(device) if isinstance(value, _sf_torch.Tensor) else value
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    for name, key in _SOLFORGE_STATE.items():
        out[name] = state[key].detach().to(device)
    return out
'''


def analyse(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise Failure("(file)", f"cannot read it: {exc}") from exc
    if GLUE_MARKER in source:
        raise Failure("(file)", "already carries solforge glue; import the original KernelBench file")
    try:
        module = load_module(path, source, "solforge_kernelbench_problem")
    except Exception as exc:
        raise Failure("(module)", f"raised while loading: {tail(exc)}") from exc
    model_cls = getattr(module, "Model", None)
    if not (inspect.isclass(model_cls) and issubclass(model_cls, torch.nn.Module)):
        raise Failure(
            "Model", "no class Model(nn.Module); a KernelBench file defines the reference as class Model"
        )
    for fn in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, fn, None)):
            what = (
                "the list of forward inputs"
                if fn == "get_inputs"
                else "the Model constructor's arguments ([] if none)"
            )
            raise Failure(fn, f"not defined; a KernelBench file defines {fn}() returning {what}; add it")
    constants = {
        k: v for k, v in vars(module).items() if type(v) is int and not k.startswith("_") and k.isidentifier()
    }
    torch.manual_seed(0)
    try:
        init = list(module.get_init_inputs())
    except Exception as exc:
        raise Failure("get_init_inputs", f"raised: {tail(exc)}") from exc
    try:
        model = model_cls(*init)
    except Exception as exc:
        raise Failure("Model", f"Model(*get_init_inputs()) raised: {tail(exc)}") from exc
    try:
        inputs = list(module.get_inputs())
    except Exception as exc:
        raise Failure("get_inputs", f"raised: {tail(exc)}") from exc
    if not inputs:
        raise Failure("get_inputs", "returned no inputs; return the list of tensors Model.forward takes")
    input_info = [describe(v) for v in inputs]
    try:
        with torch.no_grad():
            outputs = as_list(model(*inputs))
    except Exception as exc:
        raise Failure("Model.forward", f"raised on get_inputs() on the CPU: {tail(exc)}") from exc
    for i, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor):
            raise Failure(
                "Model.forward", f"output {i} is a {type(out).__name__}; forward must return tensors"
            )
    state = state_of(model)

    sig = inspect.signature(model.forward)
    named = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    forward_names = (
        named[: len(inputs)] if len(named) >= len(inputs) else [f"input_{i}" for i in range(len(inputs))]
    )
    forward_names = sanitise(forward_names, set())
    state_names = sanitise(list(state), set(forward_names) | {"run", "model", "out"})
    state_map = dict(zip(state_names, state, strict=True))
    meta_model = not unregistered_tensors(model)

    base = probe(module, {})
    perturbed = {c: probe(module, {c: v * 2}) for c, v in constants.items() if v > 0} if base else {}

    reference = source.rstrip() + "\n" + render_glue(forward_names, state_map, meta_model)
    # The rendered reference must reproduce Model.forward on the same inputs and weights.
    glue = load_module(path, reference, "solforge_kernelbench_reference")
    args = [*inputs, *[state[k].detach() for k in state_map.values()]]
    try:
        got = as_list(glue.run(*args))
    except Exception as exc:
        raise Failure(
            "Model.forward", f"does not run with its weights as inputs (functional_call): {tail(exc)}"
        ) from exc
    for i, (want, have) in enumerate(zip(outputs, got, strict=True)):
        if want.shape != have.shape or not torch.allclose(
            want.float(), have.float(), atol=1e-5, rtol=1e-5, equal_nan=True
        ):
            raise Failure(
                "Model.forward",
                f"output {i} differs between two runs on the same inputs and weights; the forward must be "
                "deterministic (dropout in training mode, or randomness inside forward?)",
            )
    try:
        made = getattr(glue, ENTRYPOINT)({}, "cpu")
    except Exception as exc:
        raise Failure("get_inputs", f"fails when called again to make inputs: {tail(exc)}") from exc
    return {
        "ok": True,
        "model_doc": inspect.getdoc(model_cls) or "",
        "constants": constants,
        "forward_names": forward_names,
        "inputs": input_info,
        "state": {name: describe(state[key]) for name, key in state_map.items()},
        "state_keys": state_map,
        "outputs": [describe(o) for o in outputs],
        "base": base,
        "perturbed": perturbed,
        "meta_model": meta_model,
        "made_inputs": sorted(made),
        "reference": reference,
    }


def main() -> int:
    path, out = sys.argv[1], sys.argv[2]
    try:
        result = analyse(path)
    except Failure as failure:
        result = {"ok": False, "field": failure.field, "message": failure.message}
    except Exception as exc:
        result = {"ok": False, "field": "(file)", "message": f"inspection failed: {tail(exc)}"}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
