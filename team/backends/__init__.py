"""Where a team's shared state lives; see `team.backends.base`."""
