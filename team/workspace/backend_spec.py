"""Which backend a team uses: `[team] backend` in team.toml, or TEAM_BACKEND (no redis import)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

FILES = "files"
SCHEMES = ("redis", "rediss", "unix")
ENV = "TEAM_BACKEND"


def check_url(url: str) -> str:
    """A backend value as team.toml takes it; raises ValueError saying what is wrong."""
    if url == FILES:
        return url
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"backend must be 'files' or a redis://host:port/db URL, got {url!r}")
    if parts.scheme == "unix":
        if not parts.path:
            raise ValueError(f"backend URL {url!r} names no socket path")
        return url
    if not parts.hostname:
        raise ValueError(f"backend URL {url!r} names no host")
    try:
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        raise ValueError(f"backend URL {url!r} has a port that is not a number") from None
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ValueError(f"backend URL {url!r}: the database after the port must be a number")
    return url


def chosen(configured: str) -> str:
    """TEAM_BACKEND if set, else what team.toml says.

    Raises:
        ValueError: TEAM_BACKEND holds something that is not a backend.
    """
    env = os.environ.get(ENV, "").strip()
    if not env:
        return configured
    try:
        return check_url(env)
    except ValueError as e:
        raise ValueError(f"{ENV}: {e}") from None


def shown(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return parts._replace(netloc=user + host).geturl()
