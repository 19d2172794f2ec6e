"""Defences against reward hacking beyond process isolation: static checks, runtime guards, confinement.

The trust boundary itself (judge and candidate processes, scrubbed environment, rlimits, network
namespace, tree kill, JSON-only answers) lives in judge.py, candidate.py, channel.py and
isolation.py. This module adds what closes the remaining gaps; tools/docs/trust-boundary.md has the
table of every known hack, the defence and the test that proves it.

Four groups, each used by one side of the boundary:

**Static checks** (:func:`scan_solution`, run by the judge before the candidate starts). Cheap AST
and pattern rules over the solution's sources. A finding is either ``reject`` (the solution is a
REWARD_HACK without running: only patterns no honest kernel needs, such as walking the caller's
frames or scanning the garbage collector) or ``warn`` (reported with the results; the runtime checks
decide). Static checks are evadable by obfuscation; they exist to fail the common hacks fast and
with a clear message, not as the last line.

**Runtime guards in the candidate** (:class:`AuditGuard`, :class:`Integrity`,
:func:`thread_problems`, :func:`torch_state_problems`, :class:`FreshInputs`). An audit hook
(PEP 578; it cannot be removed once added) sees frame access, gc scans, process and socket
creation, environment writes, file writes outside the scratch folder and ``__code__``/``__class__``
replacement, and blocks each when the code that asked for it is the solution's (attribution by the
calling frame, so torch, triton and the CuTe DSL doing the same things internally are not
affected). An integrity snapshot of the harness's functions (identity and bytecode) and of the
modules it relies on catches monkey-patching. Threads are judged by what they run, not by count.
:class:`FreshInputs` gives every timed call freshly generated inputs, so nothing computed for one
call can be replayed for another.

**Confinement of the whole process** (:func:`confine_process`, in the candidate before any solution
code is loaded, and in the build worker before a CuTe DSL import runs candidate code). Landlock
restricts writes to the scratch folder (and ``/dev``), forbids TCP and scopes signals and ptrace
to the sandbox; a seccomp filter refuses the system calls that leave a namespace or reach into
another process (setns, unshare, ptrace, process_vm_*, mount, bpf, ...). Both hold for native code
(cuda_cpp) too, which the audit hook cannot see. Where the kernel lacks them the evaluation goes on
and the report says so.

**The switch** (:func:`defences_enabled`). ``SOLFORGE_DEFENCES=off`` in the judge's environment
turns off the defences added here (never the process boundary), for the overhead benchmark
(benchmarks/trust/bench_defences.py) only; it is ignored for submissions.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import ctypes.util
import dataclasses
import os
import re
import secrets
import struct
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from solforge.problems import Solution

__all__ = [
    "DEFENCES_ENV",
    "AuditGuard",
    "Finding",
    "FreshInputs",
    "Integrity",
    "confine_process",
    "defences_enabled",
    "reject_message",
    "scan_cpp",
    "scan_python",
    "scan_solution",
    "thread_problems",
    "torch_state_problems",
    "writable_folders",
]

DEFENCES_ENV = "SOLFORGE_DEFENCES"
"""``off`` disables the defences of this module (benchmarking only; never for submissions)."""


def defences_enabled(*, submission: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the judge applies the defences of this module.

    Parameters
    ----------
    submission
        A submission always runs with every defence, whatever the environment says.
    environ
        The environment to read (the judge's own by default).

    Returns
    -------
    bool
        False only when ``SOLFORGE_DEFENCES=off`` and this is not a submission.
    """
    value = (environ if environ is not None else os.environ).get(DEFENCES_ENV, "on").strip().lower()
    return submission or value not in ("off", "0", "false", "no")


# =============================================================================================
# Static checks
# =============================================================================================

Severity = Literal["reject", "warn"]


@dataclasses.dataclass(frozen=True)
class Finding:
    """One static finding in one source file."""

    rule: str
    """Short rule name, for example ``frame-introspection``."""
    severity: Severity
    """``reject``: REWARD_HACK without running. ``warn``: reported, the runtime checks decide."""
    path: str
    line: int
    message: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


def reject_message(findings: Sequence[Finding]) -> str | None:
    """The REWARD_HACK message for the rejecting findings, or None when there are none."""
    rejects = [f for f in findings if f.severity == "reject"]
    if not rejects:
        return None
    lines = [f.describe() for f in rejects[:8]]
    more = f"\n(and {len(rejects) - 8} more)" if len(rejects) > 8 else ""
    return ("static checks found code that only a reward hack needs (see the rules in the protocol):\n"
            + "\n".join(lines) + more)


_SHADOWED_MODULES = {"torch", "triton", "cutlass", "cuda", "safetensors", "solforge", "cupti", "numpy", "json",
                     "time", "socket", "pickle", "statistics", "threading", "gc", "sys", "os", "builtins", "random",
                     "secrets", "struct", "math", "io", "ctypes", "inspect", "traceback", "typing", "functools",
                     "collections", "importlib", "pydantic", "psutil", "select", "signal", "selectors", "queue"}
"""Module names a source file must not take: the harness, its dependencies and the standard modules it
imports after the solution is loaded (the solution's folder is first on sys.path)."""


def scan_solution(solution: Solution) -> list[Finding]:
    """Run the static checks over every source of ``solution``.

    Python sources (``.py``) get the AST rules of :func:`scan_python`; C/C++/CUDA sources the
    pattern rules of :func:`scan_cpp`. A Python file that does not parse yields nothing here (the
    build reports the syntax error).
    """
    findings: list[Finding] = []
    for source in solution.sources:
        top = PurePosixPath(source.path).parts[0].split(".")[0]
        if len(solution.sources) > 1 and top in _SHADOWED_MODULES and source.path != solution.spec.entry_file:
            findings.append(Finding("module-shadowing", "reject", source.path, 1,
                                    f"a source named {top!r} shadows the module the harness imports under that name"))
        suffix = PurePosixPath(source.path).suffix.lower()
        if suffix == ".py":
            findings += scan_python(source.path, source.content)
            match = _L2_PERSISTING.search(source.content)
            if match:
                findings.append(Finding("l2-persisting", "reject", source.path, _line_of(source.content, match.start()),
                                        f"{match.group(0)!r}: keeps data in a persisting L2 carve-out, which the "
                                        "harness's cache flush cannot evict"))
        elif suffix in (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hxx", ".inl"):
            findings += scan_cpp(source.path, source.content)
    return findings


# -- Python --------------------------------------------------------------------------------------

_FRAME_FUNCTIONS = {
    "sys._getframe", "sys._current_frames", "sys._current_exceptions", "inspect.currentframe", "inspect.stack",
    "inspect.trace", "inspect.getouterframes", "inspect.getinnerframes", "traceback.walk_stack", "traceback.walk_tb",
}
_FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
                     "f_trace"}
_GC_SCANS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
_TRACE_HOOKS = {"sys.settrace", "sys.setprofile", "sys.addaudithook", "threading.settrace", "threading.setprofile",
                "threading.settrace_all_threads", "threading.setprofile_all_threads"}
_PROCESS_CALLS = {"os.system", "os.popen", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.posix_spawn",
                  "os.posix_spawnp", "os.execv", "os.execve", "os.execl", "os.execle", "os.execlp", "os.execlpe",
                  "os.execvp", "os.execvpe", "os.spawnl", "os.spawnle", "os.spawnlp", "os.spawnlpe", "os.spawnv",
                  "os.spawnve", "os.spawnvp", "os.spawnvpe", "multiprocessing.Process", "multiprocessing.Pool",
                  "multiprocessing.get_context", "concurrent.futures.ProcessPoolExecutor"}
_PROCESS_PREFIXES = ("subprocess.", "pty.", "asyncio.create_subprocess")
_NETWORK_MODULES = {"socket", "ssl", "http", "urllib.request", "urllib3", "requests", "httpx", "aiohttp", "ftplib",
                    "smtplib", "telnetlib", "xmlrpc", "websocket", "websockets", "paramiko", "grpc"}
_PROTECTED_NAMESPACES = {
    "time", "builtins", "json", "socket", "gc", "sys", "os", "statistics", "threading", "struct", "math", "secrets",
    "random", "pickle", "io", "safetensors", "safetensors.torch", "torch", "torch.cuda", "torch.Tensor",
    "torch.cuda.Event", "torch.cuda.Stream", "torch.testing", "torch.utils.cpp_extension", "torch.multiprocessing",
    "torch.multiprocessing.reductions", "torch._C", "torch.cuda.graphs",
}
"""Namespaces whose attributes a solution must not assign: what the harness and its timer rely on.
Configuration namespaces (torch.backends.*, torch._dynamo.config, torch._inductor.config) are not
among them."""
_PROTECTED_ENV = re.compile(
    r"^(LD_\w+|PYTHON\w*|SOLFORGE\w*|CUDA_INJECTION\d*_PATH|NVTX_INJECTION\d*_PATH|CUPTI\w*|CUDA_VISIBLE_DEVICES"
    r"|HOME|TMPDIR|PATH|\w*_CACHE_DIR|XDG_\w+|CUDA_CACHE_PATH)$")
"""Environment variables a solution must not set: the loader, the profiler's injection hooks, the
harness's own settings and the folders that confine caches to the scratch folder."""
_PROC_MEMORY = re.compile(r"/proc/(self|thread-self|\d+|\{[^}]*\})/(mem|maps|smaps|smaps_rollup|pagemap|environ|"
                          r"syscall|task|fd|fdinfo|root|cwd)\b|/dev/k?mem\b")
_WRITE_CALLS = {"os.remove", "os.unlink", "os.rename", "os.replace", "os.rmdir", "os.removedirs", "os.mkdir",
                "os.makedirs", "os.symlink", "os.link", "os.chmod", "os.chown", "os.truncate", "shutil.rmtree",
                "shutil.move", "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree"}
_HARNESS_MODULE_PATH = re.compile(r"^\s*(solforge|cupti)(\.|/|$)", re.I)
"""Module paths into the harness or the profiler (``solforge.sandbox.timing``, ``cupti``); a label such
as ``solforge_rmsnorm`` or a custom-op namespace ``solforge::`` is not one."""
_RESULT_CACHE_KEYS = {"data_ptr", "_version", "untyped_storage", "storage_offset", "_cdata"}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings or bare string statements (comments)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            ids.add(id(node.value))
    return ids


class _PythonScanner(ast.NodeVisitor):
    """The AST rules; names are resolved through imports and simple aliases (``ev = torch.cuda.Event``)."""

    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}
        self.docstrings = _docstring_nodes(tree)
        self._seen: set[tuple[str, int]] = set()
        self._collect_aliases(tree)

    # -- helpers ---------------------------------------------------------------------------

    def _collect_aliases(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        # Simple aliases of attribute chains, flow-insensitively: `E = torch.cuda.Event`.
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Attribute | ast.Name)):
                dotted = self.dotted(node.value)
                if dotted and dotted.split(".")[0] in {"torch", "time", "sys", "gc", "os", "builtins", "json",
                                                        "inspect", "threading", "socket", "ctypes", "traceback"}:
                    self.aliases.setdefault(node.targets[0].id, dotted)

    def dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def add(self, node: ast.AST, rule: str, severity: Severity, message: str) -> None:
        line = getattr(node, "lineno", 0)
        if (rule, line) in self._seen:
            return
        self._seen.add((rule, line))
        self.findings.append(Finding(rule, severity, self.path, line, message))

    @staticmethod
    def _const_str(node: ast.AST | None) -> str | None:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    def _protected(self, dotted: str | None) -> bool:
        return bool(dotted) and (dotted in _PROTECTED_NAMESPACES or dotted.startswith(("solforge", "cupti")))  # type: ignore[union-attr]

    # -- imports ------------------------------------------------------------------------------

    def _check_module_name(self, node: ast.AST, name: str) -> None:
        root = name.split(".")[0]
        if root in ("solforge", "cupti"):
            self.add(node, "harness-access", "reject",
                     f"imports {name!r}: a solution has no business with the harness or the profiler")
        elif name in _NETWORK_MODULES or root in _NETWORK_MODULES:
            self.add(node, "network", "reject", f"imports {name!r}: the sandbox has no network and solutions need none")
        elif root == "ctypes":
            self.add(node, "ctypes", "warn", "imports ctypes: raw memory access is watched at run time")
        elif root in ("subprocess", "pty"):
            self.add(node, "process-spawn", "reject", f"imports {name!r}: solutions must not start processes")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module_name(node, alias.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self._check_module_name(node, node.module)
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in _FRAME_FUNCTIONS or full in _GC_SCANS or full in _TRACE_HOOKS:
                    self.add(node, "frame-introspection", "reject", f"imports {full}: walking frames or the garbage "
                             "collector reaches the harness's state")
        self.generic_visit(node)

    # -- calls ------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func) or ""
        if name in _FRAME_FUNCTIONS:
            self.add(node, "frame-introspection", "reject",
                     f"calls {name}(): reading other frames reaches the harness's locals (the checked call, the timer)")
        elif name in _GC_SCANS:
            self.add(node, "gc-scan", "reject", f"calls {name}(): scanning the heap is how expected outputs and "
                     "timer state are stolen")
        elif name in _TRACE_HOOKS:
            self.add(node, "trace-hooks", "reject", f"calls {name}(): tracing or auditing hooks observe the harness")
        elif name in _PROCESS_CALLS or name.startswith(_PROCESS_PREFIXES):
            self.add(node, "process-spawn", "reject", f"calls {name}(): solutions must not start or signal processes")
        elif name in ("os.putenv", "os.unsetenv") or name.startswith("os.environ."):
            self._env_write(node, name)
        elif name in ("setattr", "delattr", "object.__setattr__", "builtins.setattr") and node.args:
            target = self.dotted(node.args[0])
            if self._protected(target):
                self.add(node, "harness-patching", "reject",
                         f"{name}() on {target}: patching what the harness and its timer rely on")
            elif len(node.args) > 1 and self._const_str(node.args[1]) is None:
                self.add(node, "dynamic-code", "warn", f"{name}() with a computed attribute name")
            if len(node.args) > 1 and self._const_str(node.args[1]) in ("__code__", "__class__"):
                self.add(node, "code-replacement", "reject", f"{name}(..., {self._const_str(node.args[1])!r}) replaces "
                         "code or the type of an object")
        elif name in ("getattr", "builtins.getattr") and len(node.args) > 1:
            attr = self._const_str(node.args[1])
            if attr in _FRAME_ATTRIBUTES:
                self.add(node, "frame-introspection", "reject", f"getattr(..., {attr!r}) reaches another frame")
            elif attr is None:
                self.add(node, "dynamic-code", "warn", "getattr() with a computed attribute name")
        elif name in ("exec", "eval", "compile", "builtins.exec", "builtins.eval", "marshal.loads", "types.CodeType",
                      "types.FunctionType"):
            self.add(node, "dynamic-code", "warn", f"calls {name}(): dynamically built code is watched at run time")
        elif name in ("__import__", "importlib.import_module", "importlib.__import__") and node.args:
            module = self._const_str(node.args[0])
            if module is None:
                self.add(node, "dynamic-code", "warn", f"{name}() with a computed module name")
            else:
                self._check_module_name(node, module)
        elif name in ("ctypes.pythonapi", "ctypes.PyDLL") or name.startswith("ctypes.pythonapi."):
            self.add(node, "ctypes-pythonapi", "reject", f"calls {name}: the Python C API through ctypes rewrites "
                     "interpreter state")
        elif (name.startswith("threading.") and name.rsplit(".", 1)[-1] in ("Thread", "Timer")) or name in (
                "_thread.start_new_thread", "_thread.start_new", "concurrent.futures.ThreadPoolExecutor"):
            self.add(node, "threads", "warn", f"calls {name}(): work must finish inside the call; a thread still "
                     "running solution code afterwards is a REWARD_HACK")
        elif name in _WRITE_CALLS:
            self.add(node, "file-write", "warn", f"calls {name}(): only the scratch folder is writable at run time")
        elif name in ("open", "builtins.open", "io.open", "os.open") and self._opens_for_writing(node):
            self.add(node, "file-write", "warn", "opens a file for writing: only the scratch folder is writable")
        elif name in ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"):
            self.add(node, "runtime-compile", "warn", f"calls {name}(): blocked at run time; declare C++ as a "
                     "cuda_cpp solution")
        elif name in ("torch.cuda.set_stream", "torch.cuda.set_per_process_memory_fraction"):
            self.add(node, "stream-games", "warn", f"calls {name}(): the current stream must be the same when run "
                     "returns (use `with torch.cuda.stream(s):` and join the stream with an event)")
        elif name == "torch.set_float32_matmul_precision":
            self.add(node, "precision", "warn", "lowers fp32 matmul precision (TF32): the tolerance decides")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "setdefault", "pop") and node.args \
                and self._identity_key(node.args[0]):
            self._result_cache(node)
        elif name == "os.getppid":
            self.add(node, "harness-access", "warn", "uses os.getppid: the harness's processes are not the solution's")
        self.generic_visit(node)

    def _opens_for_writing(self, node: ast.Call) -> bool:
        mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
        text = self._const_str(mode)
        if text is not None:
            return any(c in text for c in "wax+")
        if isinstance(mode, ast.AST):
            return any(isinstance(n, ast.Attribute) and n.attr in ("O_WRONLY", "O_RDWR", "O_CREAT")
                       for n in ast.walk(mode))
        return False

    def _env_write(self, node: ast.Call, name: str) -> None:
        method = name.rsplit(".", 1)[-1]
        if name.startswith("os.environ.") and method in ("get", "copy", "keys", "items", "values", "__contains__",
                                                         "__getitem__"):
            return
        keys: list[str | None] = []
        if method in ("putenv", "unsetenv", "setdefault", "pop", "__setitem__", "__delitem__") and node.args:
            keys = [self._const_str(node.args[0])]
        elif method == "update":
            for arg in node.args:
                if isinstance(arg, ast.Dict):
                    keys += [self._const_str(k) for k in arg.keys if k is not None]
            keys += [k.arg for k in node.keywords if k.arg]
        self._env_keys(node, keys)

    def _env_keys(self, node: ast.AST, keys: Iterable[str | None]) -> None:
        bad = [k for k in keys if k and _PROTECTED_ENV.match(k)]
        if bad:
            self.add(node, "env-tampering", "reject", f"sets {bad}: the loader, the profiler's hooks and the "
                     "harness's folders are not the solution's to change")
        else:
            self.add(node, "env-write", "warn", "writes the environment: it is scrubbed and private to the sandbox")

    # -- assignments ----------------------------------------------------------------------------

    def _check_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            owner = self.dotted(target.value)
            if target.attr in ("__code__", "__class__", "__defaults__", "__kwdefaults__", "__globals__", "__dict__"):
                self.add(node, "code-replacement", "reject", f"assigns {target.attr}: replacing code or the type of an "
                         "object (lazy outputs, patched harness functions)")
            elif self._protected(owner):
                self.add(node, "harness-patching", "reject", f"assigns {owner}.{target.attr}: patching what the "
                         "harness and its timer rely on")
            elif (owner == "torch.backends.cuda.matmul" and target.attr == "allow_tf32") or (
                    owner == "torch.backends.cudnn" and target.attr == "allow_tf32"):
                self.add(node, "precision", "warn", "enables TF32: lowers fp32 precision; the tolerance decides")
        elif isinstance(target, ast.Subscript):
            owner = self.dotted(target.value)
            if owner == "sys.modules":
                self.add(node, "module-replacement", "reject", "writes sys.modules: replacing modules the harness uses")
            elif owner == "os.environ":
                self._env_keys(node, [self._const_str(target.slice)])
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._check_target(element, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    # -- attributes, names, strings -------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAME_ATTRIBUTES:
            self.add(node, "frame-introspection", "reject", f"reads .{node.attr}: reaches another frame's locals")
        dotted = self.dotted(node)
        if dotted in ("gc.callbacks", "sys.monitoring", "ctypes.pythonapi"):
            rule = "ctypes-pythonapi" if dotted == "ctypes.pythonapi" else "trace-hooks"
            self.add(node, rule, "reject", f"uses {dotted}: hooks into the interpreter observe or rewrite the harness")
        elif dotted and dotted.startswith("sys.modules.") and dotted.rsplit(".", 1)[-1] in (
                "pop", "update", "setdefault", "clear", "__setitem__", "__delitem__", "popitem"):
            self.add(node, "module-replacement", "reject", "modifies sys.modules: replacing modules the harness uses")
        elif dotted in ("sys.modules", "sys.argv"):
            self.add(node, "harness-access", "warn", f"reads {dotted}")
        self.generic_visit(node)

    @staticmethod
    def _identity_key(node: ast.AST | None) -> bool:
        """Whether ``node`` computes a pointer, version or object identity (a replay cache's key)."""
        if node is None:
            return False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr in _RESULT_CACHE_KEYS:
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "id":
                return True
        return False

    def _result_cache(self, node: ast.AST) -> None:
        self.add(node, "result-cache", "warn", "keys a cache on a pointer, version or identity: every timed call "
                 "gets fresh inputs at a fresh address and one of them is checked")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self._identity_key(node.slice):
            self._result_cache(node)
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(self._identity_key(k) for k in node.keys):
            self._result_cache(node)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = {self.dotted(b) or "" for b in node.bases}
        if bases & {"torch.Tensor", "TorchDispatchMode", "torch.utils._python_dispatch.TorchDispatchMode",
                    "TorchFunctionMode", "torch.overrides.TorchFunctionMode"}:
            self.add(node, "lazy-output", "warn", f"defines {node.name}, a tensor subclass or mode: outputs must be plain "
                     "tensors holding the result, and no mode may stay active after run returns")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and self._identity_key(node.left):
            self._result_cache(node)
        sides = [node.left, *node.comparators]
        shapes = any((isinstance(s, ast.Subscript) and isinstance(s.value, ast.Attribute) and s.value.attr == "shape")
                     or (isinstance(s, ast.Call) and isinstance(s.func, ast.Attribute) and s.func.attr in ("size", "numel"))
                     for s in sides)
        literal = any((isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value > 1)
                      or (isinstance(s, ast.Tuple | ast.List | ast.Set) and any(
                          isinstance(e, ast.Constant) and isinstance(e.value, int) and e.value > 1 for e in s.elts))
                      for s in sides)
        if shapes and literal:
            self.add(node, "hardcoded-shape", "warn", "compares a size with a literal: submissions run held-out sizes")
        self.generic_visit(node)

    def _check_string(self, node: ast.AST, text: str) -> None:
        if _PROC_MEMORY.search(text):
            self.add(node, "proc-memory", "reject", f"refers to {text[:60]!r}: reading or writing process memory "
                     "and other processes' files")
        elif text.startswith("/proc/") or text == "/proc":
            self.add(node, "proc", "warn", f"refers to {text[:60]!r}")
        if _HARNESS_MODULE_PATH.match(text):
            self.add(node, "harness-access", "reject", f"refers to {text[:60]!r}: the harness and the profiler are "
                     "not the solution's")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.docstrings:
            self._check_string(node, node.value)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        # f"/proc/{pid}/mem": join the literal parts around a placeholder, so the pattern sees the path.
        text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                       for v in node.values)
        self._check_string(node, text)
        for value in node.values:
            if not isinstance(value, ast.Constant):
                self.visit(value)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__",):
            self.add(node, "harness-patching", "warn", "uses __builtins__")
        self.generic_visit(node)


def scan_python(path: str, text: str) -> list[Finding]:
    """The AST rules over one Python source; an unparsable source yields no findings."""
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return []
    scanner = _PythonScanner(path, tree)
    scanner.visit(tree)
    return scanner.findings


# -- C / C++ / CUDA -------------------------------------------------------------------------------

_L2_PERSISTING = re.compile(r"\b(cudaLimitPersistingL2CacheSize|CU_LIMIT_PERSISTING_L2_CACHE_SIZE|\w*AccessPolicyWindow\w*|"
                            r"\w*ACCESS_POLICY_WINDOW\w*|cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING|"
                            r"persistingL2CacheMaxSize)\b", re.I)
"""A persisting-L2 carve-out or an access-policy window: data pinned in L2 survives the harness's
flush (seen against another harness and in nvbench). The timer also reads the limit back after
every timed loop, for code that names it by number."""
_ELF_WALK = re.compile(r"\bdl_iterate_phdr\b|#\s*include\s*<(link|elf)\.h>|\blink_map\b|\b_r_debug\b|\bdlinfo\s*\(|"
                       r"\bElf(32|64)_\w+|_GLOBAL_OFFSET_TABLE_|\bRTLD_NEXT\b|\bdladdr1?\s*\(")
"""Walking the loaded objects' ELF tables: how a native extension finds and rewrites another
library's GOT or PLT entries (the timer's, the profiler's) without mprotect. No kernel needs it."""
_CPP_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CPP_REJECT: list[tuple[str, re.Pattern[str], str]] = [
    ("process-spawn", re.compile(r"(?<![\w:.>])(?:std::)?(fork|vfork|execv|execve|execvp|execvpe|execl|execle|execlp|"
                                 r"posix_spawnp?|system|popen|clone3?)\s*\("),
     "starts a process: solutions must not"),
    ("process-memory", re.compile(r"\b(ptrace|process_vm_readv|process_vm_writev|mprotect|pkey_mprotect|setns|"
                                  r"unshare|pidfd_getfd|pidfd_open|syscall)\s*\("),
     "reaches into process memory or namespaces (GOT patching, reading other processes)"),
    ("proc-memory", _PROC_MEMORY, "reads or writes process memory or another process's files"),
    ("profiler", re.compile(r"\bcupti\w*|<cupti|CUDA_INJECTION\d*_PATH|NVTX_INJECTION", re.I),
     "touches the profiler the timer relies on"),
    ("network", re.compile(r"#\s*include\s*<(sys/socket\.h|netinet/[\w.]+|arpa/inet\.h|netdb\.h|sys/un\.h)>|"
                           r"\b(socket|connect|bind)\s*\(\s*(AF_|PF_)"),
     "opens a network socket: the sandbox has no network"),
    ("env-tampering", re.compile(r"\b(setenv|putenv)\s*\(\s*\"(LD_\w+|PYTHON\w*|SOLFORGE\w*|CUDA_INJECTION\d*_PATH|"
                                 r"CUPTI\w*|CUDA_VISIBLE_DEVICES|\w*_CACHE_DIR)\""),
     "sets loader, profiler or harness variables"),
    ("harness-access", re.compile(r"\bPyRun_\w+|\bPyEval_GetFrame\w*|\bPyThreadState_GetFrame|\bPyFrame_\w+|"
                                  r"\bPyGC_\w+|\bPySys_(SetObject|AddAuditHook|SetArgv\w*)|"
                                  r"\b(py|pybind11)::(module_?|module)::import\s*\(\s*\"(gc|sys|inspect|solforge[\w.]*|"
                                  r"time|builtins|socket|cupti|threading|ctypes|traceback)\"|"
                                  r"PyImport_ImportModule\w*\s*\(\s*\"(gc|sys|inspect|solforge[\w.]*|time|builtins|"
                                  r"socket|cupti|threading|ctypes|traceback)\""),
     "reaches the Python interpreter's frames, modules or the harness from C++"),
    ("embed-file", re.compile(r"\.incbin\b|#\s*embed\b"), "embeds a host file into the binary"),
    ("l2-persisting", _L2_PERSISTING,
     "keeps data in a persisting L2 carve-out, which the harness's cache flush cannot evict: timings must start "
     "from a cold L2 (remove the limit and the access-policy window)"),
    ("elf-walk", _ELF_WALK, "walks the loaded libraries' symbol tables (GOT/PLT patching of the timer or profiler)"),
]
_CPP_WARN: list[tuple[str, re.Pattern[str], str]] = [
    ("threads", re.compile(r"\bstd::thread\b|\bpthread_create\s*\(|\bstd::async\s*\("),
     "starts a thread: work must finish inside the call (GPU work launched from another thread after the call "
     "is a REWARD_HACK)"),
    ("side-stream", re.compile(r"\bcudaStreamCreate\w*\s*\(|\bcuStreamCreate\w*\s*\(|cudaStreamNonBlocking"),
     "creates a stream: join it to the current stream with an event before run returns"),
    ("env-read", re.compile(r"\b(getenv|secure_getenv|setenv|putenv|unsetenv)\s*\("), "uses the environment"),
    ("file-io", re.compile(r"\bfopen\s*\(|\bstd::ofstream\b|\bofstream\b|\bopen\s*\(\s*\"/"),
     "does file I/O: only the scratch folder is writable"),
    ("device-reset", re.compile(r"\bcudaDeviceReset\s*\(|\bcuCtxDestroy\w*\s*\(|\bcudaSetDevice\s*\("),
     "resets or switches the device the harness owns"),
    ("timer", re.compile(r"\b(cudaEventElapsedTime|cuEventElapsedTime)\s*\("),
     "reads event timers: the harness times with CUPTI over every stream"),
    ("dlopen", re.compile(r"\b(dlopen|dlsym|dlvsym)\s*\("), "loads symbols at run time"),
]
_CPP_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
_DETACH = re.compile(r"\.detach\s*\(\s*\)|\bpthread_detach\s*\(")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def scan_cpp(path: str, text: str) -> list[Finding]:
    """The pattern rules over one C/C++/CUDA source (comments are ignored)."""
    code = _CPP_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    findings: list[Finding] = []
    for rule, pattern, message in _CPP_REJECT:
        match = pattern.search(code)
        if match:
            findings.append(Finding(rule, "reject", path, _line_of(code, match.start()), f"{match.group(0)[:60]!r}: {message}"))
    for rule, pattern, message in _CPP_WARN:
        match = pattern.search(code)
        if match:
            findings.append(Finding(rule, "warn", path, _line_of(code, match.start()), f"{match.group(0)[:60]!r}: {message}"))
    if _CPP_WARN[0][1].search(code) and _DETACH.search(code):
        match = _DETACH.search(code)
        assert match is not None
        findings.append(Finding("detached-thread", "reject", path, _line_of(code, match.start()),
                                "detaches a thread: it outlives the call and its work escapes the timer"))
    depth = len(PurePosixPath(path).parts) - 1
    for match in _CPP_INCLUDE.finditer(code):
        target = PurePosixPath(match.group(1))
        climbs = 0
        level = depth
        for part in target.parts:
            if part == "..":
                level -= 1
                climbs = min(climbs, level)
            elif part != ".":
                level += 1
        if target.is_absolute() or climbs < 0:
            findings.append(Finding("include-outside", "reject", path, _line_of(code, match.start()),
                                    f"#include {match.group(1)!r} reads a file outside the solution (its text would "
                                    "appear in the compile log)"))
    return findings


# =============================================================================================
# Runtime guards in the candidate process
# =============================================================================================

_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_DIRS = tuple(sorted({os.path.realpath(p) + os.sep for p in (sysconfig.get_paths()["stdlib"],
                                                                    sysconfig.get_paths()["platstdlib"])}))
_INTROSPECTION_EVENTS = {"sys._getframe", "sys._current_frames", "sys._current_exceptions"}
_FRAME_EVENT_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
_FRAME_RETURNING = {("inspect.py", "currentframe"), ("inspect.py", "stack"), ("inspect.py", "trace"),
                    ("inspect.py", "getouterframes"), ("inspect.py", "getinnerframes"),
                    ("traceback.py", "walk_stack"), ("traceback.py", "walk_tb")}
_DEEP_VIOLATIONS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
                    "sys.addaudithook", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                    "os.fork", "os.forkpty", "pty.spawn", "os.killpg", "ctypes.PyObj_FromPtr", "sys.monitoring.register_callback"}
_PATH_WRITE_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod",
                      "os.chown", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile",
                      "shutil.copytree", "shutil.copymode", "shutil.copystat", "os.chflags", "os.mkfifo", "os.mknod"}
_DESTINATION_ONLY = {"shutil.copyfile", "shutil.copytree", "shutil.copymode", "shutil.copystat", "os.link",
                     "os.symlink"}
_BOTH_ENDS = {"os.rename", "shutil.move"}
_CTYPES_WARN = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.string_at", "ctypes.wstring_at",
                "ctypes.addressof", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.create_string_buffer",
                "ctypes.call_function", "ctypes.get_errno", "ctypes.set_errno"}
_DENIED_SYMBOLS = {"mprotect", "pkey_mprotect", "ptrace", "process_vm_readv", "process_vm_writev", "setns", "unshare",
                   "pidfd_getfd", "pidfd_open", "syscall", "PyEval_SetTrace", "PyEval_SetProfile", "_PyEval_SetTrace",
                   "PyGILState_GetThisThreadState", "PyThreadState_GetFrame", "PyEval_GetFrame", "Py_AddPendingCall",
                   "PySys_AddAuditHook", "PyInterpreterState_ThreadHead", "cuptiActivityRegisterCallbacks",
                   "cuptiActivityFlushAll", "cuptiActivityDisable", "cuptiSubscribe", "cudaEventElapsedTime",
                   "cuEventElapsedTime", "dl_iterate_phdr", "dlinfo", "dladdr", "dladdr1", "_r_debug",
                   "cudaCtxResetPersistingL2Cache", "cudaDeviceSetLimit", "cuCtxSetLimit"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_ALWAYS_WRITABLE = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")
_PROC_SELF_SECRET = re.compile(r"^/proc/(self|thread-self)/(task/\d+/)?(mem|maps|smaps|smaps_rollup|pagemap|syscall)$")


class AuditGuard:
    """An audit hook (PEP 578) that blocks what only a hack does, when the solution's own code asks.

    Attribution: the hook looks at the Python frame that raised the event. Frames of the standard
    library and of generated code (``<string>``) are skipped upwards; the first other frame decides.
    It belongs to the solution when its file is under one of ``solution_roots``, or when it is one
    of the harness frames that call into the solution (``invokers``), which is where events raised by
    native solution code (a cuda_cpp extension calling back into Python) surface. Frames of torch,
    triton, the CuTe DSL or the harness are not attributed, so those libraries doing the same things
    internally are unaffected. For frame access the rule is stricter: only the immediate caller
    counts, unless it is a standard-library function whose job is to return frames (inspect.stack,
    traceback.walk_tb, ...), because warnings and logging read frames on the caller's behalf.

    A violation is recorded in :attr:`violations` and the operation is refused (PermissionError).
    Hooks cannot be removed and the policy lives in the hook's closure, so the solution can neither
    turn it off nor, without the primitives it blocks, reach its state.
    """

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.warnings: list[str] = []
        self._installed = False

    def install(self, solution_roots: Iterable[str | Path], scratch: str | Path,
                invokers: Iterable[types.CodeType] = ()) -> None:
        """Add the hook (once per process)."""
        if self._installed:
            return
        self._installed = True
        roots = tuple(sorted({str(Path(r)) + os.sep for r in solution_roots}
                             | {os.path.realpath(r) + os.sep for r in solution_roots}))
        scratch_root = os.path.realpath(scratch) + os.sep
        invoker_codes = frozenset(invokers)
        violations, warnings = self.violations, self.warnings
        busy: set[int] = set()
        getframe = sys._getframe
        get_ident = threading.get_ident
        realpath, normpath, join, getcwd = os.path.realpath, os.path.normpath, os.path.join, os.getcwd
        my_pid = os.getpid()

        def is_library_glue(filename: str) -> bool:
            return filename.startswith("<") or (filename.startswith(_STDLIB_DIRS)
                                                and "-packages" not in filename)

        def attributed(deep: bool) -> bool:
            frame: types.FrameType | None = getframe(3)  # attributed <- check <- hook <- the caller
            first = True
            while frame is not None:
                code = frame.f_code
                if code in invoker_codes:
                    return True
                filename = code.co_filename
                if filename.startswith(roots):
                    return True
                if not is_library_glue(filename):
                    return False
                if not deep and first and not filename.startswith("<") and \
                        (os.path.basename(filename), code.co_name) not in _FRAME_RETURNING:
                    return False  # warnings, logging, typing read frames for themselves
                first = False
                frame = frame.f_back
            return False

        def refuse(message: str) -> None:
            violations.append(message)
            raise PermissionError(f"solforge sandbox: {message}")

        def as_path(value: object) -> str | None:
            if isinstance(value, bytes):
                return value.decode("utf-8", "surrogateescape")
            if isinstance(value, str):
                return value
            if isinstance(value, os.PathLike):
                return os.fspath(value)  # type: ignore[return-value]
            return None

        def writable(path: str) -> bool:
            if path in _ALWAYS_WRITABLE:
                return True
            full = realpath(join(getcwd(), path))
            return (full + os.sep).startswith(scratch_root) or full in _ALWAYS_WRITABLE

        def check_proc(path: str) -> str | None:
            full = normpath(join(getcwd(), path))
            if not full.startswith("/proc/"):
                return None
            parts = full.split("/")
            if len(parts) > 2 and parts[2].isdigit() and int(parts[2]) != my_pid:
                return f"opens {full}: another process's files"
            if _PROC_SELF_SECRET.match(full.replace(f"/proc/{my_pid}/", "/proc/self/")):
                return f"opens {full}: reading process memory and its map"
            return None

        def check(event: str, args: tuple[Any, ...]) -> None:
            if event in _INTROSPECTION_EVENTS:
                if attributed(deep=False):
                    refuse(f"{event}(): walking frames reaches the harness's state")
            elif event == "object.__getattr__":
                if len(args) > 1 and args[1] in _FRAME_EVENT_ATTRS and attributed(deep=False):
                    refuse(f"reads .{args[1]}: walking frames reaches the harness's state")
            elif event in ("object.__setattr__", "object.__delattr__"):
                if len(args) > 1 and args[1] in ("__code__", "__class__", "__defaults__", "__kwdefaults__",
                                                  "__globals__", "__closure__"):
                    target = args[0]
                    code = getattr(target, "__code__", None) if args[1] != "__class__" else None
                    filename = code.co_filename if isinstance(code, types.CodeType) else ""
                    own = filename.startswith(roots)
                    # collections.namedtuple sets __defaults__ of the functions it generates for the
                    # solution: defaults count only on the harness's own functions.
                    if args[1] in ("__defaults__", "__kwdefaults__") and not filename.startswith(_HARNESS_DIR):
                        own = True
                    if not own and attributed(deep=True):
                        refuse(f"sets {args[1]} of {type(target).__name__}: replacing code or the type of an object")
            elif event == "open":
                path = as_path(args[0]) if args else None
                if path is None:
                    return
                mode = args[1] if len(args) > 1 else None
                flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
                writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITE_FLAGS)
                if writes and not writable(path) and attributed(deep=True):
                    refuse(f"opens {path!r} for writing: only the scratch folder is writable")
                if not writes:
                    problem = check_proc(path)
                    if problem and attributed(deep=True):
                        refuse(problem)
            elif event in _PATH_WRITE_EVENTS:
                # Which arguments are written: the destination of a copy or link, both ends of a move,
                # otherwise the one path the call changes.
                written = args[1:2] if event in _DESTINATION_ONLY else args[:2] if event in _BOTH_ENDS else args[:1]
                paths = [p for p in (as_path(a) for a in written) if p is not None]
                if any(not writable(p) for p in paths) and attributed(deep=True):
                    refuse(f"{event}({', '.join(map(repr, paths))}): only the scratch folder is writable")
            elif event in ("os.putenv", "os.unsetenv"):
                name = as_path(args[0]) if args else ""
                if attributed(deep=True):
                    if name and _PROTECTED_ENV.match(name):
                        refuse(f"sets the environment variable {name}: loader, profiler and harness settings")
                    message = f"wrote the environment variable {name}"
                    if message not in warnings:
                        warnings.append(message)
            elif event == "os.kill":
                pid = args[0] if args else None
                if pid not in (my_pid, 0) and attributed(deep=True):
                    refuse(f"signals process {pid}")
            elif event in _DEEP_VIOLATIONS or event.startswith("socket."):
                if attributed(deep=True):
                    what = "opens a socket (no network in the sandbox)" if event.startswith("socket.") else f"{event}()"
                    refuse(what)
            elif event in ("ctypes.dlsym", "ctypes.dlsym/handle"):
                name = args[1] if len(args) > 1 else None
                if isinstance(name, str | bytes) and attributed(deep=True):
                    text = name.decode() if isinstance(name, bytes) else name
                    if text in _DENIED_SYMBOLS:
                        refuse(f"looks up {text} through ctypes: process memory, tracing or timer internals")
                    if "ctypes (raw memory access)" not in warnings:
                        warnings.append("ctypes (raw memory access)")
            elif event in _CTYPES_WARN and "ctypes (raw memory access)" not in warnings and attributed(deep=True):
                warnings.append("ctypes (raw memory access)")

        def hook(event: str, args: tuple[Any, ...]) -> None:
            tid = get_ident()
            if tid in busy:
                return  # our own sys._getframe, or an event raised while we decide
            busy.add(tid)
            try:
                check(event, args)
            finally:
                busy.discard(tid)

        sys.addaudithook(hook)


class Integrity:
    """What the harness relies on, snapshotted by identity, compared after every command.

    Namespaces (modules and classes) are recorded entry by entry for callables, classes and
    descriptors (data values such as flags may change honestly); Python functions of the harness
    itself are also recorded by code object, bytecode and defaults, because replacing a function's
    ``__code__`` (or rewriting it in place through ctypes) keeps its identity. ``sys.modules``
    entries of those modules must stay the same objects, and interpreter hooks (``gc.callbacks``,
    trace and profile functions) must stay as they were after the solution loaded.

    Names that libraries replace when they are imported (torch._dynamo wraps ``torch.manual_seed``)
    are exempt; nothing the harness uses is among them.
    """

    EXEMPT = frozenset({"torch.manual_seed", "threading.excepthook", "os.putenv", "os.unsetenv"})
    """torch._dynamo wraps manual_seed on import; torch._utils.install_os_environ_hook routes putenv through
    c10's lock; excepthook is a common logging hook. The harness uses none of them."""

    def __init__(self, namespaces: Mapping[str, Any], harness_modules: Sequence[types.ModuleType]) -> None:
        self._entries: list[tuple[str, Any, str, Any]] = []
        self._code: list[tuple[str, types.FunctionType, types.CodeType, bytes, Any, Any]] = []
        self._modules = {m.__name__: m for m in harness_modules}
        all_namespaces = dict(namespaces)
        harness_labels: set[str] = set()
        for module in harness_modules:
            all_namespaces[module.__name__] = module
            harness_labels.add(module.__name__)
            for name, value in vars(module).items():
                if isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
                    all_namespaces[f"{module.__name__}.{name}"] = value
                    harness_labels.add(f"{module.__name__}.{name}")
        for label, namespace in all_namespaces.items():
            harness = label in harness_labels
            for key, value in list(vars(namespace).items()):
                full = f"{label}.{key}"
                if full in self.EXEMPT or not self._guardable(value):
                    continue
                self._entries.append((label, namespace, key, value))
                function = value.__func__ if isinstance(value, staticmethod | classmethod) else value
                if harness and isinstance(function, types.FunctionType):
                    code = function.__code__
                    self._code.append((full, function, code, code.co_code, function.__defaults__,
                                       function.__kwdefaults__))
        self._hooks: tuple[Any, ...] = ()

    @staticmethod
    def _guardable(value: Any) -> bool:
        return callable(value) or isinstance(value, type | staticmethod | classmethod | property)

    def freeze_hooks(self) -> None:
        """Record the interpreter hooks as they are now (after the solution's import)."""
        import gc

        self._hooks = (tuple(gc.callbacks), sys.gettrace(), sys.getprofile())

    def changed(self) -> list[str]:
        """Names whose identity, code or registration changed since the snapshot."""
        import gc

        out = [f"{label}.{key}" for label, namespace, key, value in self._entries
               if vars(namespace).get(key) is not value]
        for full, function, code, raw, defaults, kwdefaults in self._code:
            if function.__code__ is not code or code.co_code != raw or function.__defaults__ is not defaults \
                    or function.__kwdefaults__ is not kwdefaults:
                out.append(f"{full}.__code__")
        out += [f"sys.modules[{name!r}]" for name, module in self._modules.items() if sys.modules.get(name) is not module]
        if self._hooks:
            callbacks, trace, profile = self._hooks
            if tuple(gc.callbacks) != callbacks:
                out.append("gc.callbacks")
            if sys.gettrace() is not trace:
                out.append("sys.settrace")
            if sys.getprofile() is not profile:
                out.append("sys.setprofile")
        return sorted(set(out))


def harness_namespaces() -> dict[str, Any]:
    """The modules and classes outside solforge that the candidate's harness relies on."""
    import builtins
    import io
    import json
    import json.encoder
    import math
    import pickle
    import random
    import socket
    import statistics
    import time

    import torch
    import torch.multiprocessing.reductions

    spaces: dict[str, Any] = {
        "builtins": builtins, "time": time, "json": json, "json.encoder": json.encoder, "socket": socket,
        "socket.socket": socket.socket, "struct": struct, "statistics": statistics, "math": math, "secrets": secrets,
        "random": random, "random.SystemRandom": random.SystemRandom, "os": os, "io": io, "pickle": pickle,
        "threading": threading, "threading.Thread": threading.Thread, "torch": torch, "torch.Tensor": torch.Tensor,
        "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event, "torch.cuda.Stream": torch.cuda.Stream,
        "torch.multiprocessing.reductions": torch.multiprocessing.reductions,
    }
    with contextlib.suppress(Exception):
        import safetensors.torch

        spaces["safetensors.torch"] = safetensors.torch
    with contextlib.suppress(Exception):
        from cupti import cupti

        spaces["cupti.cupti"] = cupti
    return spaces


def writable_folders(scratch: Path) -> list[Path]:
    """What a confined candidate may write: its scratch folder, ``/dev`` (the GPU's device files,
    ``/dev/null``, ``/dev/shm`` for CUDA IPC), its own ``/proc/<pid>`` and, where the machine runs
    it, the MPS pipe folder.

    The CUDA driver names the threads it starts by writing ``/proc/<pid>/task/<tid>/comm``; without
    that, ``cuInit`` fails with error 304 (seen on an H200 with Landlock ABI 7). Only this process's
    own folder is opened: ``/proc/<judge>/mem`` and the rest of ``/proc`` stay read-only.
    """
    folders = [Path(scratch), Path("/dev"), Path(f"/proc/{os.getpid()}")]
    for extra in (os.environ.get("CUDA_MPS_PIPE_DIRECTORY"), "/tmp/nvidia-mps", os.environ.get("CUDA_MPS_LOG_DIRECTORY")):
        if extra and Path(extra).is_dir():
            folders.append(Path(extra))
    return folders


def thread_problems(solution_roots: Iterable[str | Path], known: Iterable[int] = ()) -> list[str]:
    """Python threads that run, or will run, the solution's code.

    A thread is the solution's when its target (or a Timer's function, or its class's ``run``) was
    written in the solution, or when any frame of its current stack is in the solution. An idle
    worker of a library's pool (torch.compile keeps one) is not: it runs nothing of the solution.
    Threads in ``known`` (alive before the solution loaded) are skipped.
    """
    roots = tuple(sorted({str(Path(r)) + os.sep for r in solution_roots}
                         | {os.path.realpath(r) + os.sep for r in solution_roots}))
    skip = set(known) | {threading.get_ident()}
    frames = sys._current_frames()
    out: list[str] = []
    for thread in threading.enumerate():
        if thread.ident in skip or not thread.is_alive():
            continue
        candidates = [getattr(thread, "_target", None), getattr(thread, "function", None),
                      getattr(type(thread), "run", None)]
        files = [getattr(getattr(c, "__code__", None), "co_filename", "") for c in candidates]
        frame = frames.get(thread.ident or -1)
        while frame is not None:
            files.append(frame.f_code.co_filename)
            frame = frame.f_back
        if any(f.startswith(roots) for f in files if f):
            out.append(thread.name)
    return out


def torch_state_problems(device: str, stream_id: int | None) -> list[str]:
    """Global torch state a call must leave as it found it: no active modes, the same current stream."""
    import torch

    out: list[str] = []
    if torch._C._len_torch_function_stack() > 0:
        out.append("a TorchFunctionMode is still active after run returned (lazy or intercepted outputs)")
    if torch._C._len_torch_dispatch_stack() > 0:
        out.append("a TorchDispatchMode is still active after run returned (lazy or intercepted outputs)")
    if device.startswith("cuda") and stream_id is not None and torch.cuda.current_stream().stream_id != stream_id:
        out.append("run changed the current CUDA stream and did not restore it")
    return out


def plain_tensor_problems(values: Iterable[Any], names: Sequence[str]) -> list[str]:
    """Outputs must be plain ``torch.Tensor`` objects (no subclass, no swapped ``__class__``)."""
    import torch

    return [f"output {name!r} is a {type(v).__module__}.{type(v).__qualname__}, not a plain torch.Tensor "
            "(lazy or intercepted outputs)" for v, name in zip(values, names, strict=False)
            if isinstance(v, torch.Tensor) and type(v) is not torch.Tensor]


class FreshInputs:
    """Inputs for every timed call, freshly generated with a seed the solution cannot know.

    Call ``check_index`` gets the judge's check set (whose reference only the judge holds); every
    other call gets inputs drawn here from the same recipe (definition, workload, sizes) with a new
    secret seed. Inputs the workload reads from files (safetensors) keep the template's values:
    they cannot be redrawn. The values replace the templates inside :class:`~solforge.sandbox.timing.ShiftingPool`,
    so they are copied to a fresh address before each call, untimed.
    """

    def __init__(self, recipe: Mapping[str, Any], device: str, templates: Sequence[Any],
                 check_values: Sequence[Any], check_index: int) -> None:
        from solforge.problems import Definition, Workload
        from solforge.problems.reference import load_reference_module

        self.definition = Definition.model_validate(recipe["definition"])
        workload = Workload.model_validate(recipe["workload"])
        self.fixed = {name for name, d in workload.inputs.items() if getattr(d, "type", None) == "safetensors"}
        self.workload = workload.model_copy(update={"inputs": {k: v for k, v in workload.inputs.items()
                                                               if k not in self.fixed}})
        self.sizes = dict(recipe["sizes"])
        self.folder = recipe.get("folder")
        self.device = device
        self.templates = list(templates)
        self.check_values = list(check_values)
        self.check_index = check_index
        self.reference = None
        if any(getattr(d, "type", None) == "custom" for d in workload.inputs.values()):
            self.reference = load_reference_module(self.definition)

    def __call__(self, i: int) -> list[Any]:
        if i == self.check_index:
            return self.check_values
        from solforge.problems.inputs import generate_inputs

        values = generate_inputs(self.definition, self.workload, self.sizes, device=self.device,
                                 seed_or_generator=secrets.randbits(62), problem_folder=self.folder,
                                 reference_module=self.reference)
        return [self.templates[k] if name in self.fixed else value for k, (name, value) in enumerate(values.items())]


# =============================================================================================
# Confinement of the process (Landlock and seccomp)
# =============================================================================================

_PR_SET_NO_NEW_PRIVS = 38
_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
# Write-side rights only: reads stay free (the toolchain, the venv, the build cache must be readable).
_FS_WRITE_FILE, _FS_REMOVE_DIR, _FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_FS_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_EPERM = 1
_DENIED_SYSCALLS = ("ptrace", "process_vm_readv", "process_vm_writev", "setns", "unshare", "mount", "umount2",
                    "pivot_root", "chroot", "bpf", "kexec_load", "kexec_file_load", "init_module", "finit_module",
                    "delete_module", "reboot", "pidfd_getfd", "open_by_handle_at", "userfaultfd", "swapon",
                    "swapoff", "acct", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "sethostname",
                    "setdomainname", "fsopen", "fsconfig", "fsmount", "move_mount", "open_tree", "mount_setattr")
"""Leaving the sandbox's namespaces, reaching into other processes, changing the machine."""
_SYSCALLS: dict[str, tuple[int, int, dict[str, int]]] = {
    # machine: (AUDIT_ARCH, seccomp syscall number, table)
    "x86_64": (0xC000003E, 317, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "setns": 308, "unshare": 272, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "bpf": 321, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "pidfd_getfd": 438,
        "open_by_handle_at": 304, "userfaultfd": 323, "swapon": 167, "swapoff": 168, "acct": 163,
        "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "clock_adjtime": 305, "sethostname": 170,
        "setdomainname": 171, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "move_mount": 429, "open_tree": 428,
        "mount_setattr": 442}),
    "aarch64": (0xC00000B7, 277, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "setns": 268, "unshare": 97, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "bpf": 280, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "reboot": 142, "pidfd_getfd": 438,
        "open_by_handle_at": 265, "userfaultfd": 282, "swapon": 224, "swapoff": 225, "acct": 89,
        "settimeofday": 170, "clock_settime": 112, "adjtimex": 171, "clock_adjtime": 266, "sethostname": 161,
        "setdomainname": 162, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "move_mount": 429, "open_tree": 428,
        "mount_setattr": 442}),
}


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _landlock(libc: ctypes.CDLL, writable: Sequence[Path]) -> str:
    abi = libc.syscall(_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 1:
        return f"landlock unavailable ({os.strerror(ctypes.get_errno())}): writes are confined by the audit hook only"
    fs = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE
    if abi >= 2:
        fs |= _FS_REFER
    if abi >= 3:
        fs |= _FS_TRUNCATE
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = libc.syscall(_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock ruleset refused ({os.strerror(ctypes.get_errno())})"
    try:
        for folder in writable:
            try:
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", fs, fd), 12)  # packed struct
                if libc.syscall(_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                                rule, ctypes.c_uint32(0)) != 0:
                    return f"landlock rule for {folder} refused ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(fd)
        if libc.syscall(_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self refused ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return f"landlock ABI {abi}: writes only under {', '.join(map(str, writable))}" + (
        "; no TCP" if net else "") + ("; signals scoped" if scoped else "")


def _seccomp(libc: ctypes.CDLL) -> str:
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return f"seccomp filter not installed: no syscall table for {machine}"
    arch, seccomp_nr, table = _SYSCALLS[machine]
    numbers = sorted({table[name] for name in _DENIED_SYSCALLS})
    # BPF: load arch; foreign arch -> EPERM; load nr; (x86_64: x32 ABI -> EPERM); each denied nr -> EPERM; allow.
    program: list[tuple[int, int, int, int]] = [(0x20, 0, 0, 4)]
    program.append((0x15, 1, 0, arch))  # jeq arch: skip the next (errno) on equal
    program.append((0x06, 0, 0, _SECCOMP_RET_ERRNO | _EPERM))
    program.append((0x20, 0, 0, 0))  # ld nr
    body: list[tuple[int, int, int, int]] = []
    if machine == "x86_64":
        body.append((0x35, 0, 0, 0x40000000))  # jge x32 bit -> errno (jt patched below)
    body += [(0x15, 0, 0, nr) for nr in numbers]
    body.append((0x06, 0, 0, _SECCOMP_RET_ALLOW))
    body.append((0x06, 0, 0, _SECCOMP_RET_ERRNO | _EPERM))
    errno_at = len(body) - 1
    patched = []
    for index, (code, _jt, _jf, k) in enumerate(body[:-2]):
        patched.append((code, errno_at - index - 1, 0, k))
    program += patched + body[-2:]
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in program)
    filters = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(program), ctypes.addressof(filters))
    if libc.syscall(seccomp_nr, ctypes.c_uint(_SECCOMP_SET_MODE_FILTER), ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC),
                    ctypes.byref(prog)) != 0:
        return f"seccomp filter refused ({os.strerror(ctypes.get_errno())})"
    return f"seccomp: {len(numbers)} system calls refused (setns, unshare, ptrace, process_vm_*, mount, bpf, ...)"


def confine_process(writable: Sequence[str | Path]) -> list[str]:
    """Confine the calling process and everything it starts afterwards; return what was applied.

    Sets ``no_new_privs``, then a Landlock domain in which only ``writable`` (and what lies under it)
    may be written, TCP is refused and signals cannot leave the sandbox (ABI 6), and a seccomp
    filter refusing :data:`_DENIED_SYSCALLS` with EPERM. Landlock also stops ptrace and
    ``/proc/<pid>/mem`` access to processes outside the domain (the judge). Call it while the
    process has a single thread: both apply to the calling thread and its future children (the
    seccomp filter is synchronised to every thread).

    Each step is best effort: where the kernel lacks Landlock or seccomp the process runs without
    it and the returned notes say so (the caller reports them).
    """
    notes: list[str] = []
    if sys.platform != "linux":
        return ["confinement skipped: not Linux"]
    try:
        libc = _libc()
    except OSError as exc:
        return [f"confinement skipped: libc not loadable ({exc})"]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return [f"confinement skipped: no_new_privs refused ({os.strerror(ctypes.get_errno())})"]
    folders = [Path(p) for p in writable]
    try:
        notes.append(_landlock(libc, folders))
    except Exception as exc:  # an unexpected ctypes failure must not take the evaluation down
        notes.append(f"landlock failed: {type(exc).__name__}: {exc}")
    try:
        notes.append(_seccomp(libc))
    except Exception as exc:
        notes.append(f"seccomp failed: {type(exc).__name__}: {exc}")
    return notes


# =============================================================================================
# Reporting
# =============================================================================================


def describe_findings(findings: Sequence[Finding], limit: int = 4) -> list[str]:
    """Short warning lines for the trace log."""
    warns = [f for f in findings if f.severity == "warn"]
    lines = [f"static check: {f.describe()}" for f in warns[:limit]]
    if len(warns) > limit:
        lines.append(f"static check: {len(warns) - limit} more warnings")
    return lines


def invoker_codes(functions: Iterable[Callable[..., Any]]) -> list[types.CodeType]:
    """The code objects of harness functions that call into the solution (for :class:`AuditGuard`)."""
    return [f.__code__ for f in functions if hasattr(f, "__code__")]
