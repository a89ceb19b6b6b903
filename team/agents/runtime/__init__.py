"""The process that runs a team: supervisor, launch, control, lock, reload, malloc."""
