"""Which part of the candidate's confinement stops CUDA from initialising? (a diagnosis, not a test)

Each variant runs in a fresh child: apply the confinement variant, then initialise CUDA and run a
kernel. Prints one line per variant. Needs only torch (loads sandbox/defences/confinement.py from its file).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ["none", "seccomp", "landlock", "landlock_noscope", "landlock_nonet", "landlock_fsonly_root",
            "landlock+proc", "landlock+procself", "landlock+sys", "landlock+tmp", "landlock+proc+sys+tmp+run+var+root",
            "init_then_both"]


def _defences():
    spec = importlib.util.spec_from_file_location("defences", ROOT / "sandbox" / "defences" / "confinement.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["defences"] = module
    spec.loader.exec_module(module)
    return module


def child(variant: str, scratch: str) -> None:
    d = _defences()
    libc = d._libc()
    import ctypes
    notes: list[str] = []
    if variant == "init_then_both":
        import torch
        torch.cuda.init()
        torch.empty(1, device="cuda")
    if variant != "none" and libc.prctl(d._PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        notes.append(f"nnp refused {ctypes.get_errno()}")
    writable = [Path(scratch), Path("/dev")]
    if variant == "landlock_noscope":
        d._SCOPE_ABSTRACT_UNIX_SOCKET = 0
        d._SCOPE_SIGNAL = 0
    if variant == "landlock_nonet":
        d._NET_BIND_TCP = 0
        d._NET_CONNECT_TCP = 0
    if variant == "landlock_fsonly_root":
        writable = [Path("/")]
    if variant == "landlock+procself":
        writable.append(Path(f"/proc/{os.getpid()}"))
    for extra in ("proc", "sys", "tmp", "run", "var", "root"):
        if extra in variant.split("+")[1:]:
            writable.append(Path("/" + extra))
    if variant.startswith("landlock") or variant == "init_then_both":
        notes.append(d._landlock(libc, writable))
    if variant in ("seccomp", "init_then_both"):
        notes.append(d._seccomp(libc))
    import torch
    torch.cuda.init()
    x = torch.randn(1024, 1024, device="cuda")
    y = (x @ x).sum().item()
    print(json.dumps({"variant": variant, "ok": True, "notes": notes, "value": round(y, 1)}))


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    results = []
    for variant in VARIANTS:
        with tempfile.TemporaryDirectory() as scratch:
            done = subprocess.run([sys.executable, __file__, "--child", variant, scratch], capture_output=True,
                                  text=True, timeout=120)
        line = next((ln for ln in done.stdout.splitlines() if ln.startswith("{")), None)
        row = json.loads(line) if line else {"variant": variant, "ok": False, "error": done.stderr[-600:]}
        results.append(row)
        print(json.dumps(row)[:400], flush=True)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if out:
        out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
