"""The team as an MCP server (`team mcp`): any MCP client can steer a workspace's team."""
