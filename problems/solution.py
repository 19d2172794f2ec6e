"""solution.json: a candidate implementation of a definition."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from .base import FormatModel, NonEmptyStr

if TYPE_CHECKING:
    from .definition import Definition

MAX_SOURCE_BYTES = 1_000_000
"""Largest single source file accepted (1 MB): generous for hand-written kernels, fatal to a 50 MB payload."""
MAX_TOTAL_SOURCE_BYTES = 4_000_000
"""Largest total of all sources."""


class Language(StrEnum):
    """The languages solforge builds and runs. C++ and Python languages do not mix in one solution."""

    pytorch = "pytorch"
    triton = "triton"
    cute_dsl = "cute_dsl"
    cuda_cpp = "cuda_cpp"

    @property
    def is_cpp(self) -> bool:
        return self is Language.cuda_cpp


# Languages SOL-ExecBench accepts that solforge maps onto its own: cutlass, cublas and cudnn are C++
# sources built exactly as cuda_cpp (headers and libraries are the solution's to bring).
_LANGUAGE_ALIASES = {"cuda": "cuda_cpp", "cutlass": "cuda_cpp", "cublas": "cuda_cpp", "cudnn": "cuda_cpp"}
_CPP_SUFFIXES = {".cu", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cuh"}


class SourceFile(FormatModel):
    """One file of the solution, placed at ``path`` in the build folder."""

    path: NonEmptyStr
    """Relative path, no ``..``, for example ``kernel.cu`` or ``src/main.py``."""
    content: str
    """The whole text of the file."""

    @field_validator("path")
    @classmethod
    def _validate_path(cls, path: str) -> str:
        pure = PurePosixPath(path.replace("\\", "/"))
        if pure.is_absolute() or path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
            raise ValueError(f"source path {path!r} is absolute; give a path relative to the solution folder")
        if ".." in pure.parts:
            raise ValueError(f"source path {path!r} climbs out with '..'; keep every file inside the solution folder")
        if any(ch in path for ch in "\0\n\r"):
            raise ValueError(f"source path {path!r} contains control characters")
        return path

    @field_validator("content")
    @classmethod
    def _validate_size(cls, content: str) -> str:
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"source is not valid Unicode (a lone surrogate at character {exc.start}); save it as UTF-8 text"
            ) from None
        size = len(content.encode("utf-8"))
        if size > MAX_SOURCE_BYTES:
            raise ValueError(f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES} bytes per file")
        return content


class CompileOptions(FormatModel):
    """Compiler and linker flags for C++ solutions."""

    cflags: list[str] = Field(default_factory=list)
    """Extra flags for the host C++ compiler."""
    cuda_cflags: list[str] = Field(default_factory=lambda: ["-O3", "--use_fast_math"])
    """Extra flags for nvcc. An -arch/-gencode here overrides the target solforge picks."""
    ld_flags: list[str] = Field(default_factory=lambda: ["-lcuda"])
    """Extra linker flags."""


class BuildSpec(FormatModel):
    """How to build and call the solution."""

    languages: list[Language] = Field(min_length=1)
    target_hardware: list[str] = Field(default_factory=lambda: ["LOCAL"])
    """GPUs the solution is meant for (B200, H200, LOCAL, ...); informative."""
    entry_point: NonEmptyStr
    """``file::function``, for example ``main.py::run`` or ``kernel.cu::run``."""
    dependencies: list[str] = Field(default_factory=list)
    destination_passing_style: bool = True
    """True: ``run(*inputs, *outputs)`` writes outputs in place. False: ``run(*inputs)`` returns them."""
    binding: str | None = None
    """``torch`` for C++ solutions (the only binding)."""
    compile_options: CompileOptions | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_legacy_language(cls, data: object) -> object:
        # Early SOL-ExecBench samples wrote "language": "cuda" instead of "languages": [...].
        if isinstance(data, dict):
            data = dict(data)
            if "languages" not in data and "language" in data:
                data["languages"] = [data.pop("language")]
            if isinstance(data.get("languages"), str):
                data["languages"] = [data["languages"]]
            if isinstance(data.get("languages"), list):
                data["languages"] = [_LANGUAGE_ALIASES.get(str(x), x) for x in data["languages"]]
        return data

    @model_validator(mode="after")
    def _validate_entry_and_languages(self) -> BuildSpec:
        if self.entry_point.count("::") != 1:
            raise ValueError(f"entry_point {self.entry_point!r} must be 'file::function', for example 'main.py::run'")
        cpp = {lang for lang in self.languages if lang.is_cpp}
        if cpp and len(cpp) != len(self.languages):
            raise ValueError(f"languages {self.languages} mix C++ and Python; a solution is one or the other")
        suffix = PurePosixPath(self.entry_file).suffix
        if cpp and suffix not in _CPP_SUFFIXES:
            raise ValueError(f"a C++ solution needs a C++/CUDA entry file, got {self.entry_file!r}")
        if not cpp and suffix != ".py":
            raise ValueError(f"a Python solution needs a .py entry file, got {self.entry_file!r}")
        return self

    @property
    def entry_file(self) -> str:
        return self.entry_point.split("::")[0]

    @property
    def entry_symbol(self) -> str:
        return self.entry_point.split("::")[1]

    @property
    def language(self) -> Language:
        """The language the solution is built as (the most specific one named)."""
        for lang in (Language.cuda_cpp, Language.cute_dsl, Language.triton, Language.pytorch):
            if lang in self.languages:
                return lang
        raise AssertionError("languages is never empty")

    @property
    def effective_compile_options(self) -> CompileOptions:
        return self.compile_options or CompileOptions()


class Solution(FormatModel):
    """A candidate implementation of one definition."""

    name: NonEmptyStr
    definition: NonEmptyStr
    """Name of the definition it solves."""
    author: NonEmptyStr = "unknown"
    description: str | None = None
    spec: BuildSpec
    sources: list[SourceFile] = Field(min_length=1)

    @model_validator(mode="after")
    def _validate_sources(self) -> Solution:
        paths = [s.path for s in self.sources]
        dupes = sorted({p for p in paths if paths.count(p) > 1})
        if dupes:
            raise ValueError(f"sources repeat the paths {dupes}; each path once")
        if self.spec.entry_file not in paths:
            raise ValueError(f"entry file {self.spec.entry_file!r} (from spec.entry_point) is not among sources {paths}")
        total = sum(len(s.content.encode("utf-8", "surrogatepass")) for s in self.sources)
        if total > MAX_TOTAL_SOURCE_BYTES:
            raise ValueError(f"sources total {total} bytes; the limit is {MAX_TOTAL_SOURCE_BYTES}")
        return self

    def content_hash(self) -> str:
        """SHA-256 of everything that changes what gets built and run (not the name or author)."""
        payload = {
            "languages": [lang.value for lang in self.spec.languages],
            "entry_point": self.spec.entry_point,
            "dps": self.spec.destination_passing_style,
            "compile_options": self.spec.effective_compile_options.model_dump(mode="json"),
            "dependencies": self.spec.dependencies,
            "sources": sorted((s.path, s.content) for s in self.sources),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def source(self, path: str) -> SourceFile | None:
        return next((s for s in self.sources if s.path == path), None)


def reference_solution(definition: Definition) -> Solution:
    """The definition's own reference as a pytorch solution (returns its outputs, no DPS).

    Every catalogue problem must pass with it: it is how the catalogue is checked end to end.
    """
    return Solution(
        name=f"{definition.name}__reference",
        definition=definition.name,
        author="solforge",
        description="The problem's PyTorch reference, run as a solution.",
        spec=BuildSpec(
            languages=[Language.pytorch],
            entry_point="reference.py::run",
            destination_passing_style=False,
        ),
        sources=[SourceFile(path="reference.py", content=definition.reference)],
    )
