"""The session log: the agent's append-only conversation, and its repair."""
