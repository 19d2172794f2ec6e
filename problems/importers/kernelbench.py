"""KernelBench problem files: ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``.

A KernelBench file (ScalingIntelligence/KernelBench, for example
``KernelBench/level1/1_Square_matrix_multiplication_.py``)
holds a PyTorch ``Model`` whose ``forward`` is the reference, module-level size constants
(``N = 2048``, ``batch_size = 16``), ``get_inputs()`` returning the forward's inputs and
``get_init_inputs()`` returning the constructor's arguments.

**The file is user-supplied code.** It is executed only in a child process
(``python -I _kernelbench_child.py``, isolated mode, under a timeout), never in the process that runs
the command line. The child runs ``Model`` on the CPU at the file's sizes to record the shapes and
dtypes, and probes on meta tensors which constant sets which dimension.

The definition it becomes:

- ``reference``: the file itself, followed by glue that defines ``run(<forward inputs>, <weights>)``:
  the Model's forward with its parameters and buffers passed in explicitly
  (``torch.func.functional_call``), so a kernel receives the weights as inputs like every other
  solforge problem. The module is built on the meta device (it only supplies the computation).
- ``inputs``: the forward's arguments (named as in ``forward``'s signature), then every parameter
  and buffer (``conv.weight`` becomes ``conv_weight``); dtypes and shapes from the CPU run.
- ``axes``: one const axis per module constant that sets a dimension (found by doubling each
  constant on meta tensors and seeing which dimensions follow), plus ``d<size>`` const axes for
  sizes no constant sets. A constant that only scales inputs and outputs linearly and leaves the
  weights and ``get_init_inputs()`` alone is a batch-like dimension and may become a var axis
  (``--var batch_size`` or ``--var auto``); its workloads sweep powers of two up to the file's value.
- inputs are ``custom``: the entrypoint calls the file's own ``get_inputs()`` (with the var axes
  set as module constants) and builds ``Model(*get_init_inputs())`` for the weights, so input
  distributions (``torch.rand`` vs ``torch.randn``, integer targets) and weight initialisation stay
  KernelBench's.
- ``tolerance``: KernelBench's check, ``torch.allclose(atol=1e-2, rtol=1e-2)`` over every element
  (matched ratio 1.0).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..dtypes import DType
from ..errors import FormatError
from ..generator.common import workload_uuid
from .common import Importer, Staged, slug

CHILD_SCRIPT = Path(__file__).with_name("_kernelbench_child.py")
DEFAULT_TIMEOUT_S = 300.0
"""Seconds the child may take for one file: KernelBench level-1 sizes run in seconds on a CPU."""
MAX_DEFAULT_SIZES = 8
"""A var axis without explicit sizes sweeps at most this many powers of two, ending at the file's value."""
KERNELBENCH_TOLERANCE = {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 1.0}
"""KernelBench's eval: torch.allclose(ref, out, atol=1e-2, rtol=1e-2), every element."""

_OP_TYPES = (
    (r"matmul|gemm|matrix|gemv|bmm|einsum", "gemm"),
    (r"conv", "conv"),
    (r"attention|attn", "attention"),
    (r"softmax", "softmax"),
    (r"norm", "norm"),
    (r"pool", "pooling"),
    (r"loss|entropy|divergence", "loss"),
    (r"relu|gelu|sigmoid|tanh|swish|selu|elu|softplus|softsign|hardtanh|mish|activation", "activation"),
    (r"sum|mean|max|min|prod|argmax|argmin|cumsum|cumprod|reduction|scan", "reduction"),
)


def _op_type(stem: str) -> str:
    lowered = stem.lower()
    return next((op for pattern, op in _OP_TYPES if re.search(pattern, lowered)), "kernelbench")


def _level(path: Path) -> int | None:
    for part in reversed(path.parts):
        m = re.fullmatch(r"level_?(\d+)", part.lower())
        if m:
            return int(m.group(1))
    return None


def default_sizes(value: int) -> list[int]:
    """Powers of two below ``value`` and ``value`` itself, at most :data:`MAX_DEFAULT_SIZES`, ascending."""
    sizes = sorted({max(1, value >> k) for k in range(MAX_DEFAULT_SIZES)})
    return sizes[-MAX_DEFAULT_SIZES:]


def inspect_file(path: Path, timeout_s: float) -> dict[str, Any]:
    """Run the child on ``path`` and return its facts.

    Raises
    ------
    FormatError
        When the child reports a problem with the file, crashes or runs past ``timeout_s``.
    """
    with tempfile.TemporaryDirectory(prefix="solforge-kernelbench-") as tmp:
        out = Path(tmp) / "result.json"
        try:
            proc = subprocess.run(
                [sys.executable, "-I", str(CHILD_SCRIPT), str(path.resolve()), str(out)],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            raise FormatError(
                f"{path}: running Model on the CPU took longer than {timeout_s:.0f} s; "
                "shrink the file's sizes "
                "or pass a larger --timeout"
            ) from exc
        if not out.is_file():
            err = (proc.stderr or proc.stdout).strip()[-1500:]
            raise FormatError(f"{path}: the inspecting process died (exit {proc.returncode}): {err}")
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if not result.get("ok"):
        raise FormatError(f"{path}: {result.get('field')}: {result.get('message')}")
    return result


def _dtype(name: str, what: str, path: Path) -> str:
    try:
        return DType(name).value
    except ValueError:
        raise FormatError(
            f"{path}: {what}: dtype {name} has no SOL-ExecBench name; use one of {[d.value for d in DType]}"
        ) from None


class _AxisNamer:
    """Names each dimension after the constant that sets it (see the module docstring)."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.constants: dict[str, int] = facts["constants"]
        self.base: dict[str, Any] | None = facts["base"]
        self.perturbed: dict[str, dict[str, Any] | None] = facts["perturbed"]
        self.axes: dict[str, dict[str, Any]] = {}
        self.blockers: dict[str, str] = {}
        """Why a constant cannot be a var axis."""
        self.linear: dict[str, int] = {}
        """Constants that set at least one input dimension, linearly."""
        if self.base is None:
            for c in self.constants:
                self.blockers[c] = "the Model does not run on meta tensors, so its role cannot be probed"
        for c in self.constants:
            if self.base is not None and self.perturbed.get(c) is None:
                self.blockers[c] = "doubling it makes the Model fail on meta tensors"

    def _lookup(self, section: str, key: Any, shape: list[int] | None) -> list[int] | None:
        if self.base is None or shape is None:
            return None
        table = self.base[section]
        return table.get(key) if isinstance(table, dict) else (table[key] if key < len(table) else None)

    def name_dims(self, section: str, key: Any, shape: list[int] | None) -> list[str] | None:
        if shape is None:
            return None
        base = self._lookup(section, key, shape)
        names = []
        for i, size in enumerate(shape):
            name = None
            if base is not None and base == shape:
                exact = []
                for c, value in self.constants.items():
                    bumped = self.perturbed.get(c)
                    if bumped is None:
                        continue
                    table = bumped[section]
                    other = table.get(key) if isinstance(table, dict) else table[key]
                    if other is None or len(other) != len(shape) or other[i] == size:
                        continue
                    if value == size and other[i] == 2 * size:
                        exact.append(c)
                    else:
                        self.blockers.setdefault(c, f"it changes {section} dimension {key}[{i}] non-linearly")
                if len(exact) == 1:
                    name = exact[0]
                    if section == "state":
                        self.blockers.setdefault(name, f"it sets the shape of the weight {key}")
                    elif section == "inputs":
                        self.linear[name] = size
            elif base is None:
                same = [c for c, v in self.constants.items() if v == size]
                name = same[0] if same else None
            if name is None:
                name = f"d{size}"
            self.axes.setdefault(name, {"type": "const", "value": size})
            names.append(name)
        return names

    def var_candidates(self, facts: dict[str, Any]) -> dict[str, str | None]:
        """Each constant and why it cannot be a var axis (None: it can)."""
        out: dict[str, str | None] = {}
        for c in self.constants:
            reason = self.blockers.get(c)
            bumped = self.perturbed.get(c)
            if (
                reason is None
                and bumped is not None
                and self.base is not None
                and bumped["init"] != self.base["init"]
            ):
                reason = "get_init_inputs() depends on it"
            if reason is None and c not in self.linear:
                reason = "it sets no input dimension"
            out[c] = reason
        return out


class KernelBenchImporter(Importer):
    """Stages KernelBench files; see the module docstring for what a file becomes."""

    def __init__(
        self, *, var_axes: dict[str, list[int] | None], timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.var_axes = var_axes
        self.timeout_s = timeout_s

    def discover(self, source: Path) -> list[Path]:
        if source.is_file():
            return [source]
        files = sorted(p for p in source.glob("*.py") if p.name != "__init__.py")
        if not files:
            raise FormatError(
                f"{source}: no .py files; a KernelBench level folder holds one problem per .py file"
            )
        return files

    def stage(self, entry: Path) -> Staged:
        facts = inspect_file(entry, self.timeout_s)
        namer = _AxisNamer(facts)
        inputs: dict[str, dict[str, Any]] = {}
        for index, (name, info) in enumerate(zip(facts["forward_names"], facts["inputs"], strict=True)):
            shape = namer.name_dims("inputs", index, info["shape"])
            inputs[name] = {"shape": shape, "dtype": _dtype(info["dtype"], f"get_inputs()[{index}]", entry)}
        for name, info in facts["state"].items():
            key = facts["state_keys"][name]
            shape = namer.name_dims("state", key, info["shape"])
            inputs[name] = {
                "shape": shape,
                "dtype": _dtype(info["dtype"], f"Model parameter {key}", entry),
                "description": f"Model's {key}",
            }
        outputs: dict[str, dict[str, Any]] = {}
        out_names = (
            ["output"]
            if len(facts["outputs"]) == 1
            else [f"output_{i}" for i in range(len(facts["outputs"]))]
        )
        for index, (name, info) in enumerate(zip(out_names, facts["outputs"], strict=True)):
            while name in inputs:
                name = f"{name}_"
            shape = namer.name_dims("outputs", index, info["shape"])
            outputs[name] = {
                "shape": shape,
                "dtype": _dtype(info["dtype"], f"Model.forward output {index}", entry),
            }
        axes = dict(namer.axes)
        notes: list[str] = []
        sweeps = self._var_sweeps(entry, namer.var_candidates(facts), axes, notes)
        for axis in sweeps:
            axes[axis] = {
                "type": "var",
                "description": f"KernelBench constant {axis} (file value {axes[axis]['value']})",
            }
        level = _level(entry.resolve())
        name = "kernelbench_" + (f"l{level}_" if level is not None else "") + slug(entry.stem)
        doc = " ".join(facts["model_doc"].split())
        definition = {
            "name": name,
            "op_type": _op_type(entry.stem),
            "tags": ["source:kernelbench", *([f"level:{level}"] if level is not None else [])],
            "description": (doc + " " if doc else "") + f"Imported from the KernelBench file {entry.name}: "
            "Model.forward with its parameters and buffers "
            "as explicit inputs (torch.func.functional_call); inputs from get_inputs(), weights from "
            "Model(*get_init_inputs()).",
            "axes": axes,
            "inputs": inputs,
            "outputs": outputs,
            "custom_inputs_entrypoint": "solforge_make_inputs",
            "reference": facts["reference"],
        }
        n = max((len(s) for s in sweeps.values()), default=1)
        workloads = []
        for k in range(n):
            # Sweeps are aligned on their largest size: the last workload is the file's own sizes.
            values = {a: s[max(0, len(s) - n + k)] for a, s in sweeps.items()}
            workloads.append(
                {
                    "uuid": workload_uuid(name, values),
                    "axes": values,
                    "inputs": {i: {"type": "custom"} for i in inputs},
                    "tolerance": dict(KERNELBENCH_TOLERANCE),
                }
            )
        offered = [c for c, why in namer.var_candidates(facts).items() if why is None and c not in sweeps]
        if offered:
            notes.append(
                f"batch-like constants {offered} can become var axes: import again with --var {offered[0]}"
            )
        return Staged(definition=definition, workloads=workloads, source=str(entry), notes=notes)

    def _var_sweeps(
        self,
        entry: Path,
        candidates: dict[str, str | None],
        axes: dict[str, dict[str, Any]],
        notes: list[str],
    ) -> dict[str, list[int]]:
        wanted = dict(self.var_axes)
        if "auto" in wanted:
            wanted.pop("auto")
            for c, why in candidates.items():
                if why is None and c in axes:
                    wanted.setdefault(c, None)
        sweeps: dict[str, list[int]] = {}
        for c, sizes in wanted.items():
            if c not in candidates:
                # A folder of files shares one --var list; a file without the constant stays const.
                notes.append(
                    f"--var {c}: the file has no module-level int constant {c!r} ({sorted(candidates)})"
                )
                continue
            if candidates[c] is not None or c not in axes:
                raise FormatError(f"{entry}: --var {c}: cannot vary: {candidates[c]}; leave it const")
            sweeps[c] = sorted(set(sizes)) if sizes else default_sizes(int(axes[c]["value"]))
        return sweeps
