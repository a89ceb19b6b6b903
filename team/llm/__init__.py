"""Models: the protocol, the real Anthropic client, and the offline simulator."""
