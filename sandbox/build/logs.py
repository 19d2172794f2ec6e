"""Turning compiler output into what an agent needs: the first errors, the warnings, the kernels.

A failed torch extension build prints kilobytes of ninja progress and nvcc command lines before the
one line that matters (``kernel.cu(12): error: expected a ";"``). :func:`trim_compile_log` keeps
the error lines with their context (source line, caret, instantiation notes), drops the noise,
shortens staging paths to the solution's own relative paths and caps the result.
:func:`parse_ptxas` reads the per-kernel resource report that ``-Xptxas=-v`` prints.
"""

from __future__ import annotations

import re
import subprocess
import traceback
from collections.abc import Iterable
from pathlib import Path

from solforge.sandbox.api import KernelResources

from .toolchain import find_demangler

__all__ = [
    "LOG_LIMIT_CHARS",
    "cap_log",
    "collect_warnings",
    "demangle",
    "format_python_exception",
    "parse_ptxas",
    "shorten_paths",
    "strip_ansi",
    "trim_compile_log",
]

LOG_LIMIT_CHARS = 4000
"""Longest log handed back to an agent; the full output stays in ``build.log`` of the build folder."""
MAX_WARNINGS = 20
_BLOCK_LINES = 8
"""Context lines kept after an error line (source line, caret, 'detected during' notes)."""

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_ERROR_RE = re.compile(
    r"(\berror\b\s*[:#(]|\berror\s*:|fatal error|\bfatal\s*:|undefined reference|cannot find -l"
    r"|multiple definition of|\bError:|^ptxas (?:error|fatal)|^nvcc (?:error|fatal)|Killed signal"
    r"|internal compiler error|out of memory|Segmentation fault)",
    re.IGNORECASE,
)
_WARNING_RE = re.compile(r"(\bwarning\b\s*[:#(]|^ptxas warning)", re.IGNORECASE)
_CONTEXT_BEFORE_RE = re.compile(
    r"(In function|In instantiation of|In member function|required from|In file included from)"
)
_NOISE_RE = re.compile(
    r"^(\[\d+/\d+\] |FAILED: |ninja: |ptxas info|\s+\d+ bytes stack frame|Traceback \(most recent|"
    r"W\d{4} |I\d{4} |Emitting ninja|Building extension|Loading extension|Allowing ninja|"
    r"collect2: error: ld returned|Error building extension)"
)
_COMMAND_RE = re.compile(r"^\S*(nvcc|c\+\+|g\+\+|gcc|clang\+\+|cc|ld)\s+.*\s-[-\w]")


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (the CuTe DSL colours its errors)."""
    return _ANSI_RE.sub("", text)


def shorten_paths(text: str, folders: Iterable[Path | str]) -> str:
    """Replace absolute staging folders by nothing, so paths read as the solution wrote them."""
    for folder in sorted({str(f).rstrip("/") for f in folders if f}, key=len, reverse=True):
        text = text.replace(folder + "/", "").replace(folder, ".")
    return text


def _is_noise(line: str) -> bool:
    return bool(_NOISE_RE.match(line) or (len(line) > 200 and _COMMAND_RE.match(line)))


def trim_compile_log(text: str, *, limit: int = LOG_LIMIT_CHARS) -> str:
    """The compiler's own error lines with their context, noise dropped, capped at ``limit`` chars.

    Parameters
    ----------
    text
        Everything the build printed (ninja, nvcc, the host compiler, the linker), paths shortened.
    limit
        Longest result; when something was cut, a last line says so and where the rest is.

    Returns
    -------
    str
        Error blocks in the order the compiler printed them; when no line looks like an error, the
        last non-noise lines instead.
    """
    lines = [line.rstrip() for line in strip_ansi(text).splitlines()]
    kept = [line for line in lines if line.strip() and not _is_noise(line)]
    blocks: list[list[str]] = []
    i = 0
    while i < len(kept):
        line = kept[i]
        if not _ERROR_RE.search(line) or _WARNING_RE.search(line):
            i += 1
            continue
        block = [line]
        if i > 0 and _CONTEXT_BEFORE_RE.search(kept[i - 1]) and not _ERROR_RE.search(kept[i - 1]):
            block.insert(0, kept[i - 1])
        j = i + 1
        extra = 0
        while j < len(kept) and not _ERROR_RE.search(kept[j]) and not _WARNING_RE.search(kept[j]):
            if len(block) < _BLOCK_LINES + 1:
                block.append(kept[j])
            else:
                extra += 1
            j += 1
        if extra:
            block.append(f"    [... {extra} more lines of context]")
        blocks.append(block)
        i = j
    if not blocks:
        tail = kept[-40:]
        return _cap("\n".join(tail), limit, note="no error line recognised; showing the end of the output")

    out: list[str] = []
    size = 0
    shown = 0
    for block in blocks:
        chunk = "\n".join(block)
        if out and size + len(chunk) + 1 > limit - 200:
            break
        out.append(chunk)
        size += len(chunk) + 1
        shown += 1
    result = "\n".join(out)
    if shown < len(blocks):
        result = _cap(result, limit, note=f"showing the first {shown} of {len(blocks)} error messages")
    return _cap(result, limit)


def cap_log(text: str, limit: int = LOG_LIMIT_CHARS) -> str:
    """``text`` unchanged when it fits in ``limit`` characters, else cut with a note saying so."""
    return _cap(text, limit)


def _cap(text: str, limit: int, note: str | None = None) -> str:
    suffix = (
        f"\n[log trimmed: {note}; the full compiler output is build.log in the build folder]" if note else ""
    )
    if len(text) + len(suffix) > limit:
        cut = limit - 200
        text = text[:cut]
        note = (note + "; " if note else "") + "cut at the character limit"
        suffix = f"\n[log trimmed: {note}; the full compiler output is build.log in the build folder]"
    return text + suffix


def collect_warnings(text: str, *, limit: int = MAX_WARNINGS) -> list[str]:
    """Distinct compiler and ptxas warning lines (spills, unused variables, ...), at most ``limit``."""
    seen: dict[str, None] = {}
    for line in strip_ansi(text).splitlines():
        line = line.strip()
        if _WARNING_RE.search(line) and not _is_noise(line):
            seen.setdefault(line[:500], None)
    warnings = list(seen)
    if len(warnings) > limit:
        warnings = [*warnings[:limit], f"[{len(warnings) - limit} more warnings in build.log]"]
    return warnings


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS_RE = re.compile(r"Function properties for (\S+)")
_FRAME_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")
_CMEM_RE = re.compile(r"(\d+) bytes cmem\[\d+\]")


def parse_ptxas(text: str) -> list[KernelResources]:
    """Per-kernel resources from ptxas ``-v`` output (names still mangled; see :func:`demangle`).

    ptxas prints, per entry function::

        ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90a'
        ptxas info    : Function properties for _Z6kernelPf
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 12 registers, used 0 barriers, 1024 bytes smem, 384 bytes cmem[0]

    A kernel compiled for several architectures appears once per architecture.
    """
    kernels: dict[tuple[str, str], KernelResources] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    current: tuple[str, str] | None = None
    props_for: str | None = None
    for line in text.splitlines():
        entry = _ENTRY_RE.search(line)
        if entry:
            current = (entry.group(1), entry.group(2))
            kernels.setdefault(current, KernelResources(name=current[0], mangled=current[0], arch=current[1]))
            continue
        props = _PROPS_RE.search(line)
        if props:
            props_for = props.group(1)
            continue
        frame = _FRAME_RE.search(line)
        if frame and props_for:
            frames[props_for] = (int(frame.group(1)), int(frame.group(2)), int(frame.group(3)))
            props_for = None
            continue
        used = _USED_RE.search(line)
        if used and current:
            kernel = kernels[current]
            kernel.registers = int(used.group(1))
            smem = _SMEM_RE.search(line)
            kernel.shared_bytes = int(smem.group(1)) if smem else 0
            cmem = _CMEM_RE.findall(line)
            kernel.constant_bytes = sum(int(c) for c in cmem) if cmem else None
            current = None
    for (mangled, _arch), kernel in kernels.items():
        if mangled in frames:
            kernel.stack_bytes, kernel.spill_stores_bytes, kernel.spill_loads_bytes = frames[mangled]
    return list(kernels.values())


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Map mangled C++ names to readable ones with cu++filt/c++filt; unknown names map to themselves."""
    names = list(dict.fromkeys(names))
    tool = find_demangler()
    if not names or tool is None:
        return {n: n for n in names}
    try:
        out = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    if len(out) != len(names):
        return {n: n for n in names}
    return {n: (d.strip() or n) for n, d in zip(names, out, strict=True)}


def format_python_exception(exc: BaseException, *, source_root: Path, limit: int = LOG_LIMIT_CHARS) -> str:
    """An exception raised by candidate code: the candidate's own frames and the message.

    Frames outside ``source_root`` (the DSL, torch, solforge) are left out; paths are relative.
    """
    root = str(source_root)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(root)]
    parts = []
    if frames:
        parts.append("Traceback (candidate frames only):\n")
        parts.extend(traceback.format_list(frames))
    parts.extend(traceback.format_exception_only(type(exc), exc))
    text = shorten_paths(strip_ansi("".join(parts).rstrip()), [root])
    return _cap(text, limit)
