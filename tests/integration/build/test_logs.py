"""Compiler-output handling: error trimming, ptxas parsing, demangling, arch flags, staging."""

from __future__ import annotations

from pathlib import Path

import pytest

from solforge.problems import Solution
from solforge.sandbox.build.logs import (
    collect_warnings,
    demangle,
    parse_ptxas,
    shorten_paths,
    trim_compile_log,
)
from solforge.sandbox.build.staging import stage_sources
from solforge.sandbox.build.toolchain import (
    gencode_flags,
    has_arch_flag,
    libcuda_link_flags,
    normalize_arch,
    torch_arch_list,
)

_STAGE = "/cache/builds/.stage-0123456789abcdef-x1y2"
_NINJA_FAILURE = f"""\
[1/2] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output kernel.cuda.o.d -DTORCH_EXTENSION_NAME=solforge_ext_1 -DTORCH_API_INCLUDE_EXTENSION_H -I{_STAGE}/src -isystem /venv/torch/include -isystem /venv/torch/include/torch/csrc/api/include --expt-relaxed-constexpr -O3 --use_fast_math -gencode=arch=compute_90a,code=[sm_90a,compute_90a] -Xptxas=-v -std=c++20 -c {_STAGE}/src/kernel.cu -o kernel.cuda.o
FAILED: kernel.cuda.o
/usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output kernel.cuda.o.d -DTORCH_EXTENSION_NAME=solforge_ext_1 -DTORCH_API_INCLUDE_EXTENSION_H -I{_STAGE}/src -isystem /venv/torch/include -isystem /venv/torch/include/torch/csrc/api/include --expt-relaxed-constexpr -O3 --use_fast_math -gencode=arch=compute_90a,code=[sm_90a,compute_90a] -Xptxas=-v -std=c++20 -c {_STAGE}/src/kernel.cu -o kernel.cuda.o
{_STAGE}/src/kernel.cu(12): error: identifier "blockDimx" is undefined
      int i = blockIdx.x * blockDimx + threadIdx.x;
                           ^

{_STAGE}/src/kernel.cu(20): warning #177-D: variable "unused" was declared but never referenced
      int unused = 0;
          ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

{_STAGE}/src/kernel.cu(31): error: no instance of overloaded function "run_impl" matches the argument list
            argument types are: (at::Tensor)
      run_impl(x);
      ^

2 errors detected in the compilation of "{_STAGE}/src/kernel.cu".
ninja: build stopped: subcommand failed.
"""

_PTXAS = """\
ptxas info    : 28 bytes gmem
ptxas info    : Compiling entry function '_Z6scaleILi4EEvPff' for 'sm_90a'
ptxas info    : Function properties for _Z6scaleILi4EEvPff
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 384 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Compile time = 16.195 ms
ptxas info    : Compiling entry function '_Z4copyPKfPf' for 'sm_90a'
ptxas info    : Function properties for _Z4copyPKfPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
"""


def test_trim_keeps_errors_and_drops_ninja_noise() -> None:
    log = trim_compile_log(shorten_paths(_NINJA_FAILURE, [f"{_STAGE}/src", _STAGE]))
    lines = log.splitlines()
    assert lines[0] == 'kernel.cu(12): error: identifier "blockDimx" is undefined'
    assert "blockIdx.x * blockDimx" in log and "^" in log
    assert 'kernel.cu(31): error: no instance of overloaded function "run_impl"' in log
    assert "argument types are: (at::Tensor)" in log
    for noise in ("[1/2]", "FAILED", "ninja:", "-isystem", ".stage-", "warning #177"):
        assert noise not in log


def test_trim_caps_long_logs_and_says_so() -> None:
    many = "\n".join(
        f"kernel.cu({i}): error: something is wrong number {i}\n    code\n    ^" for i in range(500)
    )
    log = trim_compile_log(many, limit=4000)
    assert len(log) <= 4000
    assert log.startswith("kernel.cu(0): error")
    assert "[log trimmed: showing the first" in log and "of 500 error messages" in log
    assert "build.log" in log


def test_trim_falls_back_to_the_tail() -> None:
    log = trim_compile_log("line one\nsomething odd happened\nthe end\n")
    assert "the end" in log and "no error line recognised" in log


def test_linker_errors_are_errors() -> None:
    text = (
        "[2/2] c++ kernel.cuda.o -shared -lcuda -L/venv/torch/lib -lc10 -ltorch -o ext.so\n"
        "FAILED: ext.so\n/usr/bin/ld: cannot find -lfoo: No such file or directory\n"
        "collect2: error: ld returned 1 exit status\n"
    )
    assert trim_compile_log(text).startswith("/usr/bin/ld: cannot find -lfoo")


def test_warnings_are_collected() -> None:
    warnings = collect_warnings(shorten_paths(_NINJA_FAILURE, [f"{_STAGE}/src"]))
    assert warnings == ['kernel.cu(20): warning #177-D: variable "unused" was declared but never referenced']


def test_parse_ptxas_per_kernel() -> None:
    scale, copy = parse_ptxas(_PTXAS)
    assert (scale.mangled, scale.arch, scale.registers) == ("_Z6scaleILi4EEvPff", "sm_90a", 40)
    assert (scale.shared_bytes, scale.constant_bytes, scale.stack_bytes) == (4096, 392, 8)
    assert (scale.spill_stores_bytes, scale.spill_loads_bytes) == (4, 4)
    assert (copy.registers, copy.shared_bytes, copy.constant_bytes, copy.spill_stores_bytes) == (
        12,
        0,
        None,
        0,
    )


def test_demangle() -> None:
    names = demangle(["_Z6scaleILi4EEvPff", "not_mangled"])
    assert names["not_mangled"] == "not_mangled"
    assert names["_Z6scaleILi4EEvPff"] in ("void scale<4>(float*, float)", "_Z6scaleILi4EEvPff")


def test_arch_spellings_and_flags() -> None:
    assert normalize_arch("sm_90a") == normalize_arch("9.0a") == normalize_arch("90a") == "sm_90a"
    assert normalize_arch("SM_100A") == "sm_100a" and normalize_arch("sm_80") == "sm_80"
    with pytest.raises(ValueError, match="sm_90a"):
        normalize_arch("hopper")
    assert gencode_flags("sm_90a") == ["-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"]
    assert gencode_flags("sm_100a") == ["-gencode=arch=compute_100a,code=[sm_100a,compute_100a]"]
    assert torch_arch_list("sm_90a") == "9.0a" and torch_arch_list("sm_100a") == "10.0a"
    assert has_arch_flag(["-O3", "-arch=sm_90a"]) and has_arch_flag(
        ["-gencode", "arch=compute_90,code=sm_90"]
    )
    assert not has_arch_flag(["-O3", "--use_fast_math", "-Xptxas=-v"])


def test_libcuda_flags_keep_or_drop_consistently() -> None:
    flags, warnings = libcuda_link_flags(["-lcuda", "-lcublas"])
    assert "-lcublas" in flags
    assert ("-lcuda" in flags or "-l:libcuda.so.1" in flags) != bool(warnings)
    assert libcuda_link_flags(["-lm"]) == (["-lm"], [])


def _raw_solution(paths: list[str]) -> Solution:
    """A solution whose paths skip validation (the model would refuse them): staging must too."""
    from solforge.problems import BuildSpec, SourceFile

    spec = BuildSpec.model_validate({"languages": ["pytorch"], "entry_point": "main.py::run"})
    sources = [SourceFile.model_construct(path=p, content="x = 1\n") for p in paths]
    return Solution.model_construct(name="s", definition="d", spec=spec, sources=sources)


@pytest.mark.parametrize("bad", ["../escape.py", "/etc/passwd", "a/../../escape.py"])
def test_staging_refuses_paths_that_leave_the_folder(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="leaves the solution folder"):
        stage_sources(_raw_solution(["main.py", bad]), tmp_path / "src")
    assert not (tmp_path / "escape.py").exists()


def test_staging_refuses_collisions(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a folder"):
        stage_sources(_raw_solution(["main.py", "pkg", "pkg/mod.py"]), tmp_path / "src")


def test_staging_writes_nested_files(tmp_path: Path) -> None:
    dest = stage_sources(_raw_solution(["main.py", "pkg/sub/mod.py"]), tmp_path / "src")
    assert (dest / "pkg" / "sub" / "mod.py").read_text() == "x = 1\n"
