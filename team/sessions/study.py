"""`team experiment --replay FILE` for any supported log, calibrated to what it cost.

The log is read (`read_session`), written as a workspace (`write_workspace`, into a
temporary folder unless it already is one of ours), and replayed under each strategy by
the same `replay_strategy` as our own logs, on a `CalibratedReplay` model. The table
gains a `log` row from the log's own usage, and a `recorded` strategy: micro and auto
off, compacting where the log compacted with the log's own summary text, so its input
per call is what the recorded calls read; the other strategies are judged against it.
The calibration is fitted on the first half of each agent's calls and scored on the
second (`held_out`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from team.core.conversation import InvalidConversation, ToolResultBlock
from team.core.errors import UserError
from team.llm.base import Model
from team.sessions.calibration import (
    AgentCalibration,
    HeldOut,
    Recorded,
    calibrate,
    held_out,
    recorded,
)
from team.sessions.model import Session
from team.sessions.read import read_session
from team.sessions.replay_model import CalibratedReplay
from team.sessions.source import foreign
from team.sessions.workspace import read_import, write_workspace
from team.study.experiment import STRATEGIES, Experiment, Strategy, run_folder
from team.study.outcome import Outcome
from team.study.stats import load
from team.workspace.config import CompactionConfig
from team.workspace.places import Workspace

LOG = "log"
RECORDED = "recorded"
RECORDED_STRATEGY = Strategy(
    RECORDED,
    "micro and auto off; compacts where the log compacted, with the log's own summary",
    {"micro": False, "auto": False},
)


@dataclass
class LogExperiment:
    """An experiment on a recorded log: the table, the recorded row, the calibration."""

    experiment: Experiment
    recorded: Recorded | None
    calibration: dict[str, AgentCalibration]
    input_totals: dict[str, int]  # strategy -> input + cache read + cache write
    session: Session
    strategies: tuple[Strategy, ...] = STRATEGIES
    held_out: HeldOut | None = None
    logged_totals: dict[str, int] = field(default_factory=dict)  # over the calls with usage

    def to_dict(self) -> dict[str, Any]:
        d = self.experiment.to_dict()
        for o in d["outcomes"]:
            o["input_tokens_total"] = self.input_totals.get(o["strategy"], 0)
            o["input_tokens_logged"] = self.logged_totals.get(o["strategy"], 0)
        d["recorded"] = self.recorded.to_dict() if self.recorded else None
        d["format"] = self.session.format
        d["calibration"] = {
            a: {
                "chars_per_token": round(c.chars_per_token, 3),
                "prefix_tokens": c.prefix_tokens,
                "measured": c.measured,
            }
            for a, c in self.calibration.items()
        }
        d["held_out"] = self.held_out.to_dict() if self.held_out else None
        d["import"] = self.session.report.to_dict()
        d["strategies"] = {s.name: asdict(s) for s in self.strategies}
        return d


def strategies_from(
    path: Path | None, *, keep_recent: int | None, preserve_tools: list[str] | None
) -> tuple[Strategy, ...]:
    """The built-in strategies, tuned by the options, plus those of a strategy file.

    `keep_recent` and `preserve_tools` become every strategy's default; a strategy that
    sets its own value (hybrid's window of 5 over every tool) keeps it.

    A strategy file is TOML, one table per strategy, with `[compaction]` keys and an
    optional `description` and `threshold_factor`:

        [strategy.wide-window]
        description = "keep 8 results, preserve reads and bash"
        keep_recent = 8
        preserve_tools = ["read_file", "bash"]

    Raises:
        UserError: an unreadable file or a key `[compaction]` does not have.
    """
    base: dict[str, Any] = {}
    if keep_recent is not None:
        base["keep_recent"] = keep_recent
    if preserve_tools is not None:
        base["preserve_tools"] = preserve_tools
    out = [
        Strategy(s.name, s.description, {**base, **s.overrides}, s.threshold_factor)
        for s in STRATEGIES
    ]
    if path is None:
        return tuple(out)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"{path}: cannot read the strategy file ({e})") from None
    tables = doc.get("strategy")
    if not isinstance(tables, dict) or not tables:
        raise UserError(f"{path}: no [strategy.NAME] tables")
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise UserError(f"{path}: strategy.{name} is not a table")
        table = dict(table)
        description = str(table.pop("description", f"from {path.name}"))
        factor = float(table.pop("threshold_factor", 1.0))
        overrides = {**base, **table}
        try:
            CompactionConfig.model_validate({**overrides, "threshold": 1})
        except ValueError as e:
            first = str(e).splitlines()[1:2] or [str(e)]
            raise UserError(f"{path}: strategy.{name}: {first[0].strip()}") from None
        out = [s for s in out if s.name != name]
        out.append(Strategy(name, description, overrides, factor))
    return tuple(out)


def replay_log(
    path: Path,
    *,
    threshold: int,
    strategies: tuple[Strategy, ...] = STRATEGIES,
    keep: Path | None = None,
    repair: bool = False,
    summary_model: Model | None = None,
    progress: Callable[[str], None] | None = None,
) -> LogExperiment:
    """Replay any supported log under every strategy, calibrated to its recorded usage.

    Raises:
        LogError: the log cannot be read (one line: file, line, problem), or holds a
            record the replay trips on (`foreign`).
        UserError: the replay cannot proceed (`ReplayError`: a request the API would
            reject, which the import should have made valid).
    """
    with foreign(path):
        return _replay_log(path, threshold, strategies, keep, repair, summary_model, progress)


def _replay_log(
    path: Path,
    threshold: int,
    strategies: tuple[Strategy, ...],
    keep: Path | None,
    repair: bool,
    summary_model: Model | None,
    progress: Callable[[str], None] | None,
) -> LogExperiment:
    from team.study.replay import ReplayError, load_recording, replay_strategy

    session = read_session(path, repair=repair)
    tmp: Path | None = None
    if session.format == "team" and path.is_dir():
        ws = Workspace.at(path)
        read_import(ws, session)
    else:
        tmp = Path(tempfile.mkdtemp(prefix="team-import-"))
        ws = write_workspace(session, tmp / "ws", fsync=False)
    try:
        recording = load_recording(ws.root)
        cal = {a.name: calibrate(a) for a in session.agents}
        if all(s.name != RECORDED for s in strategies):
            strategies = (RECORDED_STRATEGY, *strategies)
        compact_at, summaries = _recorded_compactions(session)
        outputs = {
            a.name: [t.usage.output_tokens if t.usage else None for t in a.replies()]
            for a in session.agents
        }
        outcomes, totals, logged = [], {}, {}
        for strat in strategies:
            if progress:
                progress(f"replaying under {strat.name} ...")
            start = time.monotonic()
            as_recorded = strat.name == RECORDED
            model = CalibratedReplay(
                recording.turns(),
                cal,
                outputs=outputs,
                summary_model=summary_model,
                summaries=summaries if as_recorded else None,
            )
            with run_folder(keep, strat.name) as root:
                try:
                    out = replay_strategy(
                        recording,
                        strat.name,
                        _with_ttl(strat.compaction(threshold), cal),
                        root,
                        model=model,
                        compact_at=compact_at if as_recorded else None,
                        clear_at=_recorded_clears(session) if as_recorded else None,
                    )
                except InvalidConversation as e:
                    # the agent loop's check of its own request: what the import did not
                    # make valid is one line naming the log, not a traceback
                    raise ReplayError(
                        f"{path}: cannot be replayed under {strat.name}: the conversation "
                        f"read from it is one the API would reject ({e})"
                    ) from None
                out.workspace = str(root) if keep else None
                rows = load(Workspace.at(root).events_db).model_calls
                totals[strat.name] = sum(map(_input_total, rows))
                logged[strat.name] = _logged_total(rows, session)
            out.seconds = time.monotonic() - start
            outcomes.append(out)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    replies = sum(len(a.replies()) for a in session.agents)
    names = ", ".join(a.name for a in session.agents)
    line = (
        f"replay of {session.source} ({session.format}): {names}; {replies} recorded "
        "replies, tool results from the log, calibrated to its usage"
    )
    exp = Experiment(line, threshold, outcomes)
    judged = held_out(session.agents, cal)
    return LogExperiment(exp, _recorded(session), cal, totals, session, strategies, judged, logged)


def _input_total(row: dict[str, Any]) -> int:
    return (
        int(row.get("input_tokens") or 0)
        + int(row.get("cache_read_tokens") or 0)
        + int(row.get("cache_write_tokens") or 0)
    )


def _logged_total(rows: list[dict[str, Any]], session: Session) -> int:
    """A strategy's input over the calls the log has usage for: the agent calls that
    replay a reply with recorded usage (the k-th answered call of an agent is its k-th
    reply), so `x log` compares the same calls when a log leaves some replies unbilled."""
    billed = {
        a.name: [bool(t.usage and t.usage.input_total) for t in a.replies()] for a in session.agents
    }
    seen: dict[str, int] = {}
    total = 0
    for r in rows:
        if r.get("purpose") != "agent" or r.get("error"):
            continue
        k = seen.get(r["agent"], 0)
        seen[r["agent"]] = k + 1
        flags = billed.get(r["agent"], [])
        if k < len(flags) and flags[k]:
            total += _input_total(r)
    return total


def _recorded_clears(session: Session) -> dict[str, dict[int, tuple[str, ...]]]:
    """Before which step each agent cleared which tool results (its micro-compactions)."""
    out: dict[str, dict[int, tuple[str, ...]]] = {}
    for a in session.agents:
        steps: dict[int, tuple[str, ...]] = {}
        for c in a.micro_clears:
            step = sum(1 for t in a.turns[: c.before] if t.role == "assistant")
            steps[step] = steps.get(step, ()) + c.tool_ids
        if steps:
            out[a.name] = steps
    return out


def _recorded(session: Session) -> Recorded | None:
    """The log's own figures; calls counted by the log when it has no usage per call
    (SWE-agent's `api_calls` beside its run totals)."""
    r = recorded(session)
    if r is not None and not r.calls and session.report.requests_recorded:
        r = replace(r, calls=session.report.requests_recorded)
    return r


def _recorded_compactions(
    session: Session,
) -> tuple[dict[str, frozenset[int]], dict[str, list[str]]]:
    """Where each agent compacted (the step before which it did) and its summaries."""
    at: dict[str, frozenset[int]] = {}
    texts: dict[str, list[str]] = {}
    for a in session.agents:
        steps, summaries = [], []
        for c in a.compactions:
            step = sum(1 for t in a.turns[: c.before] if t.role == "assistant")
            if c.before >= len(a.turns) or step == 0 or step in steps:
                continue
            steps.append(step)
            summaries.append(c.summary or "[summary]" + " " * max(0, c.summary_chars - 9))
        at[a.name] = frozenset(steps)
        texts[a.name] = summaries
    return at, texts


def _with_ttl(compaction: dict[str, Any], cal: dict[str, AgentCalibration]) -> dict[str, Any]:
    """The strategy's settings with the recorded cache lifetime, unless it sets its own.

    The replay's cache lives as long as the recording's did (`CalibratedReplay`); a
    compactor told "5m" against a cache kept an hour takes a 6-minute pause for a cold
    cache, and buys a clear it thinks free with a rewrite the cache then charges.
    """
    ttls = {c.cache_ttl for c in cal.values()}
    if "cache_ttl" in compaction or len(ttls) != 1:
        return compaction
    return {**compaction, "cache_ttl": ttls.pop()}


def recorded_outcome(result: LogExperiment) -> Outcome | None:
    """The `recorded` row of the table: the log's own figures, where it has them."""
    r = result.recorded
    if r is None:
        return None
    compactions: dict[str, int] = {}
    for a in result.session.agents:
        for c in a.compactions:
            layer = "manual" if c.trigger == "manual" else "auto"
            compactions[layer] = compactions.get(layer, 0) + 1
    results = sum(
        len(b.content)
        for a in result.session.agents
        for t in a.turns
        for b in t.blocks
        if isinstance(b, ToolResultBlock)
    )
    return Outcome(
        strategy=LOG,
        billed_input=r.billed_input,
        total_tokens=r.input_tokens_total + r.output_tokens,
        cache_write_tokens=r.cache_write_tokens,
        cache_read_tokens=r.cache_read_tokens,
        peak_context=r.peak_context,
        compactions=compactions,
        summary_share=None,
        retention=None,
        tasks_completed=0,
        tasks_total=0,
        agent_calls=r.calls,
        tool_output_chars=results,
    )


def render(result: LogExperiment) -> str:
    """The table with a `log` row first, then the figures against it and against the
    `recorded` strategy, the held-out calibration, the calibration and the import."""
    from team.study.experiment import render as render_table

    builtin = {s.name for s in STRATEGIES} | {RECORDED}
    exp = result.experiment
    row = recorded_outcome(result)
    if row is not None:
        exp = Experiment(exp.workload, exp.threshold, [row, *exp.outcomes])
    out = [render_table(exp)]
    if row is not None:
        out.append(f"{LOG}: what the log's own usage says the session cost")
    out.append(f"{RECORDED}: {RECORDED_STRATEGY.description}")
    out += [f"{s.name}: {s.description}" for s in result.strategies if s.name not in builtin]
    out.append("")
    r = result.recorded
    as_recorded = result.input_totals.get(RECORDED)
    if r is not None:
        peak = f"{r.peak_context:,}" if r.peak_context else "not recorded (run totals only)"
        out.append(
            f"{LOG}: {r.calls} calls, input tokens total {r.input_tokens_total:,}, "
            f"billed input {r.billed_input:,.0f}, peak context {peak}"
        )
    else:
        out.append(f"{LOG}: this log has no usage")
    for name, total in result.input_totals.items():
        against = []
        # over the calls the log billed (every call when it only has a total)
        basis = result.logged_totals.get(name) or total
        if r is not None and r.input_tokens_total and basis:
            against.append(f"{basis / r.input_tokens_total:.2f} x {LOG}")
        if name != RECORDED and as_recorded:
            against.append(f"{total / as_recorded:.2f} x {RECORDED}")
        how = f" ({', '.join(against)})" if against else ""
        out.append(f"  {name}: input tokens total {total:,}{how}")
    h = result.held_out
    if h is not None:
        out.append(
            f"held-out calibration: fitted on the first half of each agent's calls, "
            f"{h.calls} calls predicted: total error {h.total_error:.1%}, "
            f"per-call p90 {h.p90:.1%}"
        )
    else:
        out.append("held-out calibration: too few calls with usage to hold any out")
    for agent, c in result.calibration.items():
        how = "measured from the log's usage" if c.measured else "defaults (no usage to measure)"
        out.append(
            f"calibration {agent}: {c.chars_per_token:.2f} chars/token, fixed prefix "
            f"{c.prefix_tokens:,} tokens ({how})"
        )
    out.append("import: " + "; ".join(result.session.report.lines()))
    return "\n".join(out)
