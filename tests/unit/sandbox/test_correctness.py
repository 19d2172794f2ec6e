"""SOL-ExecBench correctness semantics, case by case."""

from __future__ import annotations

import pytest
import torch

from solforge.problems import Status, Tolerance
from solforge.sandbox.correctness import compare_outputs, compare_tensor

TOL = Tolerance()


def test_identical_passes_with_zero_error() -> None:
    x = torch.randn(64, 64, dtype=torch.bfloat16)
    check = compare_tensor("o", x.clone(), x, TOL)
    assert check.passed and check.max_absolute_error == 0.0 and check.matched_ratio == 1.0


def test_shape_and_dtype_mismatch() -> None:
    x = torch.randn(4, 4)
    assert compare_tensor("o", torch.randn(4, 5), x, TOL).status is Status.INCORRECT_SHAPE
    assert compare_tensor("o", x.half(), x, TOL).status is Status.INCORRECT_DTYPE


def test_small_perturbation_within_tolerance_passes_large_fails() -> None:
    ref = torch.randn(1000)
    assert compare_tensor("o", ref + 0.005, ref, TOL).passed
    check = compare_tensor("o", ref + 0.5, ref, TOL)
    assert check.status is Status.INCORRECT_NUMERICAL and "first mismatch" in check.message
    # A wrong answer carries its statistics (the judge records them in the failed trace).
    assert check.errors_measured and check.matched_ratio < 0.05
    assert check.max_absolute_error == pytest.approx(0.5, rel=1e-3)
    # Checks that measured nothing say so, rather than reporting zero error.
    assert not compare_tensor("o", torch.zeros(1000), ref + 5, TOL).errors_measured
    assert not compare_tensor("o", torch.randn(4, 5), torch.randn(4, 4), TOL).errors_measured


def test_matched_ratio_threshold() -> None:
    ref = torch.zeros(1000) + 1.0
    out = ref.clone()
    out[:5] += 1.0  # 0.5% wrong: passes at 0.99
    assert compare_tensor("o", out, ref, TOL).passed
    out[:20] += 1.0  # 2% wrong: fails
    assert not compare_tensor("o", out, ref, TOL).passed
    assert compare_tensor("o", out, ref, Tolerance(required_matched_ratio=0.95)).passed


def test_error_cap() -> None:
    ref = torch.ones(1000)
    out = ref.clone()
    out[0] = 100.0
    assert compare_tensor("o", out, ref, TOL).passed
    assert compare_tensor("o", out, ref, Tolerance(max_error_cap=1.0)).status is Status.INCORRECT_NUMERICAL


def test_nan_and_inf_fail_even_when_both_have_them() -> None:
    ref = torch.ones(10)
    out = ref.clone()
    out[3] = float("nan")
    assert compare_tensor("o", out, ref, TOL).status is Status.INCORRECT_NUMERICAL
    both = torch.ones(10)
    both[2] = float("inf")
    assert not compare_tensor("o", both.clone(), both, TOL).passed


def test_negative_inf_allowed_only_when_both_and_flag_set() -> None:
    ref = torch.ones(10)
    ref[1] = float("-inf")
    out = ref.clone()
    assert not compare_tensor("o", out, ref, TOL).passed
    assert compare_tensor("o", out, ref, Tolerance(allow_negative_inf=True)).passed
    out[1] = 0.0
    assert not compare_tensor("o", out, ref, Tolerance(allow_negative_inf=True)).passed


def test_all_zero_output_against_nonzero_reference_fails() -> None:
    ref = torch.full((100,), 1e-3)  # every element within atol of zero, yet zeros must fail
    check = compare_tensor("o", torch.zeros(100), ref, TOL)
    assert check.status is Status.INCORRECT_NUMERICAL and "all zeros" in check.message


def test_integer_outputs_compare_exactly() -> None:
    ref = torch.arange(100, dtype=torch.int32)
    out = ref.clone()
    out[0] = 7
    assert compare_tensor("o", out, ref, TOL).passed  # 1% differs, 99% required
    out[:2] = 7
    assert not compare_tensor("o", out, ref, TOL).passed


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float16, torch.bfloat16, torch.float64])
def test_low_and_high_precision_dtypes_compare(dtype: torch.dtype) -> None:
    ref = torch.randn(256).to(dtype)
    assert compare_tensor("o", ref.clone(), ref, TOL).passed


def test_compare_outputs_reports_missing_output() -> None:
    ref = {"a": torch.ones(3), "b": torch.ones(3)}
    assert compare_outputs({"a": torch.ones(3)}, ref, TOL).status is Status.RUNTIME_ERROR
    worst = compare_outputs({"a": torch.ones(3) + 0.001, "b": torch.ones(3)}, ref, TOL)
    assert worst.passed and worst.max_absolute_error == pytest.approx(0.001, rel=1e-3)


def test_commands_from_the_judge_may_exceed_the_answer_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs above 2 GiB on the CPU were refused by the candidate and blamed on the solution."""
    import socket
    import threading

    import torch

    from solforge.sandbox import channel
    from solforge.sandbox.judge.state import blob_limit as _blob_limit

    monkeypatch.setattr(channel, "MAX_ANSWER_BYTES", 1 << 20)
    judge, candidate = socket.socketpair()
    big = torch.arange(3 << 20, dtype=torch.uint8)  # three times the (shrunk) answer limit
    sender = threading.Thread(target=channel.send_pickle, args=(judge, {"inputs": [big]}), kwargs={"cuda_ipc": False})
    sender.start()
    got = channel.recv_pickle(candidate)
    sender.join()
    assert torch.equal(got["inputs"][0], big)
    # Answers stay bounded, by what the judge expects back.
    assert _blob_limit({"out": torch.empty(8 << 20, dtype=torch.uint8)}) >= 16 << 20
    assert _blob_limit({"out": torch.empty(10, dtype=torch.uint8)}) == max(channel.MAX_ANSWER_BYTES, 20 + (1 << 20))
    candidate.sendall(channel._HEADER.pack(channel.KIND_BYTES, 2 << 20))  # announces more than the limit
    with pytest.raises(ValueError, match="exceeds"):
        channel.recv_frame(judge, channel.MAX_ANSWER_BYTES)
