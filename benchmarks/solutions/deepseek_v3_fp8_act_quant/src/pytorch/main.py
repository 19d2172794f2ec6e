"""DeepSeek-V3 per-token-group (1 x 128) FP8 e4m3 activation quantisation in plain PyTorch.

The group amax is taken on the bf16 values (abs and max are exact in bf16, so no fp32 copy of x
is needed for it); the scales are written straight into their output buffer and the quantised
values into x_fp8 through views, so nothing is allocated beyond one fp32 temporary of x.
"""

from __future__ import annotations

import torch

GROUP = 128
FP8_MAX = 448.0
MIN_AMAX = 1e-10


def run(x: torch.Tensor, x_fp8: torch.Tensor, scales: torch.Tensor) -> None:
    tokens, hidden = x.shape
    groups = x.view(tokens, hidden // GROUP, GROUP)
    amax = groups.abs().amax(dim=-1)  # [tokens, groups], bf16, exact
    torch.div(amax.float().clamp_(min=MIN_AMAX), FP8_MAX, out=scales)
    q = groups.float().div_(scales.unsqueeze(-1)).clamp_(-FP8_MAX, FP8_MAX)
    x_fp8.view(tokens, hidden // GROUP, GROUP).copy_(q)  # round-to-nearest-even cast to e4m3
