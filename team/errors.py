"""Errors that reach the user as one clear line (exit status 1), never a traceback."""


class UserError(Exception):
    """Something the user can fix: a bad file, an unknown agent, a team already running."""
