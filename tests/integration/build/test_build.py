"""solforge.sandbox.build: real builds (nvcc, the CuTe DSL), the cache, and the agent-facing errors.

Tests marked slow run nvcc or the CuTe DSL. Real torch-extension builds in this file: the RMSNorm
solution (once per session, shared through the ``rmsnorm_build`` fixture), a syntax error and a
compile bomb (both without torch headers, so they fail fast).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from solforge.problems import Solution, Status
from solforge.sandbox.build import (
    build_cache_key,
    build_solution,
    disassemble,
    load_built_module,
    load_python_entry,
)
from solforge.sandbox.build import builder as builder_module

# In a comment, the binding satisfies solforge's static PYBIND11_MODULE check without pulling in
# torch's headers, so nvcc reaches (and reports) the code under test within seconds.
_PYBIND_COMMENT = '// PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }\n'


def _solution(language: str, files: dict[str, str], entry: str, **spec: Any) -> Solution:
    return Solution.model_validate(
        {
            "name": f"test-{language}",
            "definition": "test_definition",
            "spec": {"languages": [language], "entry_point": entry, **spec},
            "sources": [{"path": path, "content": content} for path, content in files.items()],
        }
    )


def _stray_processes(marker: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(proc.info["cmdline"] or []):
                found.append(" ".join(proc.info["cmdline"])[:200])
        except psutil.Error:
            continue
    return found


# --------------------------------------------------------------------------------------------
# cuda_cpp


@pytest.mark.slow
def test_cuda_cpp_builds_for_sm90a_with_kernel_resources(rmsnorm_build: Any) -> None:
    report = rmsnorm_build.report
    assert report.ok, report.log
    assert report.status is None and report.language == "cuda_cpp" and report.target_arch == "sm_90a"
    assert not report.cached
    (kernel,) = report.kernels
    assert kernel.name == "void rmsnorm_kernel<256>(float const*, float const*, float*, int, float)"
    assert kernel.mangled is not None and kernel.mangled.startswith("_Z")
    assert kernel.arch == "sm_90a"
    assert kernel.registers is not None and 0 < kernel.registers <= 255
    assert kernel.shared_bytes == 32  # partial[256 / 32] floats
    assert kernel.spill_stores_bytes == 0 and kernel.spill_loads_bytes == 0
    entry = Path(report.artifact_dir or "")
    assert (entry / "report.json").is_file() and (entry / "src" / "rmsnorm.cuh").is_file()
    assert list((entry / "build").glob("*.so")), "the extension library is kept"
    assert not list(entry.parent.glob(".stage-*")), "no staging folder is left behind"


@pytest.mark.slow
def test_second_build_is_cached_without_running_a_compiler(
    rmsnorm_build: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached build must not start a build process")

    monkeypatch.setattr(builder_module, "run_isolated", no_child)
    started = time.monotonic()
    again = build_solution(
        rmsnorm_build.solution, target_arch="sm_90a", cache_dir=rmsnorm_build.cache_dir, timeout_s=60
    )
    elapsed = time.monotonic() - started
    assert again.ok and again.cached
    assert again.cache_key == rmsnorm_build.report.cache_key
    assert again.kernels == rmsnorm_build.report.kernels
    assert elapsed < 1.0, f"cached build took {elapsed:.2f} s (cold: {rmsnorm_build.seconds:.0f} s)"
    # The name and author are not part of what gets built.
    renamed = rmsnorm_build.solution.model_copy(update={"name": "renamed", "author": "someone"})
    assert build_solution(
        renamed, target_arch="sm_90a", cache_dir=rmsnorm_build.cache_dir, timeout_s=60
    ).cached


@pytest.mark.slow
def test_load_built_module_imports_the_extension(rmsnorm_build: Any) -> None:
    module = load_built_module(rmsnorm_build.report)
    assert callable(module.run)
    assert "RMSNorm" in (module.run.__doc__ or "")


@pytest.mark.slow
def test_disassemble_sass_and_ptx(rmsnorm_build: Any) -> None:
    report = rmsnorm_build.report
    sass = disassemble(report, "rmsnorm_kernel", "sass")
    assert f"Function : {report.kernels[0].mangled}" in sass
    assert "EXIT" in sass and "/* 0x" not in sass  # instructions only, encodings dropped
    ptx = disassemble(report, report.kernels[0].name, "ptx")
    assert ptx.startswith(".visible .entry") and "rmsnorm_kernel" in ptx and "shfl.sync" in ptx
    with pytest.raises(ValueError, match="no kernel 'nope'"):
        disassemble(report, "nope", "sass")


@pytest.mark.slow
def test_cuda_syntax_error_reports_the_nvcc_line(build_cache: Path) -> None:
    source = (
        "#include <cuda_runtime.h>\n"
        "__global__ void scale(float* x, float s) {\n"
        "    x[threadIdx.x] *= s\n"
        "}\n" + _PYBIND_COMMENT
    )
    report = build_solution(
        _solution("cuda_cpp", {"kernel.cu": source}, "kernel.cu::run"),
        target_arch="sm_90a",
        cache_dir=build_cache,
        timeout_s=300,
    )
    assert not report.ok and report.status is Status.COMPILE_ERROR
    # nvcc reports a missing ';' at the next token, the closing brace on line 4.
    assert report.log.startswith('kernel.cu(4): error: expected a ";"'), report.log
    assert len(report.log) <= 4000
    for noise in ("ninja", "[1/", "FAILED:", "-isystem", "/tmp/", ".stage-"):
        assert noise not in report.log, f"{noise!r} leaked into the log:\n{report.log}"
    assert (Path(report.artifact_dir or "") / "build.log").is_file()  # the full output is kept


def test_missing_pybind11_module_says_what_to_add(build_cache: Path) -> None:
    source = "#include <torch/extension.h>\nvoid run(torch::Tensor x) {}\n"
    report = build_solution(
        _solution("cuda_cpp", {"main.cu": source}, "main.cu::run"),
        target_arch="sm_90a",
        cache_dir=build_cache,
        timeout_s=120,
    )
    assert report.status is Status.COMPILE_ERROR
    assert "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {" in report.log
    assert 'm.def("run", &run);' in report.log
    assert "main.cu" in report.log


def test_pybind11_module_with_its_own_name_is_refused(build_cache: Path) -> None:
    source = (
        '#include <torch/extension.h>\nvoid run() {}\nPYBIND11_MODULE(my_ext, m) { m.def("run", &run); }\n'
    )
    report = build_solution(
        _solution("cuda_cpp", {"main.cu": source}, "main.cu::run"),
        target_arch="sm_90a",
        cache_dir=build_cache,
        timeout_s=120,
    )
    assert report.status is Status.COMPILE_ERROR and "'my_ext'" in report.log


_BOMB = """
// 2^60 distinct instantiations: the front end never finishes (and grows ~200 MB/s).
template <int N, unsigned long long Salt>
struct Bomb {
    static constexpr unsigned long long value =
        Bomb<N - 1, Salt * 2>::value + Bomb<N - 1, Salt * 2 + 1>::value;
};
template <unsigned long long Salt>
struct Bomb<0, Salt> {
    static constexpr unsigned long long value = 1;
};
__global__ void boom(unsigned long long* out) { *out = Bomb<60, 1>::value; }
"""


@pytest.mark.slow
def test_compile_bomb_times_out_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))  # scratch folders land here
    cache = tmp_path / "cache"
    started = time.monotonic()
    report = build_solution(
        _solution("cuda_cpp", {"bomb.cu": _BOMB + _PYBIND_COMMENT}, "bomb.cu::run"),
        target_arch="sm_90a",
        cache_dir=cache,
        timeout_s=20,
        memory_limit_bytes=8 * 1024**3,
    )
    elapsed = time.monotonic() - started
    assert report.status is Status.TIMEOUT, report.log
    assert not report.ok and not report.cached and report.artifact_dir is None
    assert "20 s limit" in report.log and "template" in report.log
    assert elapsed < 35
    assert _stray_processes(str(cache)) == []
    assert _stray_processes("bomb.cu") == []
    assert not any((cache / "builds").glob(".stage-*")), "the staging folder is removed"
    assert not any(p for p in (cache / "builds").iterdir() if not p.name.startswith(".")), (
        "a timeout is not cached"
    )
    assert list(scratch_root.iterdir()) == [], "scratch folders are removed"


def test_invalid_target_arch_is_a_compile_error(build_cache: Path) -> None:
    report = build_solution(
        _solution("pytorch", {"main.py": "def run(x):\n    return x\n"}, "main.py::run"),
        target_arch="hopper",
        cache_dir=build_cache,
        timeout_s=60,
    )
    assert report.status is Status.COMPILE_ERROR and "sm_90a" in report.log


def test_cache_key_depends_on_target_and_flags(data_solution: Callable[[str], Solution]) -> None:
    solution = data_solution("cuda_rmsnorm_solution.json")
    key = build_cache_key(solution, "sm_90a")
    assert key == build_cache_key(solution.model_copy(update={"name": "other"}), "sm_90a")
    assert key != build_cache_key(solution, "sm_100a")
    data = solution.model_dump(mode="json")
    data["spec"]["compile_options"]["cuda_cflags"] = ["-O2"]
    assert key != build_cache_key(Solution.model_validate(data), "sm_90a")


# --------------------------------------------------------------------------------------------
# pytorch / triton


def test_python_syntax_error_gives_file_and_line(build_cache: Path) -> None:
    files = {
        "main.py": "from helpers import twice\n\ndef run(x):\n    return twice(x)\n",
        "helpers.py": "def twice(x):\n    return x +\n",
    }
    report = build_solution(
        _solution("pytorch", files, "main.py::run"), target_arch=None, cache_dir=build_cache, timeout_s=60
    )
    assert report.status is Status.COMPILE_ERROR
    assert report.log.startswith("helpers.py:2:"), report.log
    assert "SyntaxError" in report.log and "return x +" in report.log


def test_missing_entry_function_lists_what_the_file_defines(build_cache: Path) -> None:
    files = {"kernel.py": "import triton\n\ndef launch(x):\n    pass\n\ndef runn(x):\n    pass\n"}
    report = build_solution(
        _solution("triton", files, "kernel.py::run"), target_arch=None, cache_dir=build_cache, timeout_s=60
    )
    assert report.status is Status.COMPILE_ERROR
    assert "no top-level 'run'" in report.log
    assert "['launch', 'runn']" in report.log and "Did you mean 'runn'" in report.log


def test_python_build_does_not_run_candidate_code(build_cache: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\n\ndef run(x):\n    return x\n"
    report = build_solution(
        _solution("pytorch", {"main.py": source}, "main.py::run"),
        target_arch=None,
        cache_dir=build_cache,
        timeout_s=60,
    )
    assert report.ok, report.log
    assert not marker.exists()
    assert load_python_entry(report, _solution("pytorch", {"main.py": source}, "main.py::run"))(41) == 41
    assert marker.exists()  # loading (in the candidate process) is what runs it


def test_concurrent_builds_of_one_solution_build_once(tmp_path: Path) -> None:
    solution = _solution("pytorch", {"main.py": "def run(x, y):\n    return x + y\n"}, "main.py::run")
    reports: list[Any] = []

    def build() -> None:
        reports.append(build_solution(solution, target_arch="sm_90a", cache_dir=tmp_path, timeout_s=60))

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.ok for r in reports)
    assert sorted(r.cached for r in reports) == [False, True, True]
    assert len({r.artifact_dir for r in reports}) == 1
    assert [p.name for p in (tmp_path / "builds").iterdir() if not p.name.startswith(".")] == [
        reports[0].cache_key
    ]


def test_disassemble_refuses_python_builds(build_cache: Path) -> None:
    report = build_solution(
        _solution("pytorch", {"main.py": "def run(x):\n    return x * 2\n"}, "main.py::run"),
        target_arch=None,
        cache_dir=build_cache,
        timeout_s=60,
    )
    with pytest.raises(ValueError, match="only cuda_cpp"):
        disassemble(report, "run", "sass")


# --------------------------------------------------------------------------------------------
# cute_dsl


@pytest.mark.slow
def test_cute_dsl_solution_compiles_for_sm90a(cute_build: Any) -> None:
    report = cute_build.report
    assert report.ok, report.log
    assert report.language == "cute_dsl" and report.target_arch == "sm_90a"
    assert "imported main.py for sm_90a" in report.log


@pytest.mark.slow
def test_cute_dsl_error_is_a_compile_error_with_the_line(
    data_solution: Callable[[str], Solution], build_cache: Path
) -> None:
    data = data_solution("cute_add_solution.json").model_dump(mode="json")
    source = data["sources"][0]["content"]
    data["sources"][0]["content"] = source.replace("gc[i] = ga[i] + gb[i]", "gc[i] = ga[i] + gb_typo[i]")
    report = build_solution(
        Solution.model_validate(data), target_arch="sm_90a", cache_dir=build_cache, timeout_s=300
    )
    assert report.status is Status.COMPILE_ERROR
    assert "gb_typo" in report.log and "main.py" in report.log
    assert "\x1b[" not in report.log  # colours stripped


def test_cute_dsl_solution_file_is_valid(data_solution: Callable[[str], Solution]) -> None:
    solution = data_solution("cute_add_solution.json")
    assert solution.spec.language.value == "cute_dsl" and solution.spec.entry_point == "main.py::run"
    assert json.loads(solution.model_dump_json())["sources"][0]["path"] == "main.py"


# --------------------------------------------------------------------------------------------
# On a GPU


@pytest.mark.gpu
@pytest.mark.slow
def test_cuda_rmsnorm_runs_and_matches_torch(rmsnorm_build: Any) -> None:
    import torch

    run = load_built_module(rmsnorm_build.report).run
    x = torch.randn(64, 4096, device="cuda")
    w = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    run(x, w, out)
    torch.cuda.synchronize()
    expected = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.slow
def test_cute_add_runs_and_matches_torch(cute_build: Any) -> None:
    import torch

    run = load_python_entry(cute_build.report, cute_build.solution)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(3, 1000, device="cuda", dtype=dtype)
        y = torch.randn(3, 1000, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        run(x, y, out)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + y)
