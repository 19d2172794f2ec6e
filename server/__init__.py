"""solforge.server: the MCP adapter and the command line; everything it serves comes from solforge.tools.

::

    app.py          create_server (tools, resources and prompts on an MCPServer) and run_server (stdio, or
                    streamable HTTP with bearer tokens from auth.py)
    adapter.py      the plain tools of solforge.tools as MCP tools; solforge's errors mapped in one place
    schemas.py      the tool schemas as agents read them (compact, cached)
    resources.py    the protocol, the docs and each problem's definition as resources; the workflow prompts
    ledger_host.py  the ledger inside a server process: opened in the background, its workers started
    client_config.py  ``solforge init claude|cursor``
    cli.py          ``solforge`` itself; cli_problems.py, cli_catalogue_sol.py, cli_solution.py, cli_profile.py,
                    cli_report.py, cli_swarm.py and cli_worker.py are its subcommands
    __main__.py     ``python -m solforge.server`` (the same as ``solforge serve``)

torch and CUDA never load on the server's start-up path: evaluations run in judge processes (solforge.sandbox).
"""
