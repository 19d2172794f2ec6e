"""MCP resources and prompts: the protocol, the docs, each problem's definition; the workflow prompts."""

from __future__ import annotations

import json

from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import INVALID_PARAMS

from solforge.problems import Language
from solforge.problems.errors import SolforgeError
from solforge.tools.base import ToolServices

INSTRUCTIONS = """\
solforge: optimise GPU kernels for real operators from production models, scored against the speed of light.
Workflow: read_docs(topic='protocol') once -> list_problems -> get_problem -> write solution.json ->
compile_kernel -> run_benchmark (returns results, or a job_id for wait_job) -> get_sol_score -> iterate ->
submit_solution. Cheating (hidden streams, caching outputs, timer tricks, precision below tolerance) is
detected and the submission rejected as REWARD_HACK."""


def register_resources(mcp: MCPServer, services: ToolServices) -> None:
    """Resources: the protocol, each documentation topic, each problem's definition.json and workloads."""

    @mcp.resource(
        "solforge://protocol",
        name="protocol",
        title="The solforge protocol",
        description="The workflow, solution format, rules and tests every agent follows (PROTOCOL.md).",
        mime_type="text/markdown",
    )
    def protocol() -> str:
        try:
            return services.docs.get("protocol").text
        except SolforgeError as exc:
            raise ResourceNotFoundError(str(exc)) from exc

    @mcp.resource(
        "solforge://docs/{topic}",
        name="docs",
        title="Documentation topic",
        description="One documentation topic in full (list them with the read_docs tool).",
        mime_type="text/markdown",
    )
    def docs(topic: str) -> str:
        try:
            return services.docs.get(topic).text
        except SolforgeError as exc:
            raise ResourceNotFoundError(str(exc)) from exc

    @mcp.resource(
        "solforge://problems/{name}/definition",
        name="problem-definition",
        title="Problem definition",
        description="A problem's definition.json (SOL-ExecBench format): axes, inputs, outputs, reference.",
        mime_type="application/json",
    )
    def definition(name: str) -> str:
        try:
            problem = services.problems.load(name)
        except SolforgeError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        return json.dumps(problem.definition.to_json_dict(), indent=1)

    @mcp.resource(
        "solforge://problems/{name}/workloads",
        name="problem-workloads",
        title="Problem workloads",
        description="A problem's workload.jsonl: one JSON object per line (uuid, axes, inputs, tolerance).",
        mime_type="application/jsonl",
    )
    def workloads(name: str) -> str:
        try:
            problem = services.problems.load(name)
        except SolforgeError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        return "\n".join(json.dumps(w.to_json_dict()) for w in problem.workloads) + "\n"


OPTIMISE_PROMPT = """\
Optimise the solforge problem `{problem}`{language_clause}.

Follow the solforge protocol (read_docs(topic='protocol') if you have not read it in this session):
{steps}
Never cheat: no unjoined side streams, no caching outputs across calls, no lazy outputs, no timer patching,
no reading the reference's outputs, no precision below the tolerance, no shape-specialised shortcuts that
break on unseen shapes. Report progress briefly after each benchmark: score, speedup, what you try next.
"""


GPU_STEPS = """\
1. get_problem(name='{problem}'): read the reference, shapes, dtypes, workloads and tolerances.
2. get_sol_score(problem='{problem}', latency_ms=<baseline>) or the baseline times in get_problem tell you
   whether each workload is memory- or compute-bound, and how far the baseline is from speed of light.
3. Write solution.json (read_docs(topic='solution-format')): destination-passing style, outputs written in place.
4. compile_kernel until it builds cleanly; check registers, shared memory and spills (C++ and CuTe DSL).
5. run_benchmark; if it returns a job_id, wait_job(job_id). Every workload must be PASSED.
6. get_sol_score(job_id=...) and iterate on the slowest workloads relative to T_SOL.
7. submit_solution when run_benchmark passes everywhere and you cannot improve further."""

CPU_STEPS = """\
This server has no GPU: run_benchmark checks pytorch and triton solutions on the CPU (triton through its
interpreter) and their timings are CPU timings, with no baseline on a GPU and no SOL score; cuda_cpp and
cute_dsl solutions are compiled (registers, shared memory and spills are reported) but not run.
1. get_problem(name='{problem}'): read the reference, shapes, dtypes, workloads and tolerances.
2. get_sol_score(problem='{problem}') tells you whether each workload is memory- or compute-bound on a GPU
   (H200 by default) and its speed-of-light time there.
3. Write solution.json (read_docs(topic='solution-format')): destination-passing style, outputs written in place.
4. compile_kernel until it builds cleanly.
5. run_benchmark for correctness; if it returns a job_id, wait_job(job_id). Every workload must be PASSED.
6. submit_solution when it passes everywhere; its score comes when a GPU server evaluates it."""


def register_prompts(mcp: MCPServer, services: ToolServices) -> None:
    """Prompts: the protocol itself, and 'optimise this problem'."""

    @mcp.prompt(
        name="protocol", title="solforge protocol", description="The protocol every solforge agent follows."
    )
    def protocol_prompt() -> str:
        try:
            text = services.docs.get("protocol").text
        except SolforgeError:
            text = INSTRUCTIONS
        return "Follow this protocol for all solforge work.\n\n" + text

    @mcp.prompt(
        name="optimise",
        title="Optimise a problem",
        description="Start optimising one problem with the solforge workflow.",
    )
    def optimise(problem: str, language: str = "") -> str:
        # The SDK hides any other exception behind "Error rendering prompt"; an MCPError reaches the client.
        try:
            services.problems.find(problem)  # an unknown name fails here, with close names
        except SolforgeError as exc:
            raise MCPError(INVALID_PARAMS, f"prompt optimise: {exc}") from exc
        wanted = language.strip().lower().replace("-", "_")
        if wanted and wanted not in {lang.value for lang in Language}:
            choices = ", ".join(lang.value for lang in Language)
            raise MCPError(
                INVALID_PARAMS,
                f"prompt optimise: unknown language {language!r}; use one of {choices}, or leave it out",
            )
        clause = f" in {wanted}" if wanted else ""
        from solforge.tools.score import local_gpu

        steps = (GPU_STEPS if local_gpu() else CPU_STEPS).format(problem=problem)
        return OPTIMISE_PROMPT.format(problem=problem, language_clause=clause, steps=steps)
