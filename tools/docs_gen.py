"""Generate the API references agents read (``read_docs(topic="api-cute")``, ``"api-triton"``).

For each public symbol of a few modules of the installed packages it writes the signature and the first
paragraph of the docstring, as markdown, into ``tools/docs/api/<name>.md``. The output is committed, so
the server never imports these (heavy) packages to serve docs; rerun after upgrading them::

    python -m solforge.tools.docs_gen            # rewrite tools/docs/api/*.md
    python -m solforge.tools.docs_gen --check    # exit 1 if the committed files are stale

Each file is bounded (:data:`MAX_FILE_CHARS`); symbols past the bound are listed by name only.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import importlib
import inspect
import os
import re
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent / "docs" / "api"
MAX_DOC_CHARS = 500
"""Longest docstring excerpt per symbol (its first paragraph, cut)."""
MAX_SIGNATURE_CHARS = 300
MAX_METHODS = 14
"""Public methods listed per class (first docstring line each)."""
MAX_FILE_CHARS = 150_000
"""Bound on one generated file; read_docs pages through it."""


@dataclass(frozen=True)
class Reference:
    """One generated file: which modules it documents, and how to introduce them."""

    name: str
    package: str
    """Distribution whose version heads the file."""
    title: str
    intro: str
    modules: tuple[str, ...]
    root: str
    """Only symbols defined under this package are documented (re-exports of typing etc. are skipped)."""
    env: tuple[tuple[str, str], ...] = ()


REFERENCES = (
    Reference(
        name="cute",
        package="nvidia-cutlass-dsl",
        title="CuTe DSL API reference (cutlass, cutlass.cute)",
        intro=(
            "Signatures and the first paragraph of each docstring of the installed CuTe DSL, for looking up "
            'names while writing a `cute_dsl` solution. The guide is `read_docs(topic="cute-dsl")`; search '
            'this page with `read_docs(query="...", topic="api-cute")`.'
        ),
        modules=(
            "cutlass.cute",
            "cutlass.cute.arch",
            "cutlass.cute.runtime",
            "cutlass.cute.nvgpu.cpasync",
            "cutlass.cute.nvgpu.warpgroup",
            "cutlass.cute.nvgpu.tcgen05",
            "cutlass.utils",
            "cutlass.pipeline",
            "cutlass",
        ),
        root="cutlass",
        env=(("CUTE_DSL_ARCH", "sm_90a"),),
    ),
    Reference(
        name="triton",
        package="triton",
        title="Triton API reference (triton, triton.language)",
        intro=(
            "Signatures and the first paragraph of each docstring of the installed Triton, for looking up names "
            'while writing a `triton` solution. The guide is `read_docs(topic="triton")`; search this page '
            'with `read_docs(query="...", topic="api-triton")`.'
        ),
        modules=("triton.language", "triton.language.math", "triton", "triton.testing"),
        root="triton",
    ),
)


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    para = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    text = " ".join(para.split())
    if len(text) > MAX_DOC_CHARS:
        text = text[: MAX_DOC_CHARS - 3].rstrip() + "..."
    return text


_PLUMBING = frozenset({"loc", "ip"})
"""MLIR location and insertion-point parameters every CuTe DSL function takes; noise to a reader."""
_QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")


def _signature(obj: object) -> str:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    params = [p for name, p in sig.parameters.items() if name not in _PLUMBING]
    with contextlib.suppress(ValueError):
        sig = sig.replace(parameters=params)
    text = str(sig)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)  # object reprs in defaults vary between runs
    # cutlass._mlir._mlir_libs._cutlass_ir._mlir.ir.Value -> Value; typing.Optional -> Optional
    sig = _QUALIFIED.sub(lambda m: m.group(1), text)
    if len(sig) > MAX_SIGNATURE_CHARS:
        sig = sig[: MAX_SIGNATURE_CHARS - 4] + "...)"
    return sig


def _defined_under(obj: object, root: str) -> bool:
    module = getattr(obj, "__module__", None) or ""
    if isinstance(obj, types.ModuleType):
        module = obj.__name__
    return module == root or module.startswith(root + ".")


def _unwrap(obj: object) -> object:
    # Triton's @jit/@builtin and the DSL's decorators wrap functions; document what they wrap.
    for attr in ("fn", "__wrapped__"):
        inner = getattr(obj, attr, None)
        if callable(inner):
            return inner
    return obj


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if not names:
        names = [n for n in dir(module) if not n.startswith("_")]
    return sorted(set(names))


def document_module(modname: str, root: str, seen: set[int]) -> list[str]:
    """Markdown lines for the public symbols of ``modname`` not already documented (``seen``)."""
    try:
        module = importlib.import_module(modname)
    except Exception as exc:  # a submodule missing in this version is reported, not fatal
        return [f"## `{modname}`", "", f"(not importable here: {type(exc).__name__})", ""]
    lines = [f"## `{modname}`", ""]
    summary = _first_paragraph(module.__doc__)
    if summary:
        lines += [summary, ""]
    for name in _public_names(module):
        try:
            obj = getattr(module, name)
        except Exception:
            continue
        if isinstance(obj, types.ModuleType) or not _defined_under(obj, root):
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        target = _unwrap(obj)
        if inspect.isclass(obj) and issubclass(obj, enum.Enum):
            members = ", ".join(m.name for m in list(obj)[:40])
            lines.append(f"### enum `{modname}.{name}`")
            doc = _first_paragraph(inspect.getdoc(obj))
            if doc and not doc.startswith("An enumeration"):
                lines.append(doc)
            lines += [f"Members: {members}", ""]
        elif inspect.isclass(obj):
            lines.append(f"### class `{modname}.{name}{_signature(obj)}`")
            doc = _first_paragraph(inspect.getdoc(obj))
            if doc:
                lines.append(doc)
            methods = []
            for mname, member in sorted(vars(obj).items()):
                if mname.startswith("_") or not callable(member):
                    continue
                first = (_first_paragraph(inspect.getdoc(member)) or "").split(". ")[0][:160]
                methods.append(f"- `{mname}{_signature(member)}`" + (f": {first}" if first else ""))
                if len(methods) >= MAX_METHODS:
                    break
            lines += methods
            lines.append("")
        elif callable(obj):
            lines.append(f"### `{modname}.{name}{_signature(target)}`")
            doc = _first_paragraph(inspect.getdoc(target) or inspect.getdoc(obj))
            if doc:
                lines.append(doc)
            lines.append("")
        elif isinstance(obj, int | float | str | bool) or type(obj).__module__.startswith(root):
            text = repr(obj)
            if len(text) < 120 and " at 0x" not in text:
                lines += [f"- `{modname}.{name}` = `{text}`", ""]
    return lines


def _version(package: str) -> str:
    try:
        from importlib.metadata import version

        return version(package)
    except Exception:
        return "unknown"


def render(reference: Reference) -> str:
    """The whole markdown file for ``reference``, bounded by :data:`MAX_FILE_CHARS`."""
    for key, value in reference.env:
        os.environ.setdefault(key, value)
    seen: set[int] = set()
    head = [
        f"# {reference.title}",
        "",
        reference.intro,
        "",
        f"Generated by `python -m solforge.tools.docs_gen` from {reference.package} {_version(reference.package)}.",
        "",
    ]
    body: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notices of the documented packages are not ours to show
        for modname in reference.modules:
            body += document_module(modname, reference.root, seen)
    text = "\n".join(head) + "\n"
    omitted: list[str] = []
    for line in body:
        if len(text) + len(line) + 1 > MAX_FILE_CHARS - 2_000:
            if line.startswith("### "):
                omitted.append(line.split("`")[1].split("(")[0])
            continue
        text += line + "\n"
    if omitted:
        text += "\n## Not shown (size bound)\n\n" + ", ".join(f"`{n}`" for n in omitted[:300]) + "\n"
    return text.rstrip() + "\n"


def generate(out_dir: Path = OUT_DIR, *, check: bool = False, emit: Callable[[str], None] = print) -> int:
    """Write (or, with ``check``, compare) every reference. Returns the exit code."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = 0
    for reference in REFERENCES:
        path = out_dir / f"{reference.name}.md"
        text = render(reference)
        if check:
            current = path.read_text(encoding="utf-8") if path.is_file() else ""
            if current != text:
                stale += 1
                emit(f"stale: {path} (rerun python -m solforge.tools.docs_gen)")
            continue
        path.write_text(text, encoding="utf-8")
        emit(f"wrote {path} ({len(text)} characters)")
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder (default: tools/docs/api)")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the files differ from what would be written"
    )
    args = parser.parse_args(argv)
    return generate(args.out, check=args.check, emit=lambda s: print(s, file=sys.stderr))


if __name__ == "__main__":
    raise SystemExit(main())
