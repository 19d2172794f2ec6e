"""Runtime guards in the candidate process, armed before the solution's code first runs.

An audit hook (:class:`AuditGuard`, PEP 578; it cannot be removed once added) sees frame access, gc
scans, process and socket creation, environment writes, file writes outside the scratch folder and
``__code__``/``__class__`` replacement, and blocks each when the code that asked for it is the
solution's (attribution by the calling frame, so torch, triton and the CuTe DSL doing the same
things internally are not affected). An integrity snapshot (:class:`Integrity`) of the harness's
functions (identity and bytecode) and of the modules it relies on catches monkey-patching. Threads
are judged by what they run, not by count (:func:`thread_problems`). :class:`FreshInputs` gives
every timed call freshly generated inputs, so nothing computed for one call can be replayed for
another.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import struct
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from .static import PROTECTED_ENV

_HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # sandbox/
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
                    if name and PROTECTED_ENV.match(name):
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


def invoker_codes(functions: Iterable[Callable[..., Any]]) -> list[types.CodeType]:
    """The code objects of harness functions that call into the solution (for :class:`AuditGuard`)."""
    return [f.__code__ for f in functions if hasattr(f, "__code__")]
