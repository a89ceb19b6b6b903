"""`team check --online`: is the model one the API serves? Asked of its model list.

Only with credentials (the SDK's own lookup): without them, or when the API cannot be
reached, the model table's answer stands and the line says which was checked.
"""

from __future__ import annotations

import difflib

from team.llm import credentials
from team.llm.prices import canonical, model_warning


def served_models(timeout: float = 10.0) -> list[str]:
    """The ids of every model the API serves to these credentials (all pages)."""
    import anthropic

    client = anthropic.Anthropic(max_retries=1, timeout=timeout)
    return [m.id for m in client.models.list(limit=1000)]


def online_warnings(model: str) -> list[str]:
    """What `team check --online` says about `model`: nothing when the API serves it."""
    if model == "sim":
        return []
    if credentials.surely_none():
        table = model_warning(model)
        return [f"--online: {credentials.NO_KEY}; checked the model table only"] + (
            [table] if table else []
        )
    try:
        served = served_models()
    except Exception as e:  # the SDK's errors, a refused connection, a bad profile
        line = " ".join(str(e).split())[:200]
        table = model_warning(model)
        return [f"--online: could not ask the API ({line}); checked the model table only"] + (
            [table] if table else []
        )
    if model in served or any(canonical(s) == canonical(model) for s in served):
        table = model_warning(model)
        if table:  # served, but priced as the fallback: costs are estimates
            return [f"model {model!r} is served by the API but has no prices in the table"]
        return []
    near = difflib.get_close_matches(model, served, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}?" if near else f"it serves {len(served)} others"
    return [f"the API does not serve model {model!r}: {hint}"]
