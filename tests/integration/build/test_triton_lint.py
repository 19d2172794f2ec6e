"""The Triton lint: a kernel reading a plain module-level constant is a warning, exactly when Triton's own
front end refuses the kernel (checked here by compiling each case for sm_90 on the CPU)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from solforge.problems import Solution
from solforge.sandbox.build import build_solution
from solforge.sandbox.build.lint import lint_warnings, triton_warnings

HEADER = "import triton\nimport triton.language as tl\n\n"
KERNEL = """
@triton.jit
def _clamp(x_ptr, n{extra_args}):
    i = tl.arange(0, 16)
    x = tl.load(x_ptr + i, mask=i < n)
    tl.store(x_ptr + i, tl.minimum(x, {limit}), mask=i < n)
"""

FLAGGED = {
    "float": ("LIMIT = 448.0\n", "LIMIT", ""),
    "negative": ("LIMIT = -1.5\n", "LIMIT", ""),
    "expression": ("LIMIT = 2.0 ** 8 - 1\n", "LIMIT", ""),
    "annotated-constexpr": ("LIMIT: tl.constexpr = 448.0\n", "LIMIT", ""),
}
ACCEPTED = {
    "constexpr-instance": ("LIMIT = tl.constexpr(448.0)\n", "LIMIT", ""),
    "argument": ("LIMIT = 448.0\n", "L", ", L: tl.constexpr"),
    "argument-default": ("LIMIT = 448.0\n", "L", ", L: tl.constexpr = LIMIT"),
    "literal": ("", "448.0", ""),
}


def _module(case: tuple[str, str, str]) -> str:
    constants, limit, extra_args = case
    return HEADER + constants + KERNEL.format(limit=limit, extra_args=extra_args)


def _solution(text: str) -> Solution:
    return Solution.model_validate({
        "name": "lint", "definition": "d", "author": "tests",
        "spec": {"languages": ["triton"], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": text}],
    })


@pytest.mark.parametrize("case", FLAGGED.values(), ids=FLAGGED.keys())
def test_a_kernel_reading_a_plain_global_is_reported_with_its_line(case: tuple[str, str, str]) -> None:
    (warning,) = triton_warnings(_solution(_module(case)))
    assert warning.startswith("main.py:10:"), warning  # the tl.store line
    assert "_clamp() reads LIMIT" in warning and "(line 4)" in warning and "tl.constexpr(" in warning


@pytest.mark.parametrize("case", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_constexpr_globals_arguments_and_defaults_are_not_reported(case: tuple[str, str, str]) -> None:
    assert triton_warnings(_solution(_module(case))) == []


@pytest.mark.parametrize("text", [
    HEADER + "LIMIT = 448.0\n\n\ndef run(x):\n    return x.clamp(max=LIMIT)\n",  # read outside any kernel
    HEADER + "LIMIT = 448.0\n\n\n@triton.jit\ndef k(x_ptr):\n    LIMIT = 1.0\n    tl.store(x_ptr, LIMIT)\n",  # a local
    HEADER + "DT = tl.float16\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.zeros((16,), DT))\n",  # a dtype
    HEADER + "from math import pi as LIMIT\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, LIMIT)\n",
    HEADER + "@triton.jit\ndef k(x_ptr:\n",
], ids=["outside-a-kernel", "local-name", "dtype", "imported", "syntax-error"])
def test_names_the_kernel_does_not_read_as_plain_globals_are_not_reported(text: str) -> None:
    assert triton_warnings(_solution(text)) == []


def test_autotuned_and_called_jit_decorators_count_and_each_name_is_reported_once() -> None:
    text = HEADER + (
        "EPS = 1e-6\nLIMIT = 448.0\n\n\n"
        "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n'])\n"
        "@triton.jit(do_not_specialize=['n'])\n"
        "def k(x_ptr, n):\n"
        "    x = tl.load(x_ptr) + EPS\n"
        "    tl.store(x_ptr, tl.minimum(x + EPS, LIMIT))\n"
    )
    warnings = triton_warnings(_solution(text))
    assert [w.split(" reads ")[1].split(",")[0] for w in warnings] == ["EPS", "LIMIT"], warnings
    assert lint_warnings(_solution(text)) == warnings


def _compile_for_hopper(text: str, tmp_path: Path, name: str) -> str | None:
    """Compile ``_clamp`` with Triton's own front end and back end for sm_90 (no GPU needed); the error or None."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"lint_case_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # triton.jit reads the source back through inspect
    spec.loader.exec_module(module)
    kernel = module._clamp
    with_limit = "L" in kernel.arg_names  # the third argument, a constexpr
    signature = {"x_ptr": "*fp32", "n": "i32", **({"L": "constexpr"} if with_limit else {})}
    try:
        triton.compile(ASTSource(fn=kernel, signature=signature, constexprs={(2,): 448.0} if with_limit else {}),
                       target=GPUTarget("cuda", 90, 32))
    except Exception as error:  # Triton wraps the front end's NameError in its own error types
        return str(error)
    return None


@pytest.mark.parametrize("name", [*FLAGGED, *ACCEPTED])
def test_the_lint_warns_exactly_when_triton_refuses_the_kernel(name: str, tmp_path: Path) -> None:
    text = _module(FLAGGED.get(name) or ACCEPTED[name])
    error = _compile_for_hopper(text, tmp_path, name.replace("-", "_"))
    refused = error is not None and "Cannot access global variable" in error
    assert error is None or refused, error
    assert refused == bool(triton_warnings(_solution(text))), error


@pytest.mark.slow
def test_a_triton_build_reports_the_warning(tmp_path: Path) -> None:
    """The build itself passes (the kernel compiles only at its first call, on the GPU): the warning says why
    every workload would fail there."""
    text = _module(FLAGGED["float"]) + "\n\ndef run(x):\n    _clamp[(1,)](x, x.numel())\n"
    report = build_solution(_solution(text), target_arch="sm_90a", cache_dir=tmp_path, timeout_s=300)
    assert report.ok, report.log
    assert any("_clamp() reads LIMIT" in w for w in report.warnings), report.warnings


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[3] / "benchmarks" / "solutions").glob("*/*.json")),
                         ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_hand_written_solutions_have_no_lint_warnings(path: Path) -> None:
    """deepseek_v3_fp8_act_quant's Triton kernel once read FP8_MAX and MIN_AMAX as plain globals and failed every
    workload on an H100 (Triton 3.6)."""
    assert lint_warnings(Solution.model_validate_json(path.read_text())) == []
