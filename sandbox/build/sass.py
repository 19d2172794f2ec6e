"""Reading SASS as cuobjdump prints it: the instruction mix of a kernel, and its loops.

Text only (no process runs here), for :func:`solforge.sandbox.build.disassemble`'s output. A line
looks like ``/*0140*/  @!P0 LDG.E.CONSTANT R3, desc[UR6][R2.64] ;``: an address, an optional guard
predicate, the opcode with its modifiers, the operands. A loop is the span from a backward branch's
target up to that branch, which is how every loop the compiler keeps looks in SASS. NOPs (padding after
the end) are not counted.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pydantic import BaseModel, Field

__all__ = ["InstructionMix", "Loop", "instruction_mix", "loop_text", "loops"]

_LINE = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?:(?P<guard>@!?U?P(?:T|\d+))\s+)?"
                   r"(?P<op>[A-Z][A-Z0-9_]*)(?P<mods>(?:\.[A-Z0-9_]+)*)(?P<rest>[^;]*);?")
_TARGET = re.compile(r"\b0x(?P<addr>[0-9a-f]+)\b")
_TENSOR = frozenset({"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "OMMA", "QMMA"})
_GLOBAL_LOADS = frozenset({"LDG", "LDGSTS", "UTMALDG", "UBLKCP", "UTMAPF", "LD"})
_GLOBAL_STORES = frozenset({"STG", "UTMASTG", "UTMAREDG", "UBLKRED", "RED", "REDG", "ATOM", "ATOMG", "ST"})
_SHARED = frozenset({"LDS", "STS", "LDSM", "STSM", "ATOMS"})
_LOCAL = frozenset({"LDL", "STL"})
_BRANCHES = frozenset({"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BREAK", "BSSY", "BSYNC"})


class InstructionMix(BaseModel):
    """How a kernel's (or one loop's) instructions divide, counted from its SASS lines."""

    instructions: int
    tensor_core: int
    """Matrix instructions: HMMA/IMMA (mma.sync), HGMMA/QGMMA (Hopper wgmma), UTC*MMA (Blackwell tcgen05)."""
    global_loads: int
    """LDG, LDGSTS (cp.async), UTMALDG/UBLKCP (TMA) and generic LD."""
    global_stores: int
    """STG, TMA stores, reductions and atomics to global memory, generic ST."""
    shared: int
    """LDS, STS, LDSM, STSM and shared atomics."""
    local: int
    """LDL and STL: local memory, which is where register spills go."""
    branches: int
    """BRA, EXIT, CALL, RET, BSSY/BSYNC (divergence handling) and the like."""
    predicated: int
    """Lines guarded by a predicate (``@P0``, ``@!P1``): run by some threads only, or not at all."""
    never_run: int
    """Lines guarded by ``@!PT`` (false for every thread): emitted but never executed."""
    top_opcodes: list[tuple[str, int]] = Field(default_factory=list)
    """The most frequent opcodes (without modifiers), most frequent first."""

    def summary(self) -> str:
        tops = ", ".join(f"{op} {n}" for op, n in self.top_opcodes[:6])
        return (f"{self.instructions} instructions: tensor-core {self.tensor_core}, global loads {self.global_loads}, "
                f"global stores {self.global_stores}, shared {self.shared}, local (spills) {self.local}, "
                f"branches {self.branches}, predicated {self.predicated} (never run {self.never_run}); most used: {tops}")


@dataclass(frozen=True)
class Loop:
    """A loop in SASS: the backward branch at ``end`` jumps to ``start`` (byte addresses)."""

    start: int
    end: int


@dataclass(frozen=True)
class _Instruction:
    addr: int
    guard: str | None
    op: str
    rest: str
    line: str


def _parse(sass: str) -> list[_Instruction]:
    found = []
    for line in sass.splitlines():
        m = _LINE.match(line)
        if m and m["op"] != "NOP":  # padding after the kernel's end, never part of its work
            found.append(_Instruction(int(m["addr"], 16), m["guard"], m["op"], m["rest"], line.rstrip()))
    return found


def instruction_mix(sass: str, *, top: int = 8) -> InstructionMix:
    """Count the instructions of ``sass`` (a kernel's listing, or a part of one)."""
    code = _parse(sass)
    ops = Counter(i.op for i in code)

    def count(names: frozenset[str]) -> int:
        return sum(n for op, n in ops.items() if op in names)

    tensor = count(_TENSOR) + sum(n for op, n in ops.items() if op.startswith("UTC") and op.endswith("MMA"))
    return InstructionMix(
        instructions=len(code), tensor_core=tensor, global_loads=count(_GLOBAL_LOADS),
        global_stores=count(_GLOBAL_STORES), shared=count(_SHARED), local=count(_LOCAL), branches=count(_BRANCHES),
        predicated=sum(1 for i in code if i.guard not in (None, "@PT")),
        never_run=sum(1 for i in code if i.guard == "@!PT"),
        top_opcodes=ops.most_common(top),
    )


def loops(sass: str) -> list[Loop]:
    """Every loop of ``sass``: one per backward branch, ordered by where it starts (outer before inner)."""
    found = set()
    for ins in _parse(sass):
        if ins.op in ("BRA", "JMP"):
            target = _TARGET.search(ins.rest)
            # A branch to itself is the trap the compiler puts after the last EXIT, not a loop.
            if target and int(target["addr"], 16) < ins.addr:
                found.add(Loop(int(target["addr"], 16), ins.addr))
    return sorted(found, key=lambda loop: (loop.start, -loop.end))


def loop_text(sass: str, number: int) -> tuple[str, Loop, int]:
    """The lines of loop ``number`` (1 = the first), with the listing's ``Function :`` line; also the
    loop and how many loops there are. Raises ValueError when there is no such loop."""
    found = loops(sass)
    if not 1 <= number <= len(found):
        where = f"loops 1-{len(found)}" if found else "no loop (no backward branch)"
        raise ValueError(f"loop {number} does not exist: this kernel's SASS has {where}")
    loop = found[number - 1]
    head = [line.strip() for line in sass.splitlines() if line.strip().startswith("Function :")][:1]
    body = [i.line for i in _parse(sass) if loop.start <= i.addr <= loop.end]
    title = f"loop {number} of {len(found)}: 0x{loop.start:04x}-0x{loop.end:04x}, {len(body)} instructions"
    return "\n".join([*head, title, *body]), loop, len(found)
