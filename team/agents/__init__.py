"""The agent loop, identity, tools and the runtime that runs agents in threads."""
