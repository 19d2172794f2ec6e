"""`solforge problems import|export|list|summary` through the real command line, on hand-written examples.

The examples under tests/data were written by hand from each project's public documentation:
a KernelBench level-1 folder (square matmul, 2-D convolution), a FlashInfer-Bench trace set (gemm,
rmsnorm) and a SOL-ExecBench problem folder (rmsnorm). Each import must load, run its reference on
the CPU and pass `solforge eval` with its own reference as the solution.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from solforge.problems import load_problem, load_problem_folder, reference_solution
from solforge.problems.inputs import generate_inputs
from solforge.problems.reference import load_reference_module

SOLFORGE = str(Path(sys.executable).with_name("solforge"))
DATA = Path(__file__).resolve().parents[2] / "data"
KERNELBENCH = DATA / "kernelbench" / "level1"
CONV = KERNELBENCH / "63_conv_standard_2D__square_input__square_kernel.py"
MATMUL = KERNELBENCH / "1_Square_matrix_multiplication_.py"
TRACE_SET = DATA / "flashinfer_trace"
SOL_FOLDER = DATA / "sol_execbench_rmsnorm"


def solforge(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SOLFORGE, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


def import_ok(*args: str | Path) -> dict:
    result = solforge("problems", "import", *args, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["rejected"] == []
    return report


def reference_runs_on_cpu(folder: Path) -> None:
    """The smallest workload's inputs are made and the reference returns outputs of the declared shapes."""
    p = load_problem_folder(folder)
    d = p.definition
    module = load_reference_module(d)
    w = p.workloads[0]
    sizes = d.resolve_axes(w.axes)
    inputs = generate_inputs(d, w, sizes, device="cpu", seed_or_generator=7, problem_folder=folder)
    with torch.no_grad():
        out = module.run(*inputs.values())
    outs = list(out) if isinstance(out, tuple) else [out]
    assert [tuple(o.shape) for o in outs] == [d.shape_of(s, sizes) for s in d.outputs.values()]
    assert all(torch.isfinite(o.float()).all() and o.float().abs().max() > 0 for o in outs)


def eval_reference(folder: Path, tmp_path: Path) -> None:
    """`solforge eval FOLDER --solution <its reference>` passes on every workload."""
    p = load_problem_folder(folder)
    solution = tmp_path / f"{p.name}_reference.json"
    solution.write_text(reference_solution(p.definition).model_dump_json())
    result = solforge(
        "eval",
        folder,
        "--solution",
        solution,
        "--json",
        "-q",
        "--rounds",
        "1",
        "--iterations",
        "1",
        "--warmup",
        "1",
        "--no-baseline",
        "--device",
        "cpu",
    )
    traces = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(traces) == len(p.workloads)
    assert {t["evaluation"]["status"] for t in traces} == {"PASSED"}


# -- KernelBench ----------------------------------------------------------------------------------


def test_kernelbench_conv_with_weights_and_a_var_batch(tmp_path: Path) -> None:
    report = import_ok(CONV, "--out", tmp_path / "out", "--var", "batch_size")
    (entry,) = report["imported"]
    folder = Path(entry["folder"])
    d = load_problem_folder(folder).definition
    assert d.name == "kernelbench_l1_63_conv_standard_2d_square_input_square_kernel"
    assert d.op_type == "conv" and "source:kernelbench" in d.tags
    # The weights are explicit inputs after the forward's own; every constant that sets a size is an axis.
    assert list(d.inputs) == ["x", "conv2d_weight", "conv2d_bias"]
    assert d.inputs["x"].shape == ["batch_size", "in_channels", "height", "width"]
    assert d.inputs["conv2d_weight"].shape == ["out_channels", "in_channels", "kernel_size", "kernel_size"]
    assert d.outputs["output"].shape == ["batch_size", "out_channels", "d30", "d30"]
    assert d.var_axes == ["batch_size"] and d.custom_inputs_entrypoint == "solforge_make_inputs"
    workloads = load_problem_folder(folder).workloads
    assert [w.axes["batch_size"] for w in workloads] == [1, 2, 4, 8]
    reference_runs_on_cpu(folder)
    eval_reference(folder, tmp_path)


def test_kernelbench_constants_are_const_by_default_and_batch_like_ones_are_offered(tmp_path: Path) -> None:
    result = solforge("problems", "import", KERNELBENCH, "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "2 imported, 0 rejected (kernelbench)" in result.stdout
    assert "can become var axes: import again with --var batch_size" in result.stdout
    p = load_problem_folder(tmp_path / "kernelbench_l1_1_square_matrix_multiplication")
    assert p.definition.var_axes == [] and len(p.workloads) == 1
    assert p.definition.axes["N"].value == 256  # type: ignore[union-attr]
    assert p.definition.inputs["A"].shape == ["N", "N"] and p.definition.outputs["output"].shape == ["N", "N"]
    reference_runs_on_cpu(p.folder)  # type: ignore[arg-type]


def test_kernelbench_rejects_a_constant_that_sets_weights(tmp_path: Path) -> None:
    result = solforge("problems", "import", CONV, "--out", tmp_path, "--var", "out_channels")
    assert result.returncode == 1
    assert "--var out_channels: cannot vary: it sets the shape of the weight conv2d.weight" in result.stdout


def test_kernelbench_file_without_get_inputs_names_the_file_field_and_fix(tmp_path: Path) -> None:
    bad = tmp_path / "7_broken.py"
    bad.write_text(MATMUL.read_text().split("def get_inputs")[0] + "def get_init_inputs():\n    return []\n")
    result = solforge("problems", "import", bad, "--out", tmp_path / "out")
    assert result.returncode == 1
    assert f"rejected {bad}: get_inputs: not defined" in result.stdout
    assert "add it" in result.stdout
    assert not (tmp_path / "out" / "kernelbench_7_broken").exists()


def test_kernelbench_file_runs_only_in_the_child(tmp_path: Path) -> None:
    # A file that writes a marker when executed: the CLI process must survive its sys.exit.
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "8_exit.py"
    evil.write_text(f"import sys\nopen({str(marker)!r}, 'w').write('x')\nsys.exit(3)\n")
    result = solforge("problems", "import", evil, "--out", tmp_path / "out")
    assert result.returncode == 1 and "rejected" in result.stdout
    assert marker.exists()  # it ran, in the child, and the command still reported it


# -- FlashInfer-Trace -----------------------------------------------------------------------------


def test_flashinfer_trace_set_imports_and_evaluates(tmp_path: Path) -> None:
    report = import_ok(TRACE_SET, "--out", tmp_path / "out", "--hf-id", "meta-llama/Llama-3.1-8B")
    assert report["format"] == "flashinfer-trace"
    assert sorted(p["name"] for p in report["imported"]) == ["gemm_n256_k512", "rmsnorm_h512"]
    gemm = tmp_path / "out" / "gemm_n256_k512"
    p = load_problem_folder(gemm)
    assert p.definition.hf_id == "meta-llama/Llama-3.1-8B" and "model:llama-3.1-8b" in p.definition.tags
    assert [w.axes for w in p.workloads] == [{"M": 1}, {"M": 16}, {"M": 128}]
    reference_runs_on_cpu(gemm)
    eval_reference(gemm, tmp_path)


def test_flashinfer_blobs_are_copied_and_old_spellings_upgraded(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    root = tmp_path / "trace"
    shutil.copytree(TRACE_SET, root)
    weight = torch.randn(512).to(torch.bfloat16)
    blob = root / "blob" / "workloads" / "rmsnorm" / "rmsnorm_h512_w.safetensors"
    blob.parent.mkdir(parents=True)
    save_file({"weight": weight}, str(blob))
    definition = root / "definitions" / "rmsnorm" / "rmsnorm_h512.json"
    data = json.loads(definition.read_text())
    data["type"] = data.pop("op_type")  # FlashInfer-Trace's early field name
    definition.write_text(json.dumps(data))
    line = {
        "definition": "rmsnorm_h512",
        "workload": {
            "uuid": "blob-1",
            "axes": {"batch_size": 4},
            "inputs": {
                "hidden_states": {"type": "random"},
                "weight": {
                    "type": "safetensors",
                    "path": "./blob/workloads/rmsnorm/rmsnorm_h512_w.safetensors",
                    "tensor_key": "weight",
                },
            },
        },
        "solution": None,
        "evaluation": None,
    }
    with (root / "workloads" / "rmsnorm" / "rmsnorm_h512.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")
    import_ok(definition, "--out", tmp_path / "out")  # one definition file, workloads found in its trace set
    folder = tmp_path / "out" / "rmsnorm_h512"
    assert (folder / "blob" / "workloads" / "rmsnorm" / "rmsnorm_h512_w.safetensors").is_file()
    p = load_problem_folder(folder)
    assert p.definition.op_type == "rmsnorm"
    w = p.workload("blob-1")
    inputs = generate_inputs(p.definition, w, device="cpu", seed_or_generator=1, problem_folder=folder)
    assert torch.equal(inputs["weight"], weight)


def test_flashinfer_unknown_dtype_and_malformed_json_name_file_field_and_fix(tmp_path: Path) -> None:
    root = tmp_path / "trace"
    shutil.copytree(TRACE_SET, root)
    gemm = root / "definitions" / "gemm" / "gemm_n256_k512.json"
    gemm.write_text(
        gemm.read_text().replace(
            '"A": { "shape": ["M", "K"], "dtype": "bfloat16" }',
            '"A": { "shape": ["M", "K"], "dtype": "bfloat12" }',
        )
    )
    rms = root / "definitions" / "rmsnorm" / "rmsnorm_h512.json"
    rms.write_text(rms.read_text().replace('"op_type": "rmsnorm",', '"op_type": "rmsnorm"'))
    result = solforge("problems", "import", root, "--out", tmp_path / "out")
    assert result.returncode == 1
    assert "0 imported, 2 rejected" in result.stdout
    assert f"rejected {gemm}: inputs.A.dtype:" in result.stdout and "'bfloat16'" in result.stdout
    assert f"rejected {rms}: line 5 column 3: invalid JSON" in result.stdout


# -- SOL-ExecBench --------------------------------------------------------------------------------


def test_sol_execbench_folder_is_copied_with_its_name(tmp_path: Path) -> None:
    report = import_ok(SOL_FOLDER, "--out", tmp_path / "out")
    (entry,) = report["imported"]
    folder = tmp_path / "out" / "rmsnorm_h4096_handwritten"
    assert entry["folder"] == str(folder)
    assert (folder / "solution_pytorch.json").is_file()  # every file of the folder comes along
    assert any("required_match_ratio" in n for n in entry["notes"])
    assert load_problem_folder(folder).definition == load_problem_folder(SOL_FOLDER).definition
    eval_reference(folder, tmp_path)


def test_sol_execbench_dataset_reports_rejects_and_keeps_going(tmp_path: Path) -> None:
    dataset = tmp_path / "benchmark" / "L1"
    shutil.copytree(SOL_FOLDER, dataset / "001_rmsnorm")
    broken = dataset / "002_broken"
    shutil.copytree(SOL_FOLDER, broken)
    (broken / "workload.jsonl").write_text('{"uuid": "x", "axes": {"batch_size": 1},\n')
    result = solforge("problems", "import", tmp_path / "benchmark", "--out", tmp_path / "out")
    assert result.returncode == 1
    assert "1 imported, 1 rejected (sol-execbench)" in result.stdout
    assert f"rejected {broken / 'workload.jsonl'}:1: invalid JSON" in result.stdout
    again = solforge("problems", "import", dataset / "001_rmsnorm", "--out", tmp_path / "out")
    assert again.returncode == 1 and "already exists; pass --overwrite" in again.stdout


# -- export ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["catalogue", "kernelbench"])
def test_export_then_import_round_trips(tmp_path: Path, source: str) -> None:
    if source == "catalogue":
        name = "qwen3_8b_rmsnorm"
        original = load_problem(name)
        target = name
    else:
        import_ok(CONV, "--out", tmp_path / "kb", "--var", "batch_size")
        target = str(tmp_path / "kb" / "kernelbench_l1_63_conv_standard_2d_square_input_square_kernel")
        original = load_problem_folder(Path(target))
        name = original.name
    result = solforge("problems", "export", target, "--out", tmp_path / "exported")
    assert result.returncode == 0, result.stderr
    exported = tmp_path / "exported" / name
    assert (exported / "reference.py").read_text() == original.definition.reference
    definition = json.loads((exported / "definition.json").read_text())
    assert definition["reference"] == original.definition.reference
    assert all(isinstance(dim, str) for s in definition["inputs"].values() for dim in s["shape"] or [])
    import_ok(exported, "--out", tmp_path / "back", "--format", "sol-execbench")
    back = load_problem_folder(tmp_path / "back" / name)
    assert back.definition == original.definition
    assert back.workloads == original.workloads


# -- list, show, summary --------------------------------------------------------------------------


def test_list_filters_and_summary(tmp_path: Path) -> None:
    import_ok(TRACE_SET, "--out", tmp_path, "--hf-id", "meta-llama/Llama-3.1-8B", "--category", "llm")
    listed = solforge(
        "problems", "list", "--dir", tmp_path, "--json", "--model", "llama-3.1-8b", "--op-type", "gemm"
    )
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert "gemm_n256_k512" in {r["name"] for r in rows}
    assert all(r["op_type"] == "gemm" and "Llama-3.1-8B" in r["hf_id"] for r in rows)
    assert set(rows[0]) >= {"name", "category", "op_type", "hf_id", "workloads", "dtypes"}
    fp8 = solforge("problems", "list", "--dir", tmp_path, "--json", "--dtype", "float8_e4m3fn")
    assert all("float8_e4m3fn" in json.loads(line)["dtypes"] for line in fp8.stdout.splitlines())
    # A (256 x 512) bf16 gemm with at most 128 rows is memory-bound on an H200.
    memory = solforge(
        "problems", "list", "--dir", tmp_path, "--text", "gemm_n256", "--bound", "memory", "--json"
    )
    assert [json.loads(line)["bound"] for line in memory.stdout.splitlines()] == ["memory"]
    compute = solforge(
        "problems", "list", "--dir", tmp_path, "--text", "gemm_n256", "--bound", "compute", "--json"
    )
    assert compute.stdout.strip() == ""
    summary = solforge("problems", "summary", "--dir", tmp_path, "--text", "_h512", "--json")
    counts = json.loads(summary.stdout)
    assert counts["problems"] == 1 and counts["by_op_type"] == {"rmsnorm": 1}
    assert counts["by_bound"] == {"memory": 1} and counts["by_dtype"] == {"bfloat16": 1}
    text = solforge("problems", "list", "--summary", "--no-bound", "--dir", tmp_path)
    assert "problems from" in text.stdout and "category: llm" in text.stdout
    shown = solforge("problems", "show", tmp_path / "rmsnorm_h512", "--json")
    assert json.loads(shown.stdout)["definition"]["name"] == "rmsnorm_h512"
    missing = solforge("problems", "show", "no_such_problem_anywhere")
    assert missing.returncode == 2 and "no problem 'no_such_problem_anywhere'" in missing.stderr
