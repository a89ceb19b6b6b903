"""Layer 1, micro: old tool results become `[Previous: used <tool>]` in what is sent.

This is a view over the stored history, never an edit of it: the stored messages keep
the full text, so transcripts and summaries always see what really happened.

Which results are replaced follows the rules (`keep_recent`, `preserve_tools`,
`min_chars`); *when* they are replaced is the policy's call:

- `eager` (the reference design): every result the rules allow, as soon as they allow it
  (optionally only once `clear_at_least` tokens clear at once);
- `cost` (the default): a clear is a purchase. It changes the prompt from the oldest
  cleared result on, so the provider's cache is written again from there to the end,
  once, at the write price instead of the read price. It saves the read price of the
  cleared tokens on every later call. Nobody knows when a session ends, and one that
  ends just after a clear has paid for a rewrite it never got back: so a warm clear is
  bought only with savings already made (`banked`: what earlier clears and auto
  compactions saved over never compacting, net of what they cost), and then in batches:
  when the reads wasted on clearable results since the last clear have reached the
  rewrite's extra cost (the rent-or-buy balance, which makes the batches as large as
  they pay) and the calls left in the segment will save more than the rewrite costs.
  At once, and free, when the cache has expired anyway (nothing to rewrite); and, when
  the bank can pay, whatever is clearable when the context would otherwise cross the
  auto threshold on the next call (else the summary, which reads the cached prefix, is
  the cheaper way to shrink). So at any point the agent has paid no more than it would
  have with micro and auto off, except for the summary a compaction has just bought.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate, islice

from team.core.conversation import Message, ToolResultBlock
from team.llm.base import chars_to_tokens
from team.llm.prices import READ, write_multiplier
from team.workspace.config import CompactionConfig

BlockRef = tuple[int, int]  # (message index, block index)
WASTE_SHARE = 0.5  # clear once the wasted reads reach this share of the rewrite


def placeholder(tool: str) -> str:
    return f"[Previous: used {tool or 'tool'}]"


@dataclass(frozen=True, slots=True)
class CallCost:
    """What the cost policy knows about the call the view is for.

    Attributes:
        context_tokens: the estimated context of the call before any new clear.
        sent_messages: how many messages the previous call of this segment sent (its end
            is what the cache holds); 0 before the first call.
        calls: calls made so far in this segment.
        growth: typical context growth per call in this segment, in tokens.
        auto_at: the context above which auto-compaction runs; None when it is off.
        cold: the cache has expired (the last call is older than the TTL).
        tokens: characters -> tokens, with the agent's calibrated ratio.
    """

    context_tokens: int
    sent_messages: int = 0
    calls: int = 0
    growth: float = 0.0
    auto_at: int | None = None
    cold: bool = False
    tokens: Callable[[int], int] = chars_to_tokens


@dataclass(frozen=True, slots=True)
class MicroOutcome:
    """The view to send, and what this call newly cleared (for the micro event).

    `rewrite_tokens` estimates the cached tokens the clear makes the provider write again
    (from the oldest newly cleared result to the previous call's end).
    """

    view: list[Message]
    newly_cleared: int
    tokens_cleared: int
    rewrite_tokens: int = 0
    oldest_cleared: BlockRef | None = None


class MicroCompactor:
    """Decides which tool results are replaced, and keeps that decision stable.

    Once a result is replaced it stays replaced for the rest of the segment: flipping it
    back would change the prefix the provider has cached.
    """

    def __init__(self, config: CompactionConfig) -> None:
        self.config = config
        self._cleared: set[str] = set()
        # id(stored message) -> (it, the ids it has cleared, its view): see `_placeheld`
        self._views: dict[int, tuple[Message, tuple[str, ...], Message]] = {}
        self._wasted = 0.0  # base-price tokens read for clearable results since a clear
        self._cleared_tokens = 0  # tokens of the results the view replaces
        self._scan = _Scan()
        # base-price tokens this agent's clears have saved so far over never clearing,
        # net of the rewrites they caused; kept across segments (it is the agent's run)
        self.banked = 0.0

    def reset(self) -> None:
        """A new segment starts: nothing in it has been replaced yet."""
        self._cleared = set()
        self._views = {}
        self._wasted = 0.0
        self._cleared_tokens = 0
        self._scan = _Scan()

    @property
    def cleared_tokens(self) -> int:
        """Tokens of the results the view replaces in this segment."""
        return self._cleared_tokens

    @property
    def cleared(self) -> frozenset[str]:
        """Ids of the results the view replaces (the session log names new ones)."""
        return frozenset(self._cleared)

    def clear(self, ids: Iterable[str]) -> None:
        """Replace these results from now on in this segment, whatever the rules and the
        policy say: a replay repeating the recorded agent's own clears (`recorded`)."""
        self._cleared.update(ids)
        self._scan = _Scan()  # read again, so the view takes them

    def _eligible(self, b: ToolResultBlock) -> bool:
        cfg = self.config
        return b.name not in cfg.preserve_tools and b.chars() > cfg.min_chars  # images count

    def candidates(self, messages: list[Message]) -> list[ToolResultBlock]:
        """Results the rules allow to be replaced, oldest first."""
        scan = self._sync(messages)
        limit = scan.limit(self.config.keep_recent)
        return [b for pos, _, b in scan.eligible if pos < limit]

    def _new(self, messages: list[Message]) -> list[tuple[BlockRef, ToolResultBlock]]:
        """Results the rules allow to be replaced and not replaced yet, oldest first.

        A result is a candidate once the model has answered after it (an assistant turn
        follows it) and `keep_recent` newer results exist: both only become true as the
        conversation grows, so the candidates are the eligible results before a limit,
        and those not yet cleared start at `scan.head` (a clear takes them all).
        """
        scan = self._sync(messages)
        limit = scan.limit(self.config.keep_recent)
        cleared = self._cleared
        new: list[tuple[BlockRef, ToolResultBlock]] = []
        eligible = scan.eligible
        for k in range(scan.skip_cleared(cleared), len(eligible)):
            pos, ref, b = eligible[k]
            if pos >= limit:
                break
            if b.tool_use_id not in cleared:  # (an id given twice is cleared with the first)
                new.append((ref, b))
        return new

    def next_clear(self, messages: list[Message]) -> BlockRef | None:
        """The oldest result not yet replaced that the rules may replace some day.

        Everything before it stays as it is until the next clear, so it is the point up
        to which a clear still reads the cache.
        """
        if not self.config.micro:
            return None
        scan = self._sync(messages)
        k = scan.skip_cleared(self._cleared)
        return scan.eligible[k][1] if k < len(scan.eligible) else None

    def _sync(self, messages: list[Message]) -> _Scan:
        """The scan of `messages`, reading only those appended since the last call.

        The conversation only appends between compactions (which `reset`); if anything
        before the end has changed anyway (a message replaced, removed or edited in
        place as a new object), the scan starts again from the first message.
        """
        scan = self._scan
        n = len(scan.seen)
        if (
            scan.config is not self.config
            or len(messages) < n
            or (n and messages[n - 1] is not scan.seen[-1])
            or messages[:n] != scan.seen  # in C, and by identity first: cheap when unchanged
        ):
            scan = self._scan = _Scan(self.config)
            n = 0
        if len(messages) > n:
            scan.read(messages, n, self._eligible, self._cleared)
        return scan

    def view(self, messages: list[Message], call: CallCost | None = None) -> MicroOutcome:
        """The messages to send, with every cleared result as a placeholder.

        Args:
            messages: the stored segment, full text.
            call: what the cost policy weighs; without it the cost policy clears only
                what the eager one would with `clear_at_least` (no information, no bet).
        """
        if not self.config.micro:  # nothing decided here; what `clear` named still holds
            return MicroOutcome(self._apply(messages) if self._cleared else list(messages), 0, 0)
        new = self._new(messages)
        tokens = call.tokens if call else chars_to_tokens
        new_tokens = sum(tokens(b.chars()) for _, b in new)
        rewrite = 0
        if new:
            rewrite = self._rewrite_tokens(messages, new[0][0], new_tokens, call)
        if new and self._decide(new_tokens, rewrite, call):
            self._cleared.update(b.tool_use_id for _, b in new)
            self._scan.cleared_now(new)
            self._wasted = 0.0
            self._cleared_tokens += new_tokens
            if call is not None:
                self.banked += READ * self._cleared_tokens - self._extra(rewrite)
            return MicroOutcome(self._apply(messages), len(new), new_tokens, rewrite, new[0][0])
        if call is not None:
            self._wasted += READ * new_tokens  # this call reads them: what not clearing cost
            self.banked += READ * self._cleared_tokens  # ... and not those it replaces
        if not self._cleared:
            return MicroOutcome(list(messages), 0, 0)
        return MicroOutcome(self._apply(messages), 0, 0)

    def current(self, messages: list[Message]) -> list[Message]:
        """The view with what is already cleared, deciding nothing new (for summaries)."""
        if not self._cleared:
            return list(messages)
        return self._apply(messages)

    def _rewrite_tokens(
        self, messages: list[Message], oldest: BlockRef, cleared: int, call: CallCost | None
    ) -> int:
        """Cached tokens after `oldest` that a clear now makes the provider write again."""
        if call is None or call.cold or call.sent_messages == 0:
            return 0
        i, j = oldest
        end = min(call.sent_messages, len(messages))
        if i >= end:
            return 0
        chars = sum(b.chars() for b in messages[i].content[j:])
        prefix = self._sync(messages).prefix  # prefix[k]: the chars of messages[:k]
        chars += prefix[end] - prefix[i + 1]
        return max(0, call.tokens(chars) - cleared)

    def _decide(self, new_tokens: int, rewrite: int, call: CallCost | None) -> bool:
        cfg = self.config
        if new_tokens < cfg.clear_at_least:
            return False
        if cfg.micro_policy == "eager" or call is None:
            return cfg.micro_policy == "eager" or cfg.clear_at_least > 0
        if call.cold or rewrite == 0:
            return True  # nothing cached to lose: clearing is free
        extra = self._extra(rewrite)
        # The run may end on the next call (nobody knows when a session ends): a clear
        # is only bought with savings already made, so that even then this agent has not
        # paid more than never compacting would have cost.
        if self.banked < extra:
            return False
        if call.auto_at is not None and call.context_tokens + call.growth > call.auto_at:
            return True  # shrink now, or the next call pays for a summary
        saving_per_call = READ * new_tokens
        pays = saving_per_call * self._calls_left(call, new_tokens) >= extra
        return pays and self._wasted >= WASTE_SHARE * extra

    def _extra(self, rewrite: int) -> float:
        """What rewriting `rewrite` cached tokens costs over reading them."""
        return (write_multiplier(self.config.cache_ttl) - READ) * rewrite

    @staticmethod
    def _calls_left(call: CallCost, cleared: int) -> float:
        """Expected calls left in this segment after the clear: until the auto threshold
        (which the clear itself pushes back), at this growth."""
        if call.auto_at is not None and call.growth > 0:
            return max(0.0, (call.auto_at - call.context_tokens + cleared) / call.growth)
        return float(call.calls)  # no auto: expect the segment to go on as long again

    def _apply(self, messages: list[Message]) -> list[Message]:
        scan = self._sync(messages)
        cleared = self._cleared
        view = scan.view
        for i in sorted(scan.stale):  # messages with a result cleared since the last view
            m = messages[i]
            ids = tuple(
                b.tool_use_id
                for b in m.content
                if isinstance(b, ToolResultBlock) and b.tool_use_id in cleared
            )
            view[i] = self._placeheld(m, ids) if ids else m
        scan.stale.clear()
        return list(view)

    def _placeheld(self, m: Message, ids: tuple[str, ...]) -> Message:
        """`m` with the results `ids` as placeholders: the same object on every call
        while they are the ones cleared, so what reads the view once per message (the
        prompt cache's digests, the replay's counts) need not read it again."""
        hit = self._views.get(id(m))
        if hit is not None and hit[0] is m and hit[1] == ids:
            return hit[2]
        gone = set(ids)
        view = Message(
            "user",
            tuple(
                ToolResultBlock(b.tool_use_id, placeholder(b.name), b.name, b.is_error)
                if isinstance(b, ToolResultBlock) and b.tool_use_id in gone
                else b
                for b in m.content
            ),
        )
        self._views[id(m)] = (m, ids, view)
        return view


class _Scan:
    """What micro has read of a segment's messages, so that each call reads only the new.

    `eligible` lists the results the rules may replace some day (role, tool and size
    allow it) as (position among all results, where, the block); `limit` says how many
    of them are candidates now. `view` is the view of the messages read, kept as results
    are cleared (`stale` names the messages to redo); `prefix` sums their characters.
    """

    def __init__(self, config: CompactionConfig | None = None) -> None:
        self.config = config
        self.seen: list[Message] = []
        self.results = 0  # tool results in the messages read
        self.answered = 0  # ... of them before the last assistant turn
        self.eligible: list[tuple[int, BlockRef, ToolResultBlock]] = []
        self.head = 0  # eligible[:head] are all cleared
        self.prefix: list[int] = [0]
        self.view: list[Message] = []
        self.stale: set[int] = set()

    def limit(self, keep_recent: int) -> int:
        """Results before this position are candidates (the model has seen them, and
        `keep_recent` newer ones exist)."""
        if keep_recent:
            return min(self.answered, max(0, self.results - keep_recent))
        return self.answered

    def read(
        self,
        messages: list[Message],
        start: int,
        eligible: Callable[[ToolResultBlock], bool],
        cleared: set[str],
    ) -> None:
        new = messages[start:]
        for i, m in enumerate(new, start):
            if m.role == "assistant":
                self.answered = self.results
                continue
            stale = False
            for j, b in enumerate(m.content):
                if isinstance(b, ToolResultBlock):
                    if eligible(b):
                        self.eligible.append((self.results, (i, j), b))
                    self.results += 1
                    stale = stale or b.tool_use_id in cleared
            if stale:  # an id given again after it was cleared is cleared too
                self.stale.add(i)
        self.seen.extend(new)
        self.view.extend(new)
        sums = accumulate((m.chars() for m in new), initial=self.prefix[-1])
        self.prefix.extend(islice(sums, 1, None))

    def skip_cleared(self, cleared: set[str]) -> int:
        """Move `head` past the cleared results (they only grow in a segment)."""
        eligible = self.eligible
        k = self.head
        while k < len(eligible) and eligible[k][2].tool_use_id in cleared:
            k += 1
        self.head = k
        return k

    def cleared_now(self, new: list[tuple[BlockRef, ToolResultBlock]]) -> None:
        """`new` (the candidates not yet cleared) were cleared: every candidate is."""
        self.stale.update(ref[0] for ref, _ in new)
