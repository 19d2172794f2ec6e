"""solforge.server: the MCP adapter (and the command line).

``app.create_server`` registers the tools of :mod:`solforge.tools` (``adapter``), the resources and
prompts (``resources``) on an ``MCPServer``; ``app.run_server`` serves it on stdio or streamable HTTP
with bearer-token authentication (``auth``), hosting the ledger and an in-process worker
(``ledger_host``). ``client_config.init_client`` writes Claude Code and Cursor configuration.
"""
