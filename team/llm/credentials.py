"""Whether the Anthropic SDK can find credentials, answered without importing it.

`import anthropic` costs about 2 s of CPU on a busy machine; `team up` without a key
should not pay that to say so. This only answers "surely none": every place the SDK
looks (its docstring of `Anthropic.__init__`: the key and token variables, a named
profile, workload identity federation, the profile folder) is empty. Anything else goes
to the SDK, which decides.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from team.core.errors import UserError

NO_KEY = "ANTHROPIC_API_KEY is not set; set it, or run offline with --model sim"
ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_CONFIG_DIR",
)


def surely_none(env: Mapping[str, str] = os.environ) -> bool:
    """True when no variable the SDK reads is set and no profile folder exists."""
    if any(env.get(name) for name in ENV):
        return False
    home = env.get("HOME")
    folder = (Path(home) if home else Path.home()) / ".config" / "anthropic"
    return not folder.exists()


def require(model_id: str) -> None:
    """Refuse a real model without credentials, before anything imports the SDK.

    Raises:
        UserError: `model_id` is not "sim" and there are surely no credentials.
    """
    if model_id != "sim" and surely_none():
        raise UserError(NO_KEY)
