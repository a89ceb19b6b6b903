"""What the pages of `team web` show, read from the workspace: never a write.

Every query is bounded (a LIMIT, or one grouped scan) and uses the tables' indexes
(`id` for "after the last one seen", `(agent, ts)` for one agent's rows), so a page costs
about the same with 100k events as with 100 (docs/design.md, "team web"). The values
returned are plain dicts and lists for the templates; nothing here renders HTML.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from team.core.events import connect_read_only, table_names
from team.llm import prices
from team.workspace.config import TeamConfig, threshold_tokens
from team.workspace.places import USER, Workspace

LIVE_TABLES = ("compactions", "deliveries", "agent_events")
"""The event tables the live stream follows, after the last id each client has seen."""
SERIES_BUCKETS = 300  # time buckets of the compaction timeline (2 points each at most)
MARKS_SHOWN = 1000  # compactions marked on it (the newest)
COMPACTION_ROWS = 30  # compactions listed per page of its table (newest first, then older)
DELIVERIES_SHOWN = 200
MAIL_SHOWN = 50  # messages listed per inbox
FINISHED_SHOWN = 50  # finished tasks on the board (the newest)
CHUNKS_SHOWN = 300  # conversation entries on the agent page


@contextmanager
def events(ws: Workspace) -> Iterator[sqlite3.Connection | None]:
    """The events database opened read-only, or None while there is none yet."""
    if not ws.events_db.is_file():
        yield None
        return
    try:
        conn = connect_read_only(ws.events_db)
    except sqlite3.Error:
        yield None
        return
    try:
        yield conn
    finally:
        conn.close()


def _has(conn: sqlite3.Connection | None, table: str) -> bool:
    return conn is not None and table in table_names(conn)


def last_ids(conn: sqlite3.Connection | None) -> dict[str, int]:
    """The newest id of each followed table (0 for none): where a new stream starts."""
    out = dict.fromkeys(LIVE_TABLES, 0)
    if conn is None:
        return out
    present = table_names(conn)
    for table in LIVE_TABLES:
        if table in present:
            out[table] = conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
    return out


def rows_after(
    conn: sqlite3.Connection | None, table: str, after: int, limit: int = 200
) -> list[dict]:
    """Rows of `table` with an id past `after`, oldest first (the primary key's order)."""
    if table not in LIVE_TABLES or not _has(conn, table):
        return []
    got = conn.execute(
        f"SELECT * FROM {table} WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
    ).fetchall()
    return [dict(r) for r in got]


# -- the team ------------------------------------------------------------------------------


def snapshot(ws: Workspace) -> dict:
    """`.team/status.json` as the running team last wrote it ({} if none or unreadable)."""
    try:
        return json.loads(ws.status_path.read_text())
    except (OSError, ValueError):
        return {}


class Totals:
    """Running sums of the model calls and compactions, per agent: a fold over the rows
    after the last id it has seen, so a page scans only what was written since the last
    one (one grouped query on the primary key's range), never the whole table again.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls_last = 0
        self.calls: dict[tuple, list[int]] = {}  # (agent, purpose, ttl) -> n, in, out, r, w
        self.comp_last = 0
        self.comp: dict[tuple, list[float]] = {}  # (agent, layer) -> n, sum, count of retention

    def update(self, conn: sqlite3.Connection | None) -> Totals:
        with self.lock:
            if _has(conn, "model_calls"):
                self.calls_last = self._fold(
                    conn,
                    "SELECT agent, purpose, cache_ttl, COUNT(*), SUM(input_tokens),"
                    " SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens)"
                    " FROM model_calls WHERE id > ? AND id <= ? AND error IS NULL"
                    " GROUP BY agent, purpose, cache_ttl",
                    "model_calls",
                    self.calls_last,
                    self.calls,
                    3,
                )
            if _has(conn, "compactions"):
                self.comp_last = self._fold(
                    conn,
                    "SELECT agent, layer, COUNT(*), SUM(retention), COUNT(retention)"
                    " FROM compactions WHERE id > ? AND id <= ? AND success"
                    " GROUP BY agent, layer",
                    "compactions",
                    self.comp_last,
                    self.comp,
                    2,
                )
        return self

    @staticmethod
    def _fold(conn, sql: str, table: str, last: int, into: dict, keys: int) -> int:
        top = conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
        if top < last:  # another database in its place: start again
            into.clear()
            last = 0
        if top > last:
            for row in conn.execute(sql, (last, top)):
                sums = into.setdefault(tuple(row[:keys]), [0] * (len(row) - keys))
                for i, v in enumerate(row[keys:]):
                    sums[i] += v or 0
        return top


def usage_by_agent(totals: Totals, model: str) -> dict:
    """Per agent: dollars at list price and the cache hit rate (cache read / all input).

    All input is what the model read: uncached input, cache writes and cache reads;
    a hit rate over uncached input alone (a common mistake) can pass 100%.
    """
    out: dict[str, dict] = {}
    with totals.lock:
        groups = list(totals.calls.items())
    for (name, _purpose, ttl), (calls, inp, outp, read, write) in groups:
        usage = {
            "cache_ttl": ttl,
            "input_tokens": inp,
            "output_tokens": outp,
            "cache_read_tokens": read,
            "cache_write_tokens": write,
        }
        d = out.setdefault(name, {"usd": 0.0, "read": 0, "input": 0, "calls": 0})
        d["usd"] += prices.dollars(usage, model)
        d["read"] += read
        d["input"] += inp + write + read
        d["calls"] += calls
    for d in out.values():
        d["hit_rate"] = d["read"] / d["input"] if d["input"] else None
    return out


def last_compaction(conn: sqlite3.Connection | None, agent: str) -> dict | None:
    if not _has(conn, "compactions"):
        return None
    row = conn.execute(
        "SELECT * FROM compactions WHERE agent = ? AND layer != 'micro' ORDER BY ts DESC LIMIT 1",
        (agent,),
    ).fetchone()
    return dict(row) if row else None


def window_of(config: TeamConfig) -> int:
    return prices.context_window(config.team.model)


def agent_card(
    config: TeamConfig, name: str, st: dict, usage: dict, last: dict | None
) -> dict[str, Any]:
    """One agent as the Team page shows it."""
    window = window_of(config)
    threshold = threshold_tokens(config.compaction_for(name).threshold, window)
    tokens = int(st.get("context_tokens") or 0)
    u = usage.get(name, {})
    agent = config.agent(name)
    return {
        "name": name,
        "role": agent.role,
        "state": st.get("state", "down"),
        "current": st.get("current") or st.get("last_action"),
        "task": st.get("task"),
        "pending": st.get("pending", 0),
        "tokens": tokens,
        "threshold": threshold,
        "window": window,
        "meter": min(1.0, tokens / threshold) if threshold else 0.0,
        "usd": u.get("usd", 0.0),
        "calls": u.get("calls", 0),
        "hit_rate": u.get("hit_rate"),
        "last": last,
        "error": st.get("error"),
    }


def team_cards(ws: Workspace, config: TeamConfig, status: dict, totals: Totals) -> list[dict]:
    """Every agent of team.toml, as the Team page shows it (status from `team_status`)."""
    with events(ws) as conn:
        usage = usage_by_agent(totals.update(conn), config.team.model)
        return [
            agent_card(
                config, name, status["agents"].get(name, {}), usage, last_compaction(conn, name)
            )
            for name in config.names()
        ]


def recent_agent_events(conn: sqlite3.Connection | None, limit: int = 30) -> list[dict]:
    if not _has(conn, "agent_events"):
        return []
    got = conn.execute("SELECT * FROM agent_events ORDER BY id DESC LIMIT ?", (limit,))
    return [dict(r) for r in got.fetchall()]


# -- the board -----------------------------------------------------------------------------

COLUMNS = ("pending", "blocked", "in_progress", "completed", "failed", "cancelled")


def board_tasks(board: Any) -> list[Any]:
    """The unfinished tasks and the newest finished ones: what the board page shows."""
    return [*board.unfinished(), *board.recently_finished(FINISHED_SHOWN)]


def board_key(task: Any) -> tuple:
    """What must change for a task to be sent again on the live stream."""
    return (task.updated_at, task.status, task.plan_state, task.owner, tuple(task.blocked_by))


# -- messages ------------------------------------------------------------------------------


def deliveries(conn: sqlite3.Connection | None, limit: int = DELIVERIES_SHOWN) -> list[dict]:
    """The newest deliveries (sent and received), newest first."""
    if not _has(conn, "deliveries"):
        return []
    got = conn.execute("SELECT * FROM deliveries ORDER BY id DESC LIMIT ?", (limit,))
    return [dict(r) for r in got.fetchall()]


def inboxes(backend: Any, config: TeamConfig) -> list[dict]:
    """Each inbox (the agents' and the user's): its newest messages, pending or done."""
    from team.mailbox import reading

    out = []
    for name in [*config.names(), USER]:
        mailbox = backend.mailbox(name)
        listed = reading.listing(mailbox, True)[-MAIL_SHOWN:]
        mail = [
            {
                "id": m.id,
                "sender": m.sender,
                "to": name,
                "type": m.type,
                "ts": m.timestamp,
                "body": m.content,
                "status": status,
            }
            for m, status in reversed(listed)
        ]
        pending = sum(1 for m in mail if m["status"] == "pending")
        out.append({"name": name, "mail": mail, "pending": pending})
    return out


# -- compaction ----------------------------------------------------------------------------


CONTEXT_TOKENS = (
    "COALESCE(input_tokens, 0) + COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)"
)
AGENT_CALLS = "FROM model_calls WHERE agent = ? AND purpose = 'agent' AND error IS NULL"


class Envelope:
    """Each agent's context line over its whole history, in at most SERIES_BUCKETS buckets
    of equal time that each keep their smallest and their largest model call: a fold over
    the calls after the last id it has seen (one range scan on the primary key for all
    agents), so a page reads only what was written since the last one and the chart has
    at most 2 x SERIES_BUCKETS points, however long the agent has run. When a call falls
    past the last bucket, the buckets' width doubles and neighbours merge (the smallest
    of the two smallest, the largest of the two largest): the same buckets a grouped scan
    of every row with that width would give.
    """

    FIRST_WIDTH = 1.0 / 64  # seconds: doubled as often as the span needs

    def __init__(self, buckets: int = SERIES_BUCKETS) -> None:
        self.lock = threading.Lock()
        self.buckets = buckets
        self.last = 0
        self.lines: dict[str, list] = {}  # agent -> [t0, width, {bucket: [lo, hi]}]

    def update(self, conn: sqlite3.Connection | None) -> Envelope:
        if not _has(conn, "model_calls"):
            return self
        with self.lock:
            top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM model_calls").fetchone()[0]
            if top < self.last:  # another database in its place: start again
                self.lines.clear()
                self.last = 0
            if top > self.last:
                got = conn.execute(
                    f"SELECT agent, ts, {CONTEXT_TOKENS} FROM model_calls"
                    " WHERE id > ? AND id <= ? AND purpose = 'agent' AND error IS NULL",
                    (self.last, top),
                )
                for agent, ts, tokens in got:
                    self._add(agent, float(ts), int(tokens))
                self.last = top
        return self

    def _add(self, agent: str, ts: float, tokens: int) -> None:
        line = self.lines.setdefault(agent, [ts, self.FIRST_WIDTH, {}])
        t0, width, cells = line
        b = max(0, int((ts - t0) // width))
        while b >= self.buckets:
            merged: dict[int, list] = {}
            for k, (lo, hi) in cells.items():
                into = merged.get(k // 2)
                if into is None:
                    merged[k // 2] = [lo, hi]
                else:
                    into[0] = min(into[0], lo, key=_tokens_then_ts)
                    into[1] = max(into[1], hi, key=_tokens_then_ts)
            width *= 2
            cells = merged
            line[1:] = [width, cells]
            b = max(0, int((ts - t0) // width))
        point = (ts, tokens)
        cell = cells.get(b)
        if cell is None:
            cells[b] = [point, point]
        else:
            cell[0] = min(cell[0], point, key=_tokens_then_ts)
            cell[1] = max(cell[1], point, key=_tokens_then_ts)

    def series(self, agent: str) -> list[tuple[float, int]]:
        """(ts, context tokens) of the agent's line, oldest first."""
        with self.lock:
            line = self.lines.get(agent)
            if line is None:
                return []
            return sorted({p for cell in line[2].values() for p in cell})


def _tokens_then_ts(point: tuple[float, int]) -> tuple[int, float]:
    return point[1], point[0]


def compaction_marks(conn: sqlite3.Connection | None, agent: str) -> list[dict]:
    """The agent's compactions (the newest MARKS_SHOWN, few), oldest first: the chart's marks."""
    if not _has(conn, "compactions"):
        return []
    got = conn.execute(
        "SELECT ts, layer, trigger, tokens_before, tokens_after, success FROM compactions"
        " WHERE agent = ? ORDER BY ts DESC LIMIT ?",
        (agent, MARKS_SHOWN),
    ).fetchall()
    return [dict(r) for r in reversed(got)]


def compaction_rows(
    conn: sqlite3.Connection | None, agent: str, model: str, before: int | None = None
) -> tuple[list[dict], int | None]:
    """The agent's newest COMPACTION_ROWS compactions (older than the one of id `before`,
    if given), newest first, each with the cost of its summary call; and the id to ask
    for the next older page with (None if there is none)."""
    if not _has(conn, "compactions"):
        return [], None
    where, args = "agent = ?", [agent]
    if before is not None:
        edge = conn.execute(
            "SELECT ts FROM compactions WHERE id = ? AND agent = ?", (before, agent)
        ).fetchone()
        if edge is None:
            return [], None
        where += " AND (ts < ? OR (ts = ? AND id < ?))"
        args += [edge[0], edge[0], before]
    got = conn.execute(
        f"SELECT * FROM compactions WHERE {where} ORDER BY ts DESC, id DESC LIMIT ?",
        (*args, COMPACTION_ROWS + 1),
    ).fetchall()
    rows = [dict(r) for r in got[:COMPACTION_ROWS]]
    for row in rows:
        row["usd"] = None
        if row.get("layer") != "micro":
            row["usd"] = summary_cost_before(conn, agent, row["ts"], model)
    older = rows[-1]["id"] if len(got) > COMPACTION_ROWS else None
    return rows, older


def latest_compacted(conn: sqlite3.Connection | None, names: list[str]) -> str | None:
    """The agent of the newest compaction, if it is one of `names` (the page's default)."""
    if not _has(conn, "compactions"):
        return None
    row = conn.execute("SELECT agent FROM compactions ORDER BY id DESC LIMIT 1").fetchone()
    return row[0] if row and row[0] in names else None


def compaction_counts(totals: Totals) -> dict[str, int]:
    """Successful compactions per agent, from the running sums."""
    out: dict[str, int] = {}
    with totals.lock:
        for (agent, _layer), (n, _s, _c) in totals.comp.items():
            out[agent] = out.get(agent, 0) + int(n)
    return out


def transcript_path(ws: Workspace, agent: str, name: str) -> Path | None:
    """The transcript `name` of `agent`, only if it resolves to a file inside the
    workspace's `.transcripts/<agent>/` (no `..`, no symlink out, no other folder)."""
    if "/" in name or "\\" in name or name.startswith(".") or "/" in agent or agent.startswith("."):
        return None
    root = ws.transcripts_root.resolve()
    try:
        path = (ws.transcripts_dir(agent) / name).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if path.parent != root / agent or not path.is_file():
        return None
    return path


def transcript_link(ws: Workspace, transcript: str | None) -> tuple[str, str] | None:
    """(agent, file) of a compaction's transcript path, when it is one of this workspace."""
    if not transcript:
        return None
    p = Path(transcript)
    if not p.is_absolute():
        p = ws.root / p
    agent = Workspace.transcript_agent(p)
    if agent is None or transcript_path(ws, agent, p.name) is None:
        return None
    return agent, p.name


def chart(series: list[tuple[float, int]], marks: list[dict], threshold: int) -> dict:
    """The timeline's geometry (SVG units): the context line, the threshold, the marks."""
    width, height, pad = 900, 180, 8
    times = [t for t, _ in series] + [m["ts"] for m in marks]
    if not times:
        return {
            "width": width,
            "height": height,
            "points": "",
            "marks": [],
            "micro": "",
            "micro_count": 0,
        }
    t0, t1 = min(times), max(times)
    top = max([v for _, v in series] + [m.get("tokens_before") or 0 for m in marks] + [threshold])
    span = (t1 - t0) or 1.0

    def x(t: float) -> float:
        return round(pad + (width - 2 * pad) * (t - t0) / span, 1)

    def y(v: float) -> float:
        return round(height - pad - (height - 2 * pad) * v / (top or 1), 1)

    bottom = height - pad
    micro = [m for m in marks if m.get("layer") == "micro"]
    return {
        "width": width,
        "height": height,
        "points": " ".join(f"{x(t)},{y(v)}" for t, v in series),
        "threshold_y": y(threshold),
        "marks": [_mark(m, x(m["ts"]), y) for m in marks if m.get("layer") != "micro"],
        # micro clears are the many: one path of ticks on the time axis, no title each
        "micro": " ".join(f"M{x(m['ts'])} {bottom - 8}V{bottom}" for m in micro),
        "micro_count": len(micro),
        "top": top,
    }


def _mark(m: dict, x: float, y: Any) -> dict:
    """An auto or manual compaction on the chart: a line from its context before to after."""
    before, after = m.get("tokens_before") or 0, m.get("tokens_after") or 0
    title = f"{m.get('layer')} ({m.get('trigger')}): {before:,} → {after:,} tokens"
    if not m.get("success", True):
        title += " (failed)"
    return {"layer": m.get("layer"), "title": title, "x": x, "y1": y(before), "y2": y(after)}


def summary_cost_before(
    conn: sqlite3.Connection | None, agent: str, ts: float, model: str
) -> float | None:
    """The cost of the agent's last summary call at or before `ts` (what a compaction
    event, written after its summary, cost)."""
    if not _has(conn, "model_calls"):
        return None
    row = conn.execute(
        "SELECT * FROM model_calls WHERE agent = ? AND purpose = 'summary' AND ts <= ?"
        " ORDER BY ts DESC LIMIT 1",
        (agent, ts),
    ).fetchone()
    return prices.dollars(dict(row), model) if row else None


# -- study -----------------------------------------------------------------------------------


def study_tables(totals: Totals, model: str) -> list[dict]:
    """Per agent and for the team: calls, tokens, dollars, cache hit rate, compactions by
    layer and mean retention, from grouped scans (`team stats` reads every row; this
    page must stay fast at 100k events)."""
    usage = usage_by_agent(totals, model)
    calls: dict[str, dict] = {}
    with totals.lock:
        groups = list(totals.calls.items())
        layers_of = list(totals.comp.items())
    for (agent, purpose, _ttl), (n, inp, out, read, write) in groups:
        d = calls.setdefault(agent, dict.fromkeys(("agent", "summary", "in", "w", "r", "o"), 0))
        d["summary" if purpose == "summary" else "agent"] += n
        d["in"] += inp
        d["w"] += write
        d["r"] += read
        d["o"] += out
    comp: dict[str, dict] = {}
    for (agent, layer), (n, ret_sum, ret_n) in layers_of:
        comp.setdefault(agent, {})[layer] = (n, ret_sum / ret_n if ret_n else None)
    names = sorted(set(calls) | set(comp))
    cost_rows, comp_rows = [], []
    total = dict.fromkeys(("agent", "summary", "in", "w", "r", "o"), 0)
    for name in names:
        c = calls.get(name, dict.fromkeys(total, 0))
        for k in total:
            total[k] += c[k]
        u = usage.get(name, {})
        cost_rows.append(_cost_row(name, c, u.get("usd", 0.0)))
        layers = comp.get(name, {})
        rets = [r for _, r in layers.values() if r is not None]
        comp_rows.append(
            [name]
            + [f"{layers.get(k, (0, None))[0]:,}" for k in ("micro", "auto", "manual")]
            + [f"{100 * sum(rets) / len(rets):.0f}%" if rets else "-"]
        )
    if names:
        cost_rows.append(_cost_row("TEAM", total, sum(u["usd"] for u in usage.values())))
    return (
        [
            {
                "title": f"Cost and tokens (USD at list price, {model})",
                "headers": [
                    "agent",
                    "calls",
                    "summaries",
                    "input",
                    "cache write",
                    "cache read",
                    "output",
                    "cache hit",
                    "USD",
                ],
                "rows": cost_rows,
            },
            {
                "title": "Compactions (successful) and what they kept",
                "headers": ["agent", "micro", "auto", "manual", "retention (mean)"],
                "rows": comp_rows,
            },
        ]
        if names
        else []
    )


def _cost_row(name: str, c: dict, usd: float) -> list[str]:
    read_all = c["in"] + c["w"] + c["r"]
    hit = f"{100 * c['r'] / read_all:.1f}%" if read_all else "-"
    return [
        name,
        f"{c['agent']:,}",
        f"{c['summary']:,}",
        f"{c['in']:,}",
        f"{c['w']:,}",
        f"{c['r']:,}",
        f"{c['o']:,}",
        hit,
        f"${usd:.4f}" if usd < 0.01 else f"${usd:.2f}",
    ]


# -- the agent -----------------------------------------------------------------------------


class Conversations:
    """Each agent's session log as the Agent page shows it, read on from where the last
    page stopped: the records since its last compaction, folded once (what the model
    sees now), and its newest CHUNKS_SHOWN records (the stored text, whole: no fold). A
    page costs what was appended since the last one and the render of one segment, not a
    fold of the whole log; a log replaced or shortened, or new compaction settings, is
    read again from the start.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.logs: dict[str, dict[str, Any]] = {}

    def of(self, ws: Workspace, config: TeamConfig, agent: str) -> tuple[list[str], list[str]]:
        """The agent's conversation now (placeholders as the model sees them) and the
        newest entries of its stored text."""
        from team.study.conversation_view import SessionView, read_records

        path = ws.session_log(agent)
        try:
            st = path.stat()
        except OSError:
            return [], []
        cfg = config.compaction_for(agent)
        with self.lock:
            c = self.logs.get(agent)
            if c is None or (c["ino"], c["cfg"]) != (st.st_ino, cfg) or st.st_size < c["offset"]:
                c = {"ino": st.st_ino, "cfg": cfg, "offset": 0, "segment": [], "tail": []}
                c["view"] = SessionView(agent, cfg)
                self.logs[agent] = c
            records, c["offset"] = read_records(path, c["offset"])
            for rec in records:
                if rec.get("t") == "compaction":  # the model goes on from its summary
                    c["view"], c["segment"] = SessionView(agent, cfg), []
                c["segment"].append(rec)
                with suppress(KeyError, TypeError, ValueError):  # render says where
                    c["view"].fold(rec)
            c["tail"] = (c["tail"] + records)[-CHUNKS_SHOWN:]
            now = list(c["view"].render(c["segment"]))[-CHUNKS_SHOWN:]
            tail = list(c["tail"])
        whole = list(SessionView(agent, cfg, full=True).render(tail))[-CHUNKS_SHOWN:]
        return now, whole
