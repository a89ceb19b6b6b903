"""MCP servers the agents use: their config, the client pool, and what the model sees of them.

Nothing here imports the `mcp` SDK at load time (it costs 1-2 s): the pool imports it
when a team has at least one server (docs/design.md, "MCP servers").
"""
