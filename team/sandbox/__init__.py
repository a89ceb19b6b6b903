"""Where commands run: bubblewrap confinement and resource limits."""
