"""Comparing a solution's outputs with the reference's, with SOL-ExecBench semantics.

Both tensors are compared in fp32 (fp64 stays fp64). Per output:

1. the shape and dtype must match exactly (INCORRECT_SHAPE, INCORRECT_DTYPE);
2. any NaN or Inf in either tensor fails, unless ``allow_negative_inf`` is set and both are -inf there;
3. an all-zero output against a non-zero reference fails;
4. an element matches when ``|out - ref| <= atol + rtol * |ref|``; the output passes when the matched
   ratio reaches ``required_matched_ratio`` and, if ``max_error_cap`` is set, the largest absolute
   error stays at or below it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from solforge.problems import Status, Tolerance

if TYPE_CHECKING:
    import torch


@dataclass
class Check:
    """The verdict on one set of outputs."""

    status: Status
    message: str = ""
    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    matched_ratio: float = 1.0
    errors_measured: bool = False
    """Whether the three statistics above were measured (a failed shape or dtype check has none)."""

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED


def _as_float(t: torch.Tensor) -> torch.Tensor:
    import torch

    if t.dtype == torch.float64:
        return t
    if t.dtype == torch.uint8 or str(t.dtype).startswith("torch.float4"):
        # Packed fp4 and other byte codes compare as their integer codes.
        return t.view(torch.uint8).to(torch.float32)
    return t.to(torch.float32)


def compare_tensor(name: str, out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Check:
    """Compare one output tensor with its reference."""
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        return Check(Status.INCORRECT_SHAPE, f"output {name!r}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
    if out.dtype != ref.dtype:
        return Check(Status.INCORRECT_DTYPE, f"output {name!r}: dtype {out.dtype}, expected {ref.dtype}")
    if out.numel() == 0:
        return Check(Status.PASSED)
    if out.dtype == torch.bool or not (out.is_floating_point() or str(out.dtype).startswith("torch.float")):
        # Integer and boolean outputs must match exactly, element for element.
        equal = out == ref
        ratio = float(equal.float().mean())
        if ratio < tol.required_matched_ratio:
            return Check(
                Status.INCORRECT_NUMERICAL,
                f"output {name!r}: {100 * (1 - ratio):.2f}% of integer elements differ (allowed "
                f"{100 * (1 - tol.required_matched_ratio):.2f}%)",
                matched_ratio=ratio,
            )
        return Check(Status.PASSED, matched_ratio=ratio)

    o, r = _as_float(out), _as_float(ref)
    o_finite, r_finite = torch.isfinite(o), torch.isfinite(r)
    if not bool(o_finite.all()) or not bool(r_finite.all()):
        both_neg_inf = (o == float("-inf")) & (r == float("-inf"))
        bad = ~(o_finite & r_finite)
        if tol.allow_negative_inf:
            bad &= ~both_neg_inf
        if bool(bad.any()):
            where = int(bad.nonzero()[0].tolist()[0]) if bad.dim() == 1 else tuple(bad.nonzero()[0].tolist())
            n_out = int((~o_finite).sum())
            n_ref = int((~r_finite).sum())
            culprit = "the output" if n_out else "the reference"
            return Check(
                Status.INCORRECT_NUMERICAL,
                f"output {name!r}: {n_out} non-finite values in the output, {n_ref} in the reference "
                f"(first at index {where}); NaN/Inf fail unless allow_negative_inf and both are -inf ({culprit})",
                matched_ratio=0.0,
            )
        o = torch.where(both_neg_inf, torch.zeros_like(o), o)
        r = torch.where(both_neg_inf, torch.zeros_like(r), r)

    if not bool(o.any()) and bool(r.any()):
        return Check(
            Status.INCORRECT_NUMERICAL,
            f"output {name!r} is all zeros while the reference is not: was it written at all?",
            matched_ratio=0.0,
        )

    diff = (o - r).abs()
    bound = tol.max_atol + tol.max_rtol * r.abs()
    matched = diff <= bound
    ratio = float(matched.float().mean())
    max_abs = float(diff.max())
    max_rel = float((diff / r.abs().clamp_min(tol.max_atol)).max())
    if ratio < tol.required_matched_ratio:
        flat = int((~matched).flatten().nonzero()[0])
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), o.shape))
        return Check(
            Status.INCORRECT_NUMERICAL,
            f"output {name!r}: {100 * ratio:.3f}% of elements within atol={tol.max_atol} rtol={tol.max_rtol} "
            f"(need {100 * tol.required_matched_ratio:.2f}%); max abs error {max_abs:.4g}, max rel error "
            f"{max_rel:.4g}; first mismatch at {idx}: got {float(o.flatten()[flat]):.6g}, "
            f"expected {float(r.flatten()[flat]):.6g}",
            max_abs,
            max_rel,
            ratio,
            errors_measured=True,
        )
    if tol.max_error_cap is not None and max_abs > tol.max_error_cap:
        return Check(
            Status.INCORRECT_NUMERICAL,
            f"output {name!r}: max abs error {max_abs:.4g} exceeds max_error_cap {tol.max_error_cap}",
            max_abs,
            max_rel,
            ratio,
            errors_measured=True,
        )
    return Check(Status.PASSED, "", max_abs, max_rel, ratio, errors_measured=True)


def compare_outputs(
    outputs: dict[str, torch.Tensor], references: dict[str, torch.Tensor], tol: Tolerance
) -> Check:
    """Compare every output; the first failure decides, the statistics are the worst over outputs."""
    worst = Check(Status.PASSED)
    for name, ref in references.items():
        if name not in outputs:
            return Check(Status.RUNTIME_ERROR, f"output {name!r} was not produced")
        check = compare_tensor(name, outputs[name], ref, tol)
        if not check.passed:
            return check
        worst.max_absolute_error = max(worst.max_absolute_error, check.max_absolute_error)
        worst.max_relative_error = max(worst.max_relative_error, check.max_relative_error)
        worst.matched_ratio = min(worst.matched_ratio, check.matched_ratio)
    return worst
