"""The examples in the documentation agents read: they parse, the Python ones run on the CPU, the CuTe DSL
ones compile for sm_90a, and the CUDA C++ one compiles with nvcc (slow)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from solforge.problems import Definition, parse_solution

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "tools" / "docs"
GUIDES = [*sorted(DOCS.glob("*.md")), ROOT / "PROTOCOL.md"]


def blocks(path: Path, lang: str) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", path.read_text(), re.S)]


def solution_format_block(marker: str) -> str:
    for code in blocks(DOCS / "solution-format.md", "python") + blocks(DOCS / "solution-format.md", "cpp"):
        if marker in code.splitlines()[0]:
            return code
    raise AssertionError(f"no example marked {marker!r}")


@pytest.mark.parametrize("path", GUIDES, ids=lambda p: p.name)
def test_python_and_json_blocks_parse(path: Path) -> None:
    for code in blocks(path, "python"):
        compile(code, f"{path.name}", "exec")
    for text in blocks(path, "json"):
        json.loads(text)


def test_running_example_definition_validates() -> None:
    (definition,) = [json.loads(t) for t in blocks(DOCS / "solution-format.md", "json") if '"axes"' in t]
    parsed = Definition.model_validate(definition)
    assert list(parsed.inputs) == ["x", "weight"] and list(parsed.outputs) == ["out"]
    (protocol_example,) = blocks(ROOT / "PROTOCOL.md", "json")
    solution = json.loads(protocol_example)
    solution["sources"][0]["content"] = "// kernel\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n"
    assert parse_solution(solution).spec.entry_point == "kernel.cu::run"


def _run_rmsnorm(module_code: str, tmp_path: Path, env: dict[str, str] | None = None) -> float:
    """Run an RMSNorm example on random bf16 data on the CPU; return the matched ratio (tolerance 1e-2)."""
    (tmp_path / "example.py").write_text(module_code)
    script = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("example", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
x = torch.randn(37, 4096, dtype=torch.bfloat16); w = torch.randn(4096, dtype=torch.bfloat16); out = torch.empty_like(x)
m.run(x, w, out)
xf = x.float(); ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float())
ok = ((out.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).float().mean().item()
print(ok)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "example.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return float(proc.stdout.strip().splitlines()[-1])


def test_pytorch_example_is_correct(tmp_path: Path) -> None:
    assert _run_rmsnorm(solution_format_block("pytorch"), tmp_path) >= 0.99


def test_triton_example_is_correct_in_the_interpreter(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    assert _run_rmsnorm(solution_format_block("triton"), tmp_path, {"TRITON_INTERPRET": "1"}) >= 0.99


@pytest.mark.parametrize(
    ("doc", "index", "function"), [("solution-format.md", None, "rmsnorm"), ("cute-dsl.md", 0, "add")]
)
def test_cute_dsl_examples_compile_for_sm90a(
    doc: str, index: int | None, function: str, tmp_path: Path
) -> None:
    pytest.importorskip("cutlass")
    code = solution_format_block("cute_dsl") if index is None else blocks(DOCS / doc, "python")[index]
    (tmp_path / "example.py").write_text(code)
    args = (
        "_wrap(x), _wrap(w), _wrap(o), 1e-6, cuda.CUstream(0)"
        if function == "rmsnorm"
        else "_t(x), _t(x), _t(o), cuda.CUstream(0)"
    )
    wrap = "_wrap" if function == "rmsnorm" else "_t"
    script = f"""
import importlib.util, sys, torch
import cuda.bindings.driver as cuda
import cutlass.cute as cute
spec = importlib.util.spec_from_file_location("example", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
x = torch.randn(37, 4096, dtype=torch.bfloat16); w = torch.randn(4096, dtype=torch.bfloat16); o = torch.empty_like(x)
{wrap} = getattr(m, "{wrap}")
print(cute.compile(m.{function}, {args}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "example.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CUTE_DSL_ARCH": "sm_90a"},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_cuda_example_compiles_for_sm90a(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    torch_ext = pytest.importorskip("torch.utils.cpp_extension")
    import sysconfig

    includes = [f"-I{p}" for p in torch_ext.include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    nvidia = Path(torch_ext.__file__).parents[2] / "nvidia"
    includes += [f"-I{p}" for p in nvidia.glob("cu*/include")]
    (tmp_path / "kernel.cu").write_text(solution_format_block("cuda_cpp"))
    proc = subprocess.run(
        [
            nvcc,
            "-std=c++20",
            "-O3",
            "--use_fast_math",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-Xptxas",
            "-v",
            "-c",
            str(tmp_path / "kernel.cu"),
            "-o",
            str(tmp_path / "kernel.o"),
            *includes,
            "-DTORCH_EXTENSION_NAME=example",
            "-DTORCH_API_INCLUDE_EXTENSION_H",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rmsnorm_kernel" in proc.stderr and "spill" not in proc.stderr.replace("0 bytes spill", "")
