"""The summariser: a structured summary of a whole segment, in chunks when it is large.

The reference design summarised a character slice of the history (the last N chars),
which drops the original request. Here the summariser reads the full stored text of
the segment, split at message (then block, then line) boundaries into chunks that fit
one call, and the partial summaries are merged by one more call.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from team.compaction.clip import clip_messages
from team.core.conversation import Message, TextBlock, ToolResultBlock, render_block
from team.llm.base import (
    CHARS_PER_TOKEN,
    AgentFacts,
    CachePoint,
    Model,
    ModelRequest,
    PromptTooLong,
    ToolSpec,
)
from team.llm.prices import CacheTTL

MIN_BUDGET_CHARS = 2000  # below this a chunk is too small to summarise usefully

SECTIONS = (
    "Request and intent",
    "Decisions",
    "Files",
    "Errors and fixes",
    "Messages from teammates",
    "Pending tasks (with ids)",
    "Current work",
    "Next step",
)

SUMMARY_SYSTEM = """You are summarising the working context of an agent in a team, so that it \
can continue its work after its conversation is compacted. The agent's identity:

{identity}

Write a structured summary of the WHOLE conversation below, with exactly these sections \
as markdown headings: {sections}. Keep every task id (#N), teammate name, file path, \
command, error message and decision that the agent may need; drop chatter and raw tool \
output you can describe in a line. Write it to the agent, in the second person.{focus}"""

MERGE_INSTRUCTION = (
    "The conversation was too long for one summary, so it was summarised in {n} consecutive "
    "parts, given below in order. Merge them into one structured summary with the same "
    "sections; later parts override earlier ones where they conflict."
)


CACHED_ASK = """Your conversation is about to be compacted: this context will be replaced \
by a summary you write now, so that you can continue your work from it. Do not call tools.

{instructions}"""

REPLACED_INTRO = (
    "The full text of the tool results shown above as placeholders (summarise from "
    "these, not from the placeholders):"
)


class SummaryFailed(Exception):
    """The model could not produce a usable summary; the caller keeps the history."""


class _ChunkTooLong(Exception):
    """A chunk did not fit the model's window (our chars/4 estimate undercounted it)."""


_FOCUS_HEAD = "The agent asked to focus on: "
_FOCUS_TAIL = ". Give it the most detail."


def ask_focus(focus: str) -> str:
    """The line of a summary request that names the agent's focus (`compact{focus}`)."""
    return f"{_FOCUS_HEAD}{' '.join(focus.split())}{_FOCUS_TAIL}"


def render_units(messages: list[Message], max_chars: int) -> list[str]:
    """The segment as text units of at most `max_chars`, in order, nothing dropped."""
    units: list[str] = []
    for i, m in enumerate(messages):
        head = f"--- message {i + 1} ({m.role}) ---"
        text = head + "\n" + "\n\n".join(render_block(b) for b in m.content)
        if len(text) <= max_chars:
            units.append(text)
            continue
        for b in m.content:  # too big: split by block, then by lines
            units.extend(_split_lines(f"{head}\n{render_block(b)}", max_chars))
    return units


def _split_lines(text: str, max_chars: int) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        while len(line) > max_chars:  # a single giant line: hard-split, still lossless
            if current:
                parts.append("".join(current))
                current, size = [], 0
            parts.append(line[:max_chars])
            line = line[max_chars:]
        if size + len(line) > max_chars and current:
            parts.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        parts.append("".join(current))
    return parts


def pack(units: Iterable[str], max_chars: int) -> list[str]:
    """Group consecutive units into chunks of at most `max_chars`."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for u in units:
        if current and size + len(u) > max_chars:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(u)
        size += len(u) + 2
    if current:
        chunks.append("\n\n".join(current))
    return chunks


class Summariser:
    """Calls the model to summarise a segment, chunking and merging as needed."""

    def __init__(
        self,
        model: Model,
        *,
        agent: str,
        max_tokens: int = 4096,
        input_budget_tokens: int = 120_000,
        cache_ttl: CacheTTL = "5m",
        on_call=None,
        facts: AgentFacts | None = None,
    ) -> None:
        self.model = model
        self.cache_ttl = cache_ttl  # a cached summary reads the agent's entries, as long-lived
        self.agent = agent
        self.facts = facts  # who the agent is, for a model that is code (the simulator)
        self.max_tokens = max_tokens
        self.budget_chars = input_budget_tokens * CHARS_PER_TOKEN
        self.on_call = on_call  # callback(response, duration_s, error) for model-call events

    def summarise(
        self,
        messages: list[Message],
        identity: str,
        focus: str | None = None,
        facts: AgentFacts | None = None,
    ) -> str:
        """The summary; chunks that the model finds too long are split in half and redone.

        `facts` are the agent's facts as they are now (its open tasks), for the request;
        without them, the ones the summariser was built with.

        A block too large for any context is summarised from its head and tail (the
        transcript keeps it whole): a 10 MB message must not cost 20 summary calls.
        """
        segment = tuple(messages)
        messages = clip_messages(messages)
        budget = self.budget_chars
        while True:
            try:
                return self._summarise(
                    messages, identity, focus, budget, facts or self.facts, segment
                )
            except _ChunkTooLong as e:
                if budget // 2 < MIN_BUDGET_CHARS:
                    raise SummaryFailed(f"even small chunks are too long: {e}") from e
                budget //= 2

    def _summarise(
        self,
        messages: list[Message],
        identity: str,
        focus: str | None,
        budget: int,
        facts: AgentFacts | None,
        segment: tuple[Message, ...],
    ) -> str:
        chunks = pack(render_units(messages, budget), budget)
        system = self._system(identity, focus)
        parts = [
            self._call(system, self._ask(chunk, i, len(chunks)), focus, facts, segment)
            for i, chunk in enumerate(chunks)
        ]
        while len(parts) > 1:
            # merge in groups that fit the budget, until one summary is left
            groups = pack((f"## Part {i + 1}\n{p}" for i, p in enumerate(parts)), budget)
            merged = []
            for g in groups:
                ask = MERGE_INSTRUCTION.format(n=len(parts)) + "\n\n" + g
                merged.append(self._call(system, ask, focus, facts, segment))
            if len(merged) >= len(parts):  # cannot shrink further: keep them all, in order
                return "\n\n".join(merged)
            parts = merged
        return parts[0]

    def summarise_cached(
        self,
        *,
        system: str,
        tools: list[ToolSpec],
        view: list[Message],
        breakpoint: CachePoint | None,
        replaced: list[ToolResultBlock],
        identity: str,
        focus: str | None = None,
        facts: AgentFacts | None = None,
        segment: tuple[Message, ...] = (),
    ) -> str | None:
        """Summarise on the agent's own cached prefix; None when it would not fit one call.

        The request is the agent's tools and system prompt and the view exactly as it
        was last sent (so the provider reads it from the cache), then one user turn that
        asks for the summary and carries the full text of the results the view shows as
        placeholders, with `tool_choice` none.
        """
        instructions = self._system(identity, focus).replace(
            "conversation below", "conversation above"
        )
        parts = [CACHED_ASK.format(instructions=instructions)]
        if replaced:
            parts.append(REPLACED_INTRO)
            parts += [render_block(b) for b in replaced]
        ask = "\n\n".join(parts)
        size = len(system) + len(ask) + sum(m.chars() for m in view)
        if size > self.budget_chars or not view:
            return None
        messages = list(view)
        if messages[-1].role == "user":
            messages[-1] = Message("user", (*messages[-1].content, TextBlock(ask)))
        else:
            messages.append(Message.user(ask))
        request = ModelRequest(
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=self.max_tokens,
            tool_choice="none",
            cache_breakpoints=(breakpoint,) if breakpoint is not None else (),
            cache_ttl=self.cache_ttl,
            purpose="summary",
            agent=self.agent,
            facts=facts or self.facts,
            focus=focus,
            segment=segment,
        )
        try:
            return self._send(request)
        except _ChunkTooLong:
            return None  # the view itself no longer fits: summarise in chunks instead

    def _system(self, identity: str, focus: str | None) -> str:
        focus_line = "\n\n" + ask_focus(focus) if focus else ""
        return SUMMARY_SYSTEM.format(
            identity=identity, sections=", ".join(SECTIONS), focus=focus_line
        )

    @staticmethod
    def _ask(chunk: str, i: int, n: int) -> str:
        part = f" (part {i + 1} of {n})" if n > 1 else ""
        return f"The conversation to summarise{part}:\n\n{chunk}\n\nWrite the summary now."

    def _call(
        self,
        system: str,
        text: str,
        focus: str | None,
        facts: AgentFacts | None,
        segment: tuple[Message, ...],
    ) -> str:
        request = ModelRequest(
            system=system,
            messages=[Message.user(text)],
            tools=[],
            max_tokens=self.max_tokens,
            tool_choice="none",
            cache_system=False,
            purpose="summary",
            agent=self.agent,
            facts=facts,
            focus=focus,
            segment=segment,
        )
        return self._send(request)

    def _send(self, request: ModelRequest) -> str:
        start = time.monotonic()
        try:
            response = self.model.complete(request)
        except Exception as e:
            if self.on_call:
                self.on_call(None, time.monotonic() - start, str(e))
            if isinstance(e, PromptTooLong):
                raise _ChunkTooLong(str(e)) from e
            raise SummaryFailed(str(e) or type(e).__name__) from e
        if self.on_call:
            self.on_call(response, time.monotonic() - start, None)
        summary = response.message().text().strip()
        if not summary:
            raise SummaryFailed("the model returned an empty summary")
        return summary
