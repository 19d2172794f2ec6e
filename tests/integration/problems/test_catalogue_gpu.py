"""The catalogue on a GPU: references agree across devices within each workload's tolerance, and the
largest workloads fit and run. Skipped without a CUDA GPU."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from solforge.problems import Definition, Problem, Tolerance, Workload, catalogue_names, load_problem
from solforge.problems.inputs import generate_inputs
from solforge.problems.reference import load_reference_module

pytestmark = pytest.mark.gpu

NAMES = catalogue_names()


def footprint(p: Problem, w: Workload) -> int:
    sizes = p.definition.resolve_axes(w.axes)
    shapes = [p.definition.shape_of(s, sizes) for s in [*p.definition.inputs.values(), *p.definition.outputs.values()]]
    return sum(math.prod(s) for s in shapes if s is not None)


def run(module: Any, inputs: dict[str, Any]) -> list[torch.Tensor]:
    with torch.no_grad():
        result = module.run(*inputs.values())
    return list(result) if isinstance(result, tuple | list) else [result]


def matched_ratio(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> float:
    """SOL-ExecBench's rule: |out - ref| <= atol + rtol * |ref|, compared in fp32."""
    o, r = out.float().cpu(), ref.float().cpu()
    assert torch.isfinite(o).all() and torch.isfinite(r).all()
    ok = (o - r).abs() <= tol.max_atol + tol.max_rtol * r.abs()
    return ok.float().mean().item()


def bits(t: torch.Tensor) -> torch.Tensor:
    """A view torch.equal supports for every dtype (fp8/fp4 compare as bytes)."""
    return t.view(torch.uint8) if t.element_size() == 1 else t


def to_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


@pytest.mark.parametrize("name", NAMES)
def test_gpu_reference_matches_cpu_reference_within_tolerance(name: str) -> None:
    p = load_problem(name)
    module = load_reference_module(p.definition)
    for w in sorted(p.workloads, key=lambda w: footprint(p, w))[:3]:
        inputs = generate_inputs(p.definition, w, device="cpu", seed_or_generator=99)
        cpu = run(module, inputs)
        gpu = run(module, to_device(inputs, "cuda"))
        for out_name, a, b in zip(p.definition.outputs, cpu, gpu, strict=True):
            ratio = matched_ratio(b, a, w.effective_tolerance)
            assert ratio >= w.effective_tolerance.required_matched_ratio, f"{name} {w.axes} {out_name}: {ratio:.4f}"


@pytest.mark.parametrize("name", NAMES)
def test_largest_workload_runs_on_the_gpu(name: str) -> None:
    p = load_problem(name)
    d: Definition = p.definition
    module = load_reference_module(d)
    w = max(p.workloads, key=lambda w: footprint(p, w))
    sizes = d.resolve_axes(w.axes)
    torch.cuda.reset_peak_memory_stats()
    inputs = generate_inputs(d, w, sizes, device="cuda", seed_or_generator=5)
    again = generate_inputs(d, w, sizes, device="cuda", seed_or_generator=5)
    for key, value in inputs.items():
        if isinstance(value, torch.Tensor):
            assert value.device.type == "cuda"
            assert torch.equal(bits(value), bits(again[key])), key
    del again
    outputs = run(module, inputs)
    torch.cuda.synchronize()
    for (out_name, spec), out in zip(d.outputs.items(), outputs, strict=True):
        assert tuple(out.shape) == d.shape_of(spec, sizes) and out.dtype == spec.dtype.to_torch(), out_name
        f = out.float()
        assert torch.isfinite(f).all() and f.abs().max() > 0 and f.std() > 0, out_name
    peak = torch.cuda.max_memory_allocated() / 2**30
    assert peak < 40, f"{name}: the largest workload peaked at {peak:.1f} GiB"


def test_every_dtype_generates_on_the_gpu_reproducibly() -> None:
    from solforge.problems import DType

    inputs = {f"x_{d.value}": {"shape": ["M", "N"], "dtype": d.value} for d in DType}
    d = Definition.model_validate(
        {
            "name": "dtypes",
            "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 256}},
            "inputs": inputs,
            "outputs": {"y": {"shape": [], "dtype": "float32"}},
            "reference": "def run(*a):\n    return 0\n",
        }
    )
    w = Workload(uuid="w", axes={"M": 512})
    first = generate_inputs(d, w, device="cuda", seed_or_generator=3)
    second = generate_inputs(d, w, device="cuda", seed_or_generator=3)
    other = generate_inputs(d, w, device="cuda", seed_or_generator=4)
    for key, value in first.items():
        assert value.device.type == "cuda" and value.shape == (512, 256), key
        assert torch.equal(bits(value), bits(second[key])), key
        assert not torch.equal(bits(value), bits(other[key])), key
    assert first["x_float8_e4m3fn"].float().abs().max() <= 2
    assert int(first["x_int8"].min()) >= -128 and int(first["x_int32"].abs().max()) <= 1024
    assert int(first["x_float4_e2m1"].max()) <= 15
