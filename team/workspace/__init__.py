"""team.toml and the places on disk: config, backend spec, workspace paths, worktrees."""
