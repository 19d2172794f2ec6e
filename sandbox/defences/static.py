"""Static checks: cheap AST and pattern rules over a solution's sources, run by the judge before any
candidate starts.

A :class:`Finding` is either ``reject`` (the solution is a REWARD_HACK without running: only
patterns no honest kernel needs, such as walking the caller's frames or scanning the garbage
collector) or ``warn`` (reported with the results; the runtime checks decide). Static checks are
evadable by obfuscation; they exist to fail the common hacks fast and with a clear message, not as
the last line (that is :mod:`.guards` for Python and :mod:`.confinement` for native code).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from solforge.problems import Solution


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
                                        f"{match.group(0)!r}: {_L2_MESSAGE}"))
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
PROTECTED_ENV = re.compile(
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
        bad = [k for k in keys if k and PROTECTED_ENV.match(k)]
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
                            r"\w*ACCESS_POLICY_WINDOW\w*|cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING)\b", re.I)
"""A persisting-L2 carve-out or an access-policy window: data pinned in L2 survives the harness's
flush (seen against another harness and in nvbench). The timer also reads the limit back after
every timed loop, for code that names it by number."""
_L2_MESSAGE = ("keeps data in a persisting L2 carve-out, which the harness's cache flush cannot evict: timings must "
               "start from a cold L2 (remove the limit and the access-policy window)")
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
    ("l2-persisting", _L2_PERSISTING, _L2_MESSAGE),
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


def describe_findings(findings: Sequence[Finding], limit: int = 4) -> list[str]:
    """Short warning lines for the trace log."""
    warns = [f for f in findings if f.severity == "warn"]
    lines = [f"static check: {f.describe()}" for f in warns[:limit]]
    if len(warns) > limit:
        lines.append(f"static check: {len(warns) - limit} more warnings")
    return lines
