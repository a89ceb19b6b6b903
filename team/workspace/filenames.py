"""The names of the two files a user writes beside `.team/` (pydantic-free, so that
`team.workspace.places` and `team.workspace.config` can both say them)."""

CONFIG_FILE = "team.toml"
MCP_JSON = ".mcp.json"
"""Claude Code's project file of servers, read from beside team.toml."""
