"""A solution's entry point called directly, with no judge, no candidate process and no sandbox.

    python benchmarks/gpu/probe_standalone.py benchmarks/solutions/qwen3_8b_rmsnorm/cute_dsl.json --tokens 1 8 4096
    python benchmarks/gpu/probe_standalone.py SOLUTION --clear-l2   # as the harness starts a process

It separates a kernel that is wrong or hangs by itself from one the harness disturbs: each call runs in
a child process of its own with a time limit, and prints its error against a plain PyTorch RMSNorm.
Only for the rmsnorm solutions (hidden 4096, bf16).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import sys, time, torch
sys.path.insert(0, sys.argv[1])
if sys.argv[3] == "1":
    from solforge.sandbox import timing
    torch.empty(1, device="cuda")
    print("persisting-L2 floor", timing.clear_persisting_l2(), flush=True)
started = time.perf_counter()
import main
print(f"import {time.perf_counter() - started:.2f} s", flush=True)
tokens = int(sys.argv[2])
x = torch.randn(tokens, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
out = torch.empty_like(x)
started = time.perf_counter()
main.run(x, w, out)
torch.cuda.synchronize()
print(f"first call {time.perf_counter() - started:.3f} s", flush=True)
xf = x.float()
ref = ((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16).float() * w.float())
print("max abs error", (out.float() - ref).abs().max().item(), flush=True)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("solution", type=Path)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 8, 4096])
    parser.add_argument("--clear-l2", action="store_true", help="clear the persisting-L2 limit first, as the harness does")
    parser.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args()
    solution = json.loads(args.solution.read_text())
    with tempfile.TemporaryDirectory() as folder:
        for source in solution["sources"]:
            (Path(folder) / source["path"]).write_text(source["content"])
        for tokens in args.tokens:
            print(f"== {tokens} tokens", flush=True)
            try:
                done = subprocess.run([sys.executable, "-c", CHILD, folder, str(tokens), "1" if args.clear_l2 else "0"],
                                      capture_output=True, text=True, timeout=args.timeout_s)
                print(done.stdout + done.stderr[-2000:], f"exit {done.returncode}", flush=True)
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
                print(out, f"TIMEOUT after {args.timeout_s:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
