"""`[hooks]`: the user's shell commands at two points of the team's work.

`task_completed` runs before a task is marked completed, `teammate_idle` when an agent is
about to go idle. Each gets one JSON object on stdin (docs/design.md, "Hooks"). Exit 0
lets it happen; exit 2 refuses it (the completion is not recorded, or the agent keeps
working) and the hook's stderr is told to the agent. Any other failure (another exit
status, a timeout, a command that cannot start) is logged and lets it happen: a broken
hook must not stall the team.

A hook runs as a command of the team's sandbox would (`Sandbox.for_hooks`: under
bubblewrap when the team's `sandbox` gives it, the hook's own script read-only), with a
minimal environment: PATH, HOME, the locale and the terminal, never the API key or any
other variable of the team's process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from team.sandbox.bwrap import Sandbox

log = logging.getLogger(__name__)

REFUSE = 2
STDERR_CAP = 4000
# all a hook gets of the team's environment
KEPT_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")


def hook_env() -> dict[str, str]:
    return {k: os.environ[k] for k in KEPT_ENV if k in os.environ}


@dataclass(frozen=True)
class Verdict:
    """What a hook decided: `refused` only on exit 2; `reason` is its stderr."""

    refused: bool = False
    reason: str = ""


def run_hook(
    name: str,
    command: str | None,
    payload: dict[str, Any],
    *,
    cwd: Path,
    timeout: float,
    sandbox: Sandbox | None = None,
) -> Verdict:
    """Run one hook command, `payload` as JSON on stdin; None runs nothing. With a
    `sandbox` that confines, the command runs in it (bash), else with `sh -c`."""
    if not command or not command.strip():
        return Verdict()
    if sandbox is None or sandbox.bwrap is None:
        return _run(name, command, ["/bin/sh", "-c", command], payload, cwd, timeout)
    with sandbox.argv(command) as argv:
        return _run(name, command, argv, payload, cwd, timeout)


def _run(
    name: str, command: str, argv: list[str], payload: dict[str, Any], cwd: Path, timeout: float
) -> Verdict:
    data = json.dumps({"hook_event_name": name, **payload}, default=str)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=hook_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a timeout kills the hook's children too
        )
    except OSError as e:
        log.warning("hook %s could not start (%s): %s", name, command, e)
        return Verdict()
    try:
        _, err = proc.communicate(data.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        log.warning("hook %s timed out after %gs and was killed: %s", name, timeout, command)
        return Verdict()
    except BrokenPipeError:  # the hook exited without reading stdin: that is its right
        err = proc.stderr.read() if proc.stderr else b""
        proc.wait()
    text = err.decode("utf-8", errors="replace").strip()[:STDERR_CAP]
    if proc.returncode == REFUSE:
        return Verdict(True, text or f"the {name} hook refused (exit 2) without saying why")
    if proc.returncode != 0:
        log.warning("hook %s exited %s (ignored): %s", name, proc.returncode, text[:200])
    return Verdict()


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
