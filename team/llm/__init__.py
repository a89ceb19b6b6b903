"""Models: the protocol, the real Anthropic client, and the offline simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from team.llm.base import Model


def make_model(model_id: str, *, sim_latency: float = 0.0) -> Model:
    """The model a team.toml or `--model` names: "sim" is the offline simulator.

    Imports are lazy so that `import team.llm` loads neither the SDK nor the simulator.

    Raises:
        UserError: a real model is named but no API key is configured.
    """
    if model_id == "sim":
        from team.llm.sim import SimModel

        return SimModel(latency=sim_latency)
    from team.llm import credentials

    credentials.require(model_id)  # before the SDK's import, which takes seconds
    from team.llm.anthropic_model import AnthropicModel

    return AnthropicModel(model_id)
