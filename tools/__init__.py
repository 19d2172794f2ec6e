"""solforge.tools: what each MCP tool does, as plain typed async functions (no MCP imports).

Each tool is ``fn(args: <Input>, ctx: ToolContext) -> <Result>`` with one pydantic input model and one
result model (``Result.render()`` is the concise text an agent reads). :func:`registry.all_tools`
lists them with their titles, behaviour hints and model-facing descriptions; ``solforge.server``
adapts them to MCP. Modules that pull torch (counting, the sandbox) or SQLAlchemy (the ledger) are
imported inside the functions that need them, so importing this package stays light.

========================  ==========================================================================
list_problems             problems, filtered and paged, with best scores and the caller's status
read_docs                 the protocol and guides: topics, pages, full-text search
get_problem               definition, signature, reference, workloads, known baselines
compile_kernel            build without a GPU: errors, warnings, registers/smem/spills, PTX/SASS
run_benchmark             queue a benchmark, wait up to 50 s with progress, result or job handle
wait_job / cancel_job     keep waiting on, or stop, one of the caller's jobs
get_sol_score             FLOPs, bytes, intensity, bound, T_SOL and score per workload
submit_solution           the final evaluation, recorded with its leaderboard position
get_leaderboard           rankings per problem or across problems
========================  ==========================================================================
"""
