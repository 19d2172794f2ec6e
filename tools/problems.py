"""list_problems and get_problem: find a problem, then read everything needed to solve it."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field, field_validator

from solforge.problems import Category, ConstAxis, Definition, ExprAxis, Problem, TensorSpec, Workload
from solforge.sandbox.baseline import is_launch_bound, shipped_records

from .base import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, ToolContext, ToolModel, ToolResult, clip
from .catalogue import ProblemEntry
from .ledger_port import ProblemScore, baselines_for, scores_by_problem

# ---------------------------------------------------------------------------------------------------
# list_problems


class ListProblemsInput(ToolModel):
    """Filters and paging for list_problems. Every filter is optional; filters combine with AND."""

    category: Category | None = None
    """Kind of source model: llm, diffusion, vision, audio, video or multimodal (any case)."""
    model: str | None = Field(default=None, max_length=200)
    """Source model, a substring of its Hugging Face id; case, '_' and '-' do not matter (e.g. 'qwen3_8b')."""
    op_type: str | None = Field(default=None, max_length=100)
    """Operation family, case-insensitive substring (gemm, rmsnorm, attention, moe, rope, ...)."""
    text: str | None = Field(default=None, max_length=200)
    """Words that must all appear in the name, description, tags, op type or model."""
    status: Literal["any", "new", "attempted", "submitted", "unsolved"] = "any"
    """new (never benchmarked by you), attempted (no accepted submission of yours), submitted (yours
    accepted) or unsolved (nobody's accepted)."""
    sort: Literal["name", "best_score", "workloads"] = "name"
    """Order of the rows; best_score puts the lowest (most room to improve) first."""
    offset: int = Field(default=0, ge=0)
    """Rows to skip (paging): pass the next_offset of the previous answer."""
    limit: int = Field(default=30, ge=1, le=200)
    """Rows per page."""

    @field_validator("category", mode="before")
    @classmethod
    def _category_any_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


class ProblemRow(ToolResult):
    """One problem, compactly."""

    name: str
    category: str | None = None
    op_type: str | None = None
    model: str | None = None
    """Hugging Face id of the source model."""
    workloads: int
    best_score: float | None = None
    """Best accepted SOL score by anyone (0..1; 0.5 = baseline, 1 = speed of light)."""
    your_best: float | None = None
    """Your best accepted SOL score."""
    status: Literal["new", "attempted", "submitted"] = "new"
    best_on_cpu: bool = False
    """The best accepted submission ran on a CPU: it has no SOL score (0 is not a bad kernel)."""

    def line(self) -> str:
        parts = [
            self.name,
            self.category or "-",
            self.op_type or "-",
            self.model or "-",
            f"{self.workloads} wl",
        ]
        score = ("best -" if self.best_score is None else "best: a CPU run (no SOL score)" if self.best_on_cpu
                 else f"best {self.best_score:.3f}")
        if self.your_best is not None:
            score += f" (yours {self.your_best:.3f})"
        parts += [score, self.status]
        return " | ".join(parts)


class ListProblemsResult(ToolResult):
    """A page of problems."""

    total: int
    """Problems matching the filters (all pages)."""
    offset: int
    rows: list[ProblemRow]
    next_offset: int | None = None
    """Pass as offset to get the next page; null on the last page."""
    scores_available: bool = True
    """False when this server has no ledger (best scores and status are then unknown)."""

    def render(self) -> str:
        matches = f"{self.total} problem{'s match' if self.total != 1 else ' matches'}"
        if not self.rows and self.total and self.offset >= self.total:
            return (
                f"offset={self.offset} is past the end: {matches}, "
                f"so the last valid offset is {self.total - 1}. "
                "Call list_problems with offset=0 (same filters) to start again."
            )
        if not self.rows:
            return "No problems match. Loosen the filters, or call list_problems with no arguments."
        head = f"{matches}; showing {self.offset + 1}-{self.offset + len(self.rows)}."
        cols = "name | category | op | model | workloads | best SOL score | your status"
        lines = [head, cols, *(r.line() for r in self.rows)]
        if self.next_offset is not None:
            lines.append(f"More: call list_problems with offset={self.next_offset} (same filters).")
        if not self.scores_available:
            lines.append("(no ledger on this server: scores and status unknown)")
        lines.append("Next: get_problem(name=...) for the definition, reference and workloads.")
        return "\n".join(lines)


def _model_key(text: str) -> str:
    """Hugging Face ids mix '_' and '-' freely (qwen3_8b, Qwen/Qwen3-8B): compare them as one."""
    return text.lower().replace("_", "-")


def _matches(entry: ProblemEntry, args: ListProblemsInput) -> bool:
    if entry.broken:
        return False
    if args.category and entry.category != args.category.value:
        return False
    if args.model and _model_key(args.model) not in _model_key(entry.model or ""):
        return False
    if args.op_type and args.op_type.lower() not in (entry.op_type or "").lower():
        return False
    if args.text:
        hay = entry.haystack
        if not all(word in hay for word in args.text.lower().split()):
            return False
    return True


def _row(entry: ProblemEntry, score: ProblemScore | None) -> ProblemRow:
    return ProblemRow(
        name=entry.name,
        category=entry.category,
        op_type=entry.op_type,
        model=entry.model,
        workloads=entry.workloads,
        best_score=score.best_score if score else None,
        best_on_cpu=score.best_on_cpu if score else False,
        your_best=score.your_best if score else None,
        status=score.status if score else "new",
    )


async def list_problems(args: ListProblemsInput, ctx: ToolContext) -> ListProblemsResult:
    """List the problems this server serves, filtered and paged, with the best scores so far.

    Parameters
    ----------
    args
        Filters, order and page.
    ctx
        The caller and the shared services.

    Returns
    -------
    ListProblemsResult
        One compact row per problem on the page.
    """
    entries = [e for e in ctx.services.problems.entries() if _matches(e, args)]
    scores, available = await scores_by_problem(ctx)
    rows = [_row(e, scores.get(e.name)) for e in entries]
    if args.status == "unsolved":
        rows = [r for r in rows if r.best_score is None]
    elif args.status != "any":
        rows = [r for r in rows if r.status == args.status]
    if args.sort == "best_score":
        rows.sort(key=lambda r: (r.best_score is not None, r.best_score or 0.0, r.name))
    elif args.sort == "workloads":
        rows.sort(key=lambda r: (-r.workloads, r.name))
    page = rows[args.offset : args.offset + args.limit]
    result = ListProblemsResult(total=len(rows), offset=args.offset, rows=page, scores_available=available)
    # Fewer rows than asked for when they would not fit the answer budget; next_offset continues.
    while len(result.rows) > 1 and _too_big(result):
        result.rows.pop()
    end = args.offset + len(result.rows)
    result.next_offset = end if end < len(rows) else None
    return result


def _too_big(result: ToolResult, limit: int = DEFAULT_MAX_CHARS - 300) -> bool:
    return len(result.render()) > limit or len(result.model_dump_json()) > limit


# ---------------------------------------------------------------------------------------------------
# get_problem


class GetProblemInput(ToolModel):
    """Which problem, and how much of it."""

    name: str = Field(min_length=1, max_length=200)
    """Problem name from list_problems."""
    include_reference: bool = True
    """Include the PyTorch reference source (the ground truth your kernel must match)."""
    workload_offset: int = Field(default=0, ge=0)
    """First workload to list (paging)."""
    workload_limit: int = Field(default=16, ge=0, le=200)
    """Workloads to list."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Largest answer in characters (a longer reference is cut to fit)."""


class TensorInfo(ToolResult):
    name: str
    shape: str
    """Axis names outermost first, e.g. '[num_tokens, hidden_size]'; 'scalar' for a Python scalar."""
    dtype: str
    description: str | None = None


class WorkloadInfo(ToolResult):
    uuid: str
    axes: dict[str, int]
    """Values of the var axes."""
    tolerance: str
    """atol/rtol/required matched ratio applied to this workload."""
    inputs: str | None = None
    """Non-random inputs (scalars, safetensors, custom), if any."""
    baseline_ms: float | None = None
    """Baseline time T_b on this server's GPU model, when known (your earlier runs, or the shipped table)."""
    launch_bound: bool = False
    """T_b is under 5 us: launches and per-call overhead are much of the time, so fusing launches away gains
    more than a faster kernel body."""


class GetProblemResult(ToolResult):
    """A problem's definition, calling convention, reference and workloads."""

    name: str
    description: str | None = None
    category: str | None = None
    op_type: str | None = None
    model: str | None = None
    tags: list[str] = Field(default_factory=list)
    axes: dict[str, str]
    """Axis sizes: 'const N', 'var' (set per workload) or 'expr <expression>'."""
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    constraints: list[str] = Field(default_factory=list)
    signature: str
    """The entry point your solution defines (destination-passing style: outputs are preallocated, write them in place)."""
    reference: str | None = None
    reference_truncated: bool = False
    custom_inputs: bool = False
    """True when inputs come from the reference's custom_inputs_entrypoint (structured, not plain random)."""
    workload_total: int
    workload_offset: int
    workloads: list[WorkloadInfo]
    next_workload_offset: int | None = None
    baseline_device: str | None = None
    """The GPU the baseline times were measured on."""
    resource_uri: str
    """MCP resource holding the raw definition.json."""

    def render(self) -> str:
        out = [f"# {self.name}"]
        meta = [
            f"{k}: {v}"
            for k, v in (("category", self.category), ("op", self.op_type), ("model", self.model))
            if v
        ]
        if meta:
            out.append(" | ".join(meta))
        # What a solution must match comes first, so a small max_chars never cuts it.
        out.append("axes: " + ", ".join(f"{k}={v}" for k, v in self.axes.items()))
        out.append("inputs:  " + "; ".join(f"{t.name} {t.shape} {t.dtype}" for t in self.inputs))
        out.append("outputs: " + "; ".join(f"{t.name} {t.shape} {t.dtype}" for t in self.outputs))
        if self.constraints:
            out.append("constraints: " + "; ".join(self.constraints))
        out.append(f"entry point: {self.signature}")
        if self.description:
            out.append(self.description)
        if self.custom_inputs:
            out.append("inputs are generated by the reference's custom_inputs_entrypoint (see reference).")
        if self.reference is not None:
            out.append("reference (PyTorch):\n```python\n" + self.reference + "\n```")
        if self.reference_truncated:
            out.append("(reference cut to fit; call get_problem again with a larger max_chars to read it whole)")
        if self.workloads:
            out.append(
                f"workloads {self.workload_offset + 1}-{self.workload_offset + len(self.workloads)} "
                f"of {self.workload_total}"
                + (f" (baseline on {self.baseline_device})" if self.baseline_device else "")
                + ":"
            )
        elif self.workload_offset >= self.workload_total:
            total = self.workload_total
            last = f"the last valid workload_offset is {total - 1}" if total else "it has none"
            out.append(
                f"workload_offset={self.workload_offset} is past the end: the problem has "
                f"{self.workload_total} workload{'s' if self.workload_total != 1 else ''}, so {last}."
            )
        else:
            out.append(f"{self.workload_total} workloads (none listed: workload_limit=0).")
        for w in self.workloads:
            line = f"  {w.uuid}: {json.dumps(w.axes)} tol {w.tolerance}"
            if w.inputs:
                line += f" inputs {w.inputs}"
            if w.baseline_ms is not None:
                line += f" baseline {w.baseline_ms:.4g} ms"
            if w.launch_bound:
                line += " (launch-bound: under 5 us, launch overhead dominates)"
            out.append(line)
        if self.next_workload_offset is not None:
            out.append(
                f"More workloads: get_problem(name={self.name!r}, workload_offset={self.next_workload_offset})"
            )
        out.append(
            "Next: write solution.json (read_docs topic='solution-format'), then compile_kernel, then run_benchmark."
        )
        return "\n".join(out)


def _shape(spec: TensorSpec) -> str:
    if spec.shape is None:
        return "scalar"
    return "[" + ", ".join(str(d) for d in spec.shape) + "]"


def _axis(axis: object) -> str:
    if isinstance(axis, ConstAxis):
        return f"const {axis.value}"
    if isinstance(axis, ExprAxis):
        return f"expr {axis.expression}"
    return "var"


def signature_of(definition: Definition, dps: bool = True) -> str:
    """The Python signature a solution's entry point has for ``definition``."""
    ins = list(definition.inputs)
    outs = list(definition.outputs)
    if dps:
        return f"run({', '.join(ins + outs)}) -> None   # write {', '.join(outs)} in place"
    return f"run({', '.join(ins)}) -> {', '.join(outs) if len(outs) > 1 else outs[0]}"


def _tolerance(w: Workload) -> str:
    t = w.effective_tolerance
    text = f"atol {t.max_atol:g} rtol {t.max_rtol:g} match {t.required_matched_ratio:g}"
    if t.max_error_cap is not None:
        text += f" cap {t.max_error_cap:g}"
    if t.allow_negative_inf:
        text += " -inf ok"
    return text


def _inputs(w: Workload) -> str | None:
    special = {k: d.model_dump(mode="json", exclude={"type"}) | {"type": d.type} for k, d in w.inputs.items()}
    special = {k: v for k, v in special.items() if v["type"] != "random"}
    if not special:
        return None
    return json.dumps(special, separators=(",", ":"))[:300]


def describe_problem(
    problem: Problem,
    args: GetProblemInput,
    baselines: dict[str, float] | None = None,
    baseline_device: str | None = None,
) -> GetProblemResult:
    """Build the get_problem answer for a loaded problem (no ledger access)."""
    d = problem.definition
    wl = problem.workloads[args.workload_offset : args.workload_offset + args.workload_limit]
    end = args.workload_offset + len(wl)
    baselines = baselines or {}
    workloads = [
        WorkloadInfo(
            uuid=w.uuid,
            axes=w.axes,
            tolerance=_tolerance(w),
            inputs=_inputs(w),
            baseline_ms=baselines.get(w.uuid),
            launch_bound=is_launch_bound(baselines.get(w.uuid)),
        )
        for w in wl
    ]
    result = GetProblemResult(
        name=d.name,
        description=d.description,
        category=d.category.value if d.category else None,
        op_type=d.op_type,
        model=d.hf_id,
        tags=d.tags,
        axes={k: _axis(a) for k, a in d.axes.items()},
        inputs=[
            TensorInfo(name=k, shape=_shape(s), dtype=s.dtype.value, description=s.description)
            for k, s in d.inputs.items()
        ],
        outputs=[
            TensorInfo(name=k, shape=_shape(s), dtype=s.dtype.value, description=s.description)
            for k, s in d.outputs.items()
        ],
        constraints=d.constraints,
        signature=signature_of(d),
        custom_inputs=bool(d.custom_inputs_entrypoint),
        workload_total=len(problem.workloads),
        workload_offset=args.workload_offset,
        workloads=workloads,
        next_workload_offset=end if end < len(problem.workloads) else None,
        baseline_device=baseline_device if baselines else None,
        resource_uri=f"solforge://problems/{d.name}/definition",
    )
    while len(result.workloads) > 1 and _too_big(result, args.max_chars - 1500):
        result.workloads.pop()
        end = args.workload_offset + len(result.workloads)
        result.next_workload_offset = end
    if result.description and _too_big(result, args.max_chars - 600):
        room = max(120, args.max_chars - 600 - len(result.render()) + len(result.description))
        result.description = clip(result.description, room, hint="larger max_chars for all of it")[0]
    if args.include_reference:
        # The reference appears in both the text and the structured answer: give it a bit under half the budget.
        skeleton = len(result.render()) + len(result.model_dump_json())
        budget = (args.max_chars - skeleton) // 2 - 200
        if budget < 200:
            result.reference_truncated = True  # no room at all: say so rather than cut the essentials
        else:
            result.reference, result.reference_truncated = clip(d.reference, budget,
                                                                hint="call get_problem with a larger max_chars")
    return result


async def get_problem(args: GetProblemInput, ctx: ToolContext) -> GetProblemResult:
    """Read one problem: definition, calling convention, PyTorch reference, workloads and known baselines.

    Raises
    ------
    ProblemNotFound
        With close names, when there is no such problem.
    FormatError
        When the problem's files do not validate.
    """
    problem = ctx.services.problems.load(args.name)
    baselines, device, _ = await baselines_for(ctx, problem.name)
    if not baselines:
        from .score import local_gpu

        baselines, device = shipped_baselines(problem.name, local_gpu())
    return describe_problem(problem, args, baselines, device)


def shipped_baselines(problem: str, gpu: str | None) -> tuple[dict[str, float], str | None]:
    """T_b per workload from the table shipped for ``gpu``'s model, and where they come from ({}, None: no
    table, or no GPU). Shown whatever torch version measured them; a judge uses a record only when its key,
    which includes the version, matches its own."""
    if gpu is None:
        return {}, None
    records = shipped_records(problem, gpu)
    times = {r.workload: r.baseline_ms for r in records}  # the table's latest record of a workload wins
    return times, (f"{gpu} (shipped table)" if times else None)
