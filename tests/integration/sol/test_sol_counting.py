"""FLOP and byte counting from the reference: meta tracing, the device fallback, overrides."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from solforge.problems import Definition, Problem, Workload  # noqa: E402
from solforge.problems.reference import load_reference_module  # noqa: E402
from solforge.sandbox.sol.counting import (  # noqa: E402
    SOFTMAX_COST,
    CountingError,
    SolCounts,
    count_workload,
    counts_for_problem,
    load_counts,
)


def make(inputs: dict[str, Any], outputs: dict[str, Any], reference: str, axes: dict[str, Any] | None = None,
         **extra: Any) -> Definition:
    """A definition whose axes are every name the shapes use (var unless given)."""
    names: dict[str, Any] = {}
    for spec in [*inputs.values(), *outputs.values()]:
        for dim in spec.get("shape") or []:
            if isinstance(dim, str):
                names.setdefault(dim, {"type": "var"})
    names.update(axes or {})
    return Definition.model_validate(
        {"name": "t", "axes": names, "inputs": inputs, "outputs": outputs,
         "reference": textwrap.dedent(reference), **extra}
    )


def t(shape: list[str] | None, dtype: str) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype}


# -- tensor-core operators ------------------------------------------------------------------------------


def test_matmul_is_2mnk_keyed_by_operand_dtype() -> None:
    d = make({"a": t(["M", "K"], "bfloat16"), "b": t(["N", "K"], "bfloat16")}, {"c": t(["M", "N"], "bfloat16")},
             """
             import torch
             def run(a, b):
                 return a @ b.T
             """)
    c = count_workload(d, {"M": 128, "N": 256, "K": 512})
    assert c.method == "meta"
    assert c.tensor_core_flops == {"bfloat16": 2 * 128 * 256 * 512}
    assert c.other_flops == 0
    assert c.bytes == 2 * (128 * 512 + 256 * 512 + 128 * 256)
    assert c.input_bytes == 2 * (128 * 512 + 256 * 512) and c.output_bytes == 2 * 128 * 256


def test_linear_with_bias_and_3d_input() -> None:
    d = make({"x": t(["B", "S", "K"], "float16"), "w": t(["N", "K"], "float16"), "b": t(["N"], "float16")},
             {"y": t(["B", "S", "N"], "float16")},
             """
             import torch.nn.functional as F
             def run(x, w, b):
                 return F.linear(x, w, b)
             """)
    c = count_workload(d, {"B": 2, "S": 64, "K": 128, "N": 96})
    assert c.tensor_core_flops == {"float16": 2 * (2 * 64) * 96 * 128}


def test_bmm() -> None:
    d = make({"a": t(["B", "M", "K"], "bfloat16"), "b": t(["B", "K", "N"], "bfloat16")},
             {"c": t(["B", "M", "N"], "bfloat16")},
             """
             import torch
             def run(a, b):
                 return torch.bmm(a, b)
             """)
    c = count_workload(d, {"B": 8, "M": 64, "N": 32, "K": 16})
    assert c.tensor_core_flops == {"bfloat16": 2 * 8 * 64 * 32 * 16}


def test_fp32_matmul_is_keyed_float32() -> None:
    d = make({"a": t(["M", "K"], "float32"), "b": t(["K", "N"], "float32")}, {"c": t(["M", "N"], "float32")},
             """
             import torch
             def run(a, b):
                 return torch.matmul(a, b)
             """)
    c = count_workload(d, {"M": 16, "N": 16, "K": 16})
    assert c.tensor_core_flops == {"float32": 2 * 16**3}


def test_conv2d_counts_every_mac() -> None:
    d = make({"x": t(["N", "C", "H", "W"], "bfloat16"), "w": t(["K", "C", "R", "S"], "bfloat16")},
             {"y": t(["N", "K", "H", "W"], "bfloat16")},
             """
             import torch.nn.functional as F
             def run(x, w):
                 return F.conv2d(x, w, padding=1)
             """)
    sizes = {"N": 2, "C": 8, "H": 16, "W": 16, "K": 4, "R": 3, "S": 3}
    c = count_workload(d, sizes)
    assert c.tensor_core_flops == {"bfloat16": 2 * 2 * 4 * 16 * 16 * 8 * 3 * 3}


def test_fp8_scaled_mm() -> None:
    d = make({"a": t(["M", "K"], "float8_e4m3fn"), "b": t(["N", "K"], "float8_e4m3fn"),
              "sa": t([], "float32"), "sb": t([], "float32")},
             {"c": t(["M", "N"], "bfloat16")},
             """
             import torch
             def run(a, b, sa, sb):
                 return torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)
             """)
    c = count_workload(d, {"M": 64, "N": 48, "K": 32})
    assert c.tensor_core_flops == {"float8_e4m3fn": 2 * 64 * 48 * 32}
    assert c.bytes == 64 * 32 + 48 * 32 + 4 + 4 + 2 * 64 * 48  # 0-D scales are one element each


def test_nvfp4_scaled_mm_counts_the_logical_reduction_length() -> None:
    d = make({"a": t(["M", "K2"], "float4_e2m1fn_x2"), "b": t(["N", "K2"], "float4_e2m1fn_x2"),
              "sa": t(["SA"], "float8_e4m3fn"), "sb": t(["SB"], "float8_e4m3fn")},
             {"c": t(["M", "N"], "bfloat16")},
             """
             import torch
             def run(a, b, sa, sb):
                 return torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)
             """,
             axes={"K2": {"type": "expr", "expression": "K // 2"}, "K": {"type": "var"},
                   "SA": {"type": "expr", "expression": "M * K // 16"}, "SB": {"type": "expr", "expression": "N * K // 16"}})
    c = count_workload(d, {"M": 128, "N": 256, "K": 128})
    assert c.tensor_core_flops == {"float4_e2m1fn_x2": 2 * 128 * 256 * 128}
    # Packed fp4 shapes count bytes: 64 bytes per row of 128 values.
    assert c.input_bytes == 128 * 64 + 256 * 64 + 128 * 8 + 256 * 8


# -- attention ------------------------------------------------------------------------------------------

SDPA_INPUTS = {"q": t(["B", "H", "S", "D"], "bfloat16"), "k": t(["B", "H", "S", "D"], "bfloat16"),
               "v": t(["B", "H", "S", "D"], "bfloat16")}


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_counts_two_products_and_the_softmax(causal: bool) -> None:
    d = make(SDPA_INPUTS, {"o": t(["B", "H", "S", "D"], "bfloat16")},
             f"""
             import torch.nn.functional as F
             def run(q, k, v):
                 return F.scaled_dot_product_attention(q, k, v, is_causal={causal})
             """)
    b, h, s, dim = 2, 4, 128, 64
    c = count_workload(d, {"B": b, "H": h, "S": s, "D": dim})
    pairs = s * (s + 1) // 2 if causal else s * s
    assert c.tensor_core_flops == {"bfloat16": 2 * b * h * pairs * (dim + dim)}
    assert c.other_flops == b * h * pairs * (SOFTMAX_COST + 1)  # softmax + scale
    assert list(c.flops_by_op) == ["scaled_dot_product_attention"]


def test_causal_pairs_with_more_queries_than_keys() -> None:
    d = make({"q": t(["B", "Q", "D"], "float16"), "k": t(["B", "S", "D"], "float16"), "v": t(["B", "S", "D"], "float16")},
             {"o": t(["B", "Q", "D"], "float16")},
             """
             import torch.nn.functional as F
             def run(q, k, v):
                 return F.scaled_dot_product_attention(q, k, v, is_causal=True)
             """)
    c = count_workload(d, {"B": 1, "Q": 6, "S": 4, "D": 8})
    pairs = 1 + 2 + 3 + 4 + 4 + 4  # top-left aligned: row i keeps min(i + 1, S) keys
    assert c.tensor_core_flops == {"float16": 2 * pairs * 16}


def test_hand_written_attention() -> None:
    d = make(SDPA_INPUTS, {"o": t(["B", "H", "S", "D"], "bfloat16")},
             """
             import math
             import torch
             def run(q, k, v):
                 scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
                 p = torch.softmax(scores.float(), dim=-1).to(q.dtype)
                 return torch.matmul(p, v)
             """)
    b, h, s, dim = 1, 2, 32, 16
    c = count_workload(d, {"B": b, "H": h, "S": s, "D": dim})
    assert c.tensor_core_flops == {"bfloat16": 2 * 2 * b * h * s * s * dim}
    assert c.other_flops == b * h * s * s * (1 + SOFTMAX_COST)  # the division, then the softmax


# -- other operators ------------------------------------------------------------------------------------


def test_rmsnorm() -> None:
    d = make({"x": t(["T", "H"], "bfloat16"), "w": t(["H"], "bfloat16")}, {"y": t(["T", "H"], "bfloat16")},
             """
             import torch
             def run(x, w):
                 xf = x.float()
                 var = xf.pow(2).mean(-1, keepdim=True)
                 y = xf * torch.rsqrt(var + 1e-6)
                 return (y * w.float()).to(x.dtype)
             """)
    tokens, hidden = 16, 1024
    c = count_workload(d, {"T": tokens, "H": hidden})
    # square 1 + mean 1 + normalise 1 + weight 1 per element; + eps 1 and rsqrt 2 per row
    assert c.other_flops == 4 * tokens * hidden + 3 * tokens
    assert c.tensor_core_flops == {}
    assert c.bytes == 2 * tokens * hidden * 2 + 2 * hidden


def test_softmax_and_layer_norm() -> None:
    d = make({"x": t(["R", "C"], "float32")}, {"y": t(["R", "C"], "float32")},
             """
             import torch
             import torch.nn.functional as F
             def run(x):
                 return F.layer_norm(torch.softmax(x, dim=-1), x.shape[-1:])
             """)
    c = count_workload(d, {"R": 8, "C": 100})
    assert c.other_flops == 800 * SOFTMAX_COST + 800 * 8
    assert set(c.flops_by_op) == {"_softmax", "native_layer_norm"}


def test_transcendentals_cost_more_than_adds() -> None:
    d = make({"x": t(["N"], "float32")}, {"y": t(["N"], "float32")},
             """
             import torch
             def run(x):
                 return torch.exp(x) + torch.nn.functional.silu(x) + x.sum()
             """)
    c = count_workload(d, {"N": 10})
    assert c.flops_by_op["exp"] == 20 and c.flops_by_op["silu"] == 40 and c.flops_by_op["sum"] == 10
    assert c.flops_by_op["add"] == 20


def test_cuda_and_explicit_devices_stay_on_meta() -> None:
    d = make({"x": t(["N"], "float32")}, {"y": t(["N"], "float32")},
             """
             import torch
             def run(x):
                 x = x.cuda()
                 y = torch.zeros(x.shape, device="cuda") + torch.ones(x.shape[0], device=x.device)
                 return (x + y).to("cuda:0")
             """)
    c = count_workload(d, {"N": 7})
    assert c.method == "meta" and c.other_flops == 14


# -- the device fallback --------------------------------------------------------------------------------

DATA_DEPENDENT = """
import torch
def run(x, w):
    k = int((x[:, 0] > 0).sum().item())
    return x[:k] @ w
"""


def test_data_dependent_reference_falls_back_to_real_inputs() -> None:
    d = make({"x": t(["M", "K"], "float32"), "w": t(["K", "N"], "float32")}, {"y": t(["M", "N"], "float32")},
             DATA_DEPENDENT)
    x = torch.ones(10, 4)
    x[7:, 0] = -1  # seven rows pass the filter
    c = count_workload(d, {"M": 10, "K": 4, "N": 3}, {"x": x, "w": torch.ones(4, 3)})
    assert c.method == "device"
    assert c.tensor_core_flops == {"float32": 2 * 7 * 3 * 4}
    assert "item" in c.notes[0]


def test_device_fallback_generates_inputs_when_none_are_given() -> None:
    d = make({"x": t(["M", "K"], "bfloat16"), "w": t(["K", "N"], "bfloat16")}, {"y": t(["M", "N"], "bfloat16")},
             DATA_DEPENDENT)
    c = count_workload(d, {"M": 10, "K": 4, "N": 3})
    assert c.method == "device"
    assert set(c.tensor_core_flops) <= {"bfloat16"}


def test_custom_inputs_entrypoint_feeds_the_fallback() -> None:
    d = make({"x": t(["M"], "float32")}, {"y": t([], "float32")},
             """
             import torch
             def make_inputs(axes, device):
                 return {"x": torch.arange(axes["M"], dtype=torch.float32, device=device) - 2}
             def run(x):
                 return torch.exp(x[x > 0]).sum()
             """, custom_inputs_entrypoint="make_inputs")
    c = count_workload(d, {"M": 6})  # x = [-2, -1, 0, 1, 2, 3]: three positive
    assert c.method == "device"
    assert c.flops_by_op["exp"] == 3 * 2 and c.flops_by_op["gt"] == 6


def test_a_reference_that_fails_everywhere_asks_for_an_override() -> None:
    d = make({"x": t(["N"], "float32")}, {"y": t(["N"], "float32")},
             """
             def run(x):
                 raise RuntimeError("broken reference")
             """)
    with pytest.raises(CountingError, match="override"):
        count_workload(d, {"N": 4})


# -- overrides ------------------------------------------------------------------------------------------

BROKEN = "def run(a, b):\n    raise RuntimeError('must not run')\n"


def test_full_override_wins_without_running_the_reference() -> None:
    d = make({"a": t(["M", "K"], "bfloat16"), "b": t(["K", "N"], "bfloat16")}, {"c": t(["M", "N"], "bfloat16")},
             BROKEN, flops={"tensor_core_flops": "2 * M * N * K", "other_flops": 5}, bytes="M * K")
    c = count_workload(d, {"M": 4, "N": 8, "K": 16})
    assert c.method == "override"
    assert c.tensor_core_flops == {"bfloat16": 2 * 4 * 8 * 16}  # keyed by the widest float input
    assert c.other_flops == 5 and c.bytes == 64
    assert c.overridden == ["tensor_core_flops", "other_flops", "bytes"]
    assert c.input_bytes == 2 * (64 + 128)  # the derived split is still reported


def test_partial_override_keeps_the_derived_rest() -> None:
    d = make({"a": t(["M", "K"], "bfloat16"), "b": t(["K", "N"], "bfloat16")}, {"c": t(["M", "N"], "bfloat16")},
             "import torch\ndef run(a, b):\n    return torch.relu(a @ b)\n", flops={"other_flops": "M * N * 3"})
    c = count_workload(d, {"M": 4, "N": 8, "K": 16})
    assert c.method == "meta" and c.overridden == ["other_flops"]
    assert c.tensor_core_flops == {"bfloat16": 2 * 4 * 8 * 16}
    assert c.other_flops == 96


def test_tensor_core_dtype_override_rekeys_derived_flops() -> None:
    reference = """
    import torch
    def run(a, b):
        return a.to(torch.bfloat16) @ b.to(torch.bfloat16)  # the reference dequantises; a kernel would not
    """
    d = make({"a": t(["M", "K"], "float8_e4m3fn"), "b": t(["K", "N"], "float8_e4m3fn")},
             {"c": t(["M", "N"], "bfloat16")}, reference, flops={"tensor_core_dtype": "float8_e4m3fn"})
    c = count_workload(d, {"M": 4, "N": 8, "K": 16})
    assert c.tensor_core_flops == {"float8_e4m3fn": 2 * 4 * 8 * 16}
    assert c.overridden == ["tensor_core_dtype"]


def test_override_expressions_see_scalar_inputs() -> None:
    d = make({"x": t(["T", "H"], "bfloat16"), "top_k": t(None, "int64")}, {"y": t(["T", "H"], "bfloat16")},
             "def run(x, top_k):\n    return x\n", flops={"tensor_core_flops": "2 * T * H * top_k", "other_flops": 0})
    c = count_workload(d, {"T": 2, "H": 3}, workload=Workload(uuid="w", axes={"T": 2, "H": 3},
                                                                inputs={"top_k": {"type": "scalar", "value": 4}}))
    assert c.tensor_core_flops == {"bfloat16": 48}
    assert c.input_bytes == 2 * 2 * 3  # the Python scalar is free


def test_bad_override_expression_is_a_counting_error() -> None:
    d = make({"x": t(["N"], "float32")}, {"y": t(["N"], "float32")}, "def run(x):\n    return x\n",
             bytes="N * missing")
    with pytest.raises(CountingError, match="bytes override"):
        count_workload(d, {"N": 4})


# -- bytes ----------------------------------------------------------------------------------------------


def test_bytes_follow_storage_sizes() -> None:
    d = make({"a": t(["M", "K"], "float8_e5m2"), "packed": t(["N", "K2"], "float4_e2m1fn_x2"),
              "codes": t(["N", "K"], "float4_e2m1"), "scale": t(["M"], "float32"), "flag": t([], "bool"),
              "alpha": t(None, "float32")},
             {"out": t(["M", "N"], "bfloat16"), "amax": t([], "float32")},
             """
             import torch
             def run(a, packed, codes, scale, flag, alpha):
                 return torch.zeros(a.shape[0], packed.shape[0], dtype=torch.bfloat16, device=a.device), scale.amax()
             """,
             axes={"K2": {"type": "expr", "expression": "K // 2"}})
    m, n, k = 8, 4, 32
    c = count_workload(d, {"M": m, "N": n, "K": k}, {"alpha": 0.5})
    assert c.input_bytes == m * k + n * (k // 2) + n * k + 4 * m + 1
    assert c.output_bytes == 2 * m * n + 4
    assert c.bytes == c.input_bytes + c.output_bytes


# -- problems and the cache -----------------------------------------------------------------------------


def test_counts_for_problem_caches_to_json(tmp_path: Path) -> None:
    d = make({"a": t(["M", "K"], "bfloat16"), "b": t(["N", "K"], "bfloat16")}, {"c": t(["M", "N"], "bfloat16")},
             "def run(a, b):\n    return a @ b.T\n", axes={"N": {"type": "const", "value": 32}, "K": {"type": "const", "value": 64}})
    problem = Problem(definition=d, workloads=[Workload(uuid="w1", axes={"M": 1}), Workload(uuid="w2", axes={"M": 64})])
    counts = counts_for_problem(problem, cache_dir=tmp_path)
    assert counts["w1"].tensor_core_flops == {"bfloat16": 2 * 1 * 32 * 64}
    assert counts["w2"].tensor_core_flops == {"bfloat16": 2 * 64 * 32 * 64}
    files = list((tmp_path / "sol_counts").glob("t-*.json"))
    assert len(files) == 1
    assert load_counts(files[0]) == counts
    assert set(json.loads(files[0].read_text())) == {"w1", "w2"}
    assert counts_for_problem(problem, cache_dir=tmp_path) == counts


def test_sol_counts_round_trip() -> None:
    c = SolCounts(tensor_core_flops={"bfloat16": 1.0}, other_flops=2.0, bytes=3.0, method="meta")
    assert SolCounts.model_validate_json(c.model_dump_json()) == c
    assert c.total_flops == 3.0


def test_reference_module_is_fresh_and_supports_dataclasses() -> None:
    d = make({"x": t(["N"], "float32")}, {"y": t(["N"], "float32")},
             """
             from __future__ import annotations
             from dataclasses import dataclass
             @dataclass
             class Config:
                 scale: float = 2.0
             def run(x):
                 return x * Config().scale
             """)
    first, second = load_reference_module(d), load_reference_module(d)
    assert first is not second and first.run is not second.run
    assert first.run(torch.ones(2)).tolist() == [2.0, 2.0]


def test_operators_without_a_cost_rule_are_listed() -> None:
    d = make({"x": t(["M", "D"], "float32"), "y": t(["N", "D"], "float32")}, {"z": t(["M", "N"], "float32")},
             """
             import torch
             def run(x, y):
                 return torch.cdist(x, y)
             """)
    c = count_workload(d, {"M": 4, "N": 5, "D": 8})
    assert c.uncounted_ops == ["aten._cdist_forward"]
    assert "no cost rule" in c.notes[-1]


_FRESH_COUNT = """
import json, sys
from pathlib import Path
from solforge.problems import load_problem
from solforge.sandbox.sol.counting import count_workload
problem = load_problem("qwen3_8b_rmsnorm")
workload = problem.workloads[0]
counts = count_workload(problem.definition, workload.axes, workload=workload, cache_dir=Path(sys.argv[1]))
print(json.dumps({"counts": counts.model_dump(mode="json"), "traced": "torch._dynamo" in sys.modules}))
"""


def _count_in_a_fresh_process(store: Path) -> dict[str, Any]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FRESH_COUNT, str(store)], capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_count_kept_on_disk_spares_a_fresh_process_the_trace(tmp_path: Path) -> None:
    """A fresh judge's first count traces the reference, which imports torch._dynamo (1.2-1.8 s); kept
    on disk, the next process reads the same figures instead, and a damaged file is counted again."""
    store = tmp_path / "counts"
    first = _count_in_a_fresh_process(store)
    (kept,) = store.glob("*.json")
    second = _count_in_a_fresh_process(store)
    assert first["traced"] and not second["traced"]
    assert second["counts"] == first["counts"] and first["counts"]["method"] == "meta"
    kept.write_text("{not json")
    third = _count_in_a_fresh_process(store)
    assert third["traced"] and third["counts"] == first["counts"]
    assert json.loads(kept.read_text())["other"] == first["counts"]["other_flops"]


_JUDGE_LIKE_COUNT = """
import json, sys
from pathlib import Path
from solforge.problems import load_problem
from solforge.problems.inputs import generate_inputs
from solforge.sandbox.sol.counting import count_workload
problem = load_problem("qwen3_8b_rmsnorm")
workload = problem.workloads[2]
sizes = problem.definition.resolve_axes(workload.axes)
named = generate_inputs(problem.definition, workload, sizes, device="cpu", seed_or_generator=5,
                        problem_folder=problem.folder)
counts = count_workload(problem.definition, sizes, named, cache_dir=Path(sys.argv[1]))
print(json.dumps({"counts": counts.model_dump(mode="json"), "traced": "torch._dynamo" in sys.modules}))
"""


def _count_in_a_process(script: str, folder: Path, tables: Path) -> dict[str, Any]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "SOLFORGE_BASELINE_TABLES": str(tables)}
    done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True,
                          timeout=300, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _count_like_a_judge(store: Path, tables: Path) -> dict[str, Any]:
    return _count_in_a_process(_JUDGE_LIKE_COUNT, store, tables)


def test_counts_shipped_with_the_catalogue_spare_a_first_evaluation_the_trace(tmp_path: Path) -> None:
    """benchmarks/catalogue/count_tables.py writes the table a judge reads when its own cache has nothing:
    the same figures as a trace, without importing torch._dynamo. A table of another torch version (its
    keys differ) is not used."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    tables = tmp_path / "tables"
    subprocess.run([sys.executable, str(root / "benchmarks" / "catalogue" / "count_tables.py"), "qwen3_8b_rmsnorm",
                    "--out", str(tables / "sol_counts.jsonl")], check=True, timeout=300, capture_output=True)
    records = [json.loads(line) for line in (tables / "sol_counts.jsonl").read_text().splitlines()]
    assert len(records) == 16 and {r["torch"] for r in records} == {torch.__version__.split("+")[0]}

    from_table = _count_like_a_judge(tmp_path / "cache-a", tables)
    traced = _count_like_a_judge(tmp_path / "cache-b", tmp_path / "no-tables")
    assert not from_table["traced"] and traced["traced"]
    assert from_table["counts"] == traced["counts"] and traced["counts"]["other_flops"] > 0

    (tables / "sol_counts.jsonl").write_text("".join(
        json.dumps({**r, "key": r["key"][::-1]}) + "\n" for r in records))  # as if counted by another torch
    assert _count_like_a_judge(tmp_path / "cache-c", tables)["traced"]


_SERVER_LIKE_COUNT = """
import json, sys
from pathlib import Path
from solforge.problems import load_problem
from solforge.sandbox.sol.counting import counts_for_workloads
problem = load_problem("qwen3_8b_rmsnorm")
uuid = problem.workloads[2].uuid
counts = counts_for_workloads(problem, [uuid], cache_dir=Path(sys.argv[1]))
print(json.dumps({"counts": counts[uuid].model_dump(mode="json"), "traced": "torch._dynamo" in sys.modules}))
"""


def _count_like_the_server(cache: Path, tables: Path) -> dict[str, Any]:
    return _count_in_a_process(_SERVER_LIKE_COUNT, cache, tables)


def test_a_count_outside_a_judge_finds_what_a_judge_counted(tmp_path: Path) -> None:
    """get_sol_score's count in the server (inputs described on the meta device) is keyed like a judge's (real
    inputs), so each reads the other's tally from the shared cache instead of tracing the reference again."""
    no_tables = tmp_path / "no-tables"
    judged = _count_like_a_judge(tmp_path / "a" / "sol_counts" / "meta", no_tables)
    served = _count_like_the_server(tmp_path / "a", no_tables)
    assert judged["traced"] and not served["traced"]
    assert served["counts"] == judged["counts"] and judged["counts"]["bytes"] > 0

    first = _count_like_the_server(tmp_path / "b", no_tables)
    assert first["traced"]
    assert not _count_like_a_judge(tmp_path / "b" / "sol_counts" / "meta", no_tables)["traced"]


def test_meta_tensors_given_as_inputs_are_layouts_not_data() -> None:
    """A reference that cannot run on meta tensors is counted on real inputs made here, also when the
    caller described the inputs with meta tensors (as counts_for_workloads does)."""
    d = make({"x": t(["N"], "float32")}, {"y": t(["N"], "float32")},
             "import torch\ndef run(x):\n    return x * float(x.sum().item())\n")  # .item() fails on meta
    meta = {"x": torch.empty(8, dtype=torch.float32, device="meta")}
    c = count_workload(d, {"N": 8}, meta)
    assert c.method == "device" and c.bytes == 64
