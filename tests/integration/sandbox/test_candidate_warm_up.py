"""A spare candidate process imports what a solution's first tensor calls would import lazily."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

_PROBE = """
import json, sys
import torch
if sys.argv[1] == "warm":
    from solforge.sandbox.candidate import import_torch_lazy_modules
    import_torch_lazy_modules()
before = set(sys.modules)
torch.empty(2, 3).dim_order()
torch.empty(4, 5).t().contiguous().dim_order()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _first_call_imports(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_dim_order_imports_sympy_lazily_so_a_spare_imports_it_first() -> None:
    cold = _first_call_imports("cold")
    # What a solution's first dim_order() costs a fresh process (3 s on the H200 without bytecode).
    assert "torch.fx.experimental.symbolic_shapes" in cold and "sympy" in cold
    warm = _first_call_imports("warm")
    assert not [m for m in warm if m.startswith(("sympy", "torch.fx"))], warm


def test_a_spare_for_triton_prepares_triton_before_a_solution_compiles() -> None:
    triton_cache = pytest.importorskip("triton.runtime.cache")
    from solforge.sandbox.candidate import _import_language_packages

    triton_cache.triton_key.cache_clear()
    _import_language_packages("cpu", ["triton"])
    assert triton_cache.triton_key.cache_info().currsize == 0  # a CPU candidate's start-up stays short
    _import_language_packages("cuda", ["pytorch"])
    assert triton_cache.triton_key.cache_info().currsize == 0  # only for Triton, or an unknown language
    _import_language_packages("cuda", ["triton"])
    # What the first JIT compile would compute (0.38 s of a first call on the H200): already kept.
    assert triton_cache.triton_key.cache_info().currsize == 1
