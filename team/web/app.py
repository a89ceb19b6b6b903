"""`team web`: the team and its compaction in a browser, a Starlette app.

Pages are rendered on the server with Jinja2 (autoescaping: whatever an agent wrote is
shown as text), the live stream (team.web.stream) sends fragments of the same
templates, and the few actions call the library operations the CLI calls (`Teamwork`
for the board, `post.send` for mail, `stop_team` for down). The page's script is one
small vendored-free file (static/app.js); nothing is fetched from the network.

Access (docs/design.md, "team web"): on the loopback with no token, every request must
name a loopback Host (a page elsewhere cannot reach it through DNS rebinding); with a
token, every request must carry it (`Authorization: Bearer`, or the cookie a first
visit with `?token=` sets). Every action must carry the `X-Team-Action` header, which a
form or a page of another site cannot send (no CORS here), so no cross-site request
can steer the team.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from team.core.errors import UserError
from team.web import queries
from team.web.stream import Follower, parse_last_id, stream

log = logging.getLogger(__name__)
HERE = Path(__file__).parent
COOKIE = "team_web_token"
ACTION_HEADER = "x-team-action"
NAV = (
    ("", "Team"),
    ("board", "Board"),
    ("messages", "Messages"),
    ("compaction", "Compaction"),
    ("study", "Study"),
)
TRANSCRIPT_LINES = 2000


def _clock(ts: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else ""


class Site:
    """The workspace as the pages and the stream read it; team.toml is read at each use,
    as the CLI reads it at each command."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["clock"] = _clock
        self.env.filters["day"] = lambda ts: time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
        self.fragments = self.env.get_template("fragments.html").module
        self._warned: set[str] = set()
        self._board: Any = None
        self.totals = queries.Totals()
        self.envelope = queries.Envelope()
        self.conversations = queries.Conversations()
        self._board_lock = threading.Lock()
        self._config_lock = threading.Lock()
        self._config: Any = None
        self._config_stamp: tuple | None = None

    def config(self) -> Any:
        """team.toml as loaded and validated, again whenever the file changes (its stat)."""
        try:
            st = self.ws.config_path.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        with self._config_lock:
            if stamp is None or stamp != self._config_stamp:
                self._config = self.ws.load_config()
                self._config_stamp = stamp
            return self._config

    def backend(self) -> Any:
        from team.backends.base import open_backend

        return open_backend(self.ws, self.config())

    def board(self) -> Any:
        return self.backend().board()

    def board_tasks(self) -> list[Any]:
        """What the Board page lists, from one board the pages share (its view keeps
        what it has read, so a load parses only the task files that changed)."""
        with self._board_lock:
            if self._board is None:
                self._board = self.board()
            return queries.board_tasks(self._board)

    def warn(self, line: str) -> None:
        if line not in self._warned:
            self._warned.add(line)
            log.warning("team web: %s", line)

    # -- what the stream sends ---------------------------------------------------------

    def cards(self) -> list[dict]:
        from team.agents.runtime.control import team_status

        config = self.config()
        return queries.team_cards(self.ws, config, team_status(self.ws, config), self.totals)

    def agent_row(self, card: dict) -> str:
        return str(self.fragments.agent_row(card))

    def task_card(self, task: Any) -> str:
        return str(self.fragments.task_card(task, True))

    def event_data(self, table: str, row: dict) -> dict:
        if table == "compactions":
            row["usd"] = None
            if row.get("layer") != "micro":
                with queries.events(self.ws) as conn:
                    model = self.config().team.model
                    row["usd"] = queries.summary_cost_before(conn, row["agent"], row["ts"], model)
            link = queries.transcript_link(self.ws, row.get("transcript"))
            html = self.fragments.compaction_row(row, link)
            return {
                "agent": row["agent"],
                "layer": row["layer"],
                "success": bool(row.get("success")),
                "html": str(html),
            }
        if table == "deliveries":
            return {"agent": row["agent"], "html": str(self.fragments.delivery_row(row))}
        return {"agent": row["agent"], "html": str(self.fragments.agent_event(row))}

    # -- pages ---------------------------------------------------------------------------

    def page(self, template: str, page: str, title: str, **data: Any) -> HTMLResponse:
        from team.agents.runtime.lock import TeamLock

        config = data.pop("config", None) or self.config()
        html = self.env.get_template(template).render(
            nav=NAV,
            page=page,
            title=title,
            team=config.team.name,
            running=TeamLock(self.ws.lock_path).is_held(),
            **data,
        )
        return HTMLResponse(html)

    def team_page(self) -> HTMLResponse:
        cards = self.cards()
        with queries.events(self.ws) as conn:
            events = queries.recent_agent_events(conn)
        return self.page("team.html", "", "Team", agents=cards, events=events)

    def board_page(self) -> HTMLResponse:
        config = self.config()
        tasks = self.board_tasks()
        return self.page(
            "board.html",
            "board",
            "Board",
            config=config,
            tasks=tasks,
            columns=queries.COLUMNS,
            names=config.names(),
            finished_shown=queries.FINISHED_SHOWN,
        )

    def messages_page(self) -> HTMLResponse:
        config = self.config()
        backend = self.backend()
        try:
            boxes = queries.inboxes(backend, config)
        finally:
            backend.close()
        with queries.events(self.ws) as conn:
            deliveries = queries.deliveries(conn)
        return self.page(
            "messages.html",
            "messages",
            "Messages",
            config=config,
            deliveries=deliveries,
            inboxes=boxes,
            mail=sorted((m for b in boxes for m in b["mail"]), key=lambda m: -m["ts"]),
            per_inbox=queries.MAIL_SHOWN,
        )

    def timeline_of(self, conn: Any, config: Any, name: str) -> dict:
        """One agent's chart: its context over its whole history (bucketed), its marks."""
        window = queries.window_of(config)
        threshold = queries.threshold_tokens(config.compaction_for(name).threshold, window)
        series = self.envelope.update(conn).series(name)
        marks = queries.compaction_marks(conn, name)
        return {
            "name": name,
            "threshold": threshold,
            "marks": len(marks),
            "chart": queries.chart(series, marks, threshold),
        }

    def compaction_page(self, agent: str | None = None, before: str | None = None) -> Response:
        """One agent's timeline and its compactions, a page of the table at a time (an
        agent picker above: 20 charts on one page were seconds in a browser)."""
        config = self.config()
        names = config.names()
        if agent is not None and agent not in names:
            return PlainTextResponse("no such agent\n", status_code=404)
        older_than = None
        if before is not None:
            if not before.isdigit():
                return PlainTextResponse(f"before={before!r} is not an id\n", status_code=400)
            older_than = int(before)
        with queries.events(self.ws) as conn:
            counts = queries.compaction_counts(self.totals.update(conn))
            name = agent or queries.latest_compacted(conn, names) or (names[0] if names else None)
            if name is None:
                return self.page("compaction.html", "compaction", "Compaction", config=config)
            t = self.timeline_of(conn, config, name)
            rows, older = queries.compaction_rows(conn, name, config.team.model, older_than)
        for row in rows:
            row["link"] = queries.transcript_link(self.ws, row.get("transcript"))
        picks = [{"name": n, "count": counts.get(n, 0)} for n in names]
        return self.page(
            "compaction.html",
            "compaction",
            f"Compaction · {name}",
            config=config,
            a={**t, "rows": rows, "older": older, "live": older_than is None},
            picks=picks,
            marks_shown=queries.MARKS_SHOWN,
        )

    def timeline_fragment(self, agent: str) -> Response:
        config = self.config()
        if agent not in config.names():
            return PlainTextResponse("no such agent\n", status_code=404)
        with queries.events(self.ws) as conn:
            t = self.timeline_of(conn, config, agent)
        return HTMLResponse(str(self.fragments.timeline(agent, t["chart"])))

    def agent_page(self, agent: str) -> Response:
        config = self.config()
        if agent not in config.names():
            return PlainTextResponse("no such agent\n", status_code=404)
        now, whole = self.conversations.of(self.ws, config, agent)
        return self.page(
            "agent.html",
            "agent",
            agent,
            config=config,
            agent=agent,
            role=config.agent(agent).role,
            now=now,
            whole=whole,
            shown=queries.CHUNKS_SHOWN,
        )

    def transcript_page(self, agent: str, name: str) -> Response:
        from team.study.conversation_view import show_transcript

        path = queries.transcript_path(self.ws, agent, name)
        if path is None:
            return PlainTextResponse("no such transcript\n", status_code=404)
        lines = []
        for line in show_transcript(path, agent):
            lines.append(line)
            if len(lines) >= TRANSCRIPT_LINES:
                break
        return self.page("transcript.html", "transcript", name, agent=agent, name=name, lines=lines)

    def study_page(self) -> HTMLResponse:
        config = self.config()
        with queries.events(self.ws) as conn:
            tables = queries.study_tables(self.totals.update(conn), config.team.model)
        return self.page(
            "study.html",
            "study",
            "Study",
            config=config,
            tables=tables,
            experiments=experiments(self.ws),
        )


EXPERIMENTS_SHOWN = 20


def experiments(ws: Any) -> list[dict]:
    """`team experiment` runs saved under `.team/experiments/` (the newest first), each as
    a table and two bar charts (billed input, peak context, by strategy)."""
    from team.study.saved import saved_runs

    out = []
    for path, data in saved_runs(ws, EXPERIMENTS_SHOWN):
        outcomes = data.get("outcomes") if data else None
        if not isinstance(outcomes, list) or not all(isinstance(o, dict) for o in outcomes):
            out.append({"name": path.stem, "error": "unreadable (not a saved experiment)"})
            continue
        headers = ["strategy", "billed input", "ratio", "tokens", "peak context"]
        headers += ["micro", "auto", "manual", "retention", "tasks"]
        rows = []
        for o in outcomes:
            comp = o.get("compactions") or {}
            ratio, ret = o.get("ratio"), o.get("retention")
            rows.append(
                [
                    o.get("strategy", "?"),
                    f"{o.get('billed_input') or 0:,.0f}",
                    "-" if ratio is None else f"{ratio:.2f}",
                    f"{o.get('total_tokens') or 0:,}",
                    f"{o.get('peak_context') or 0:,}",
                    comp.get("micro", 0),
                    comp.get("auto", 0),
                    comp.get("manual", 0),
                    "-" if ret is None else f"{100 * ret:.0f}%",
                    f"{o['tasks_completed']}/{o['tasks_total']}" if o.get("tasks_total") else "-",
                ]
            )
        out.append(
            {
                "name": path.stem,
                "saved": data.get("saved"),
                "kind": data.get("kind", ""),
                "workload": data.get("workload", ""),
                "threshold": data.get("threshold"),
                "headers": headers,
                "rows": rows,
                "plots": [
                    _bars("billed input (base-price tokens)", outcomes, "billed_input"),
                    _bars("peak context (tokens)", outcomes, "peak_context"),
                ],
            }
        )
    return out


def _bars(title: str, outcomes: list[dict], key: str) -> dict:
    values = [float(o.get(key) or 0) for o in outcomes]
    top = max(values, default=0) or 1
    bars = [
        {"name": str(o.get("strategy", "?")), "w": round(380 * v / top, 1), "label": f"{v:,.0f}"}
        for o, v in zip(outcomes, values, strict=True)
    ]
    return {"title": title, "bars": bars}


# -- actions -------------------------------------------------------------------------------


def _ids(text: str) -> list[int]:
    ids = []
    for part in filter(None, (p.strip().lstrip("#") for p in text.split(","))):
        if not part.isdigit() or int(part) < 1:
            raise UserError(f"blocked by: {part!r} is not a task id (want e.g. 1,2)")
        ids.append(int(part))
    return ids


@contextlib.contextmanager
def _teamwork(site: Site) -> Iterator[Any]:
    from team.core.events import SqliteEventLog
    from team.teamwork import Crew, Teamwork

    config = site.config()
    try:
        sink = SqliteEventLog(site.ws.events_db)
    except Exception:  # a busy or broken db never blocks a change (as the CLI)
        sink = None
    try:
        yield Teamwork(Crew(site.ws, config, site.board(), sink))
    finally:
        if sink is not None:
            sink.close()


def act(site: Site, action: str, form: dict[str, str]) -> str:
    """Run one action; its line for the page. Raises UserError with the CLI's line."""
    from team.teamwork import require_worker

    if action == "assign":
        subject = form.get("subject", "").strip()
        if not subject:
            raise UserError("a task needs a subject")
        agent = form.get("agent") or None
        ids = _ids(form.get("blocked_by", ""))
        with _teamwork(site) as tw:
            if agent is not None:
                require_worker(tw.config, agent)
            task, _ = tw.assign(
                subject, agent, description=form.get("description", ""), blocked_by=ids
            )
        return f"task #{task.id} -> {agent}" if agent else f"task #{task.id} (open)"
    if action == "send":
        from team.backends import post
        from team.core.events import SqliteEventLog

        text = form.get("text", "")
        if not text.strip():
            raise UserError("an empty message")
        sink = SqliteEventLog(site.ws.events_db)
        try:
            msg = post.send(site.ws, site.config(), form.get("to", ""), text, sink=sink)
        finally:
            sink.close()
        return f"sent {msg.id} to {msg.to}"
    if action in ("approve", "reject"):
        raw = form.get("task_id", "")
        if not raw.isdigit():
            raise UserError(f"{raw!r} is not a task id")
        note = form.get("note") if action == "approve" else form.get("why")
        if action == "reject" and not (note or "").strip():
            raise UserError("a rejection needs a reason (why)")
        with _teamwork(site) as tw:
            done = tw.review_plan(int(raw), action == "approve", note or None)
        return f"plan for task #{done.id} {done.plan_state}; {done.owner} is told"
    if action == "down":
        from team.agents.runtime.control import stop_team

        stop_team(site.ws, site.config(), 60.0, say=lambda line: None)
        return "team stopped"
    raise UserError(f"unknown action {action!r}")


# -- access --------------------------------------------------------------------------------

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Gate:
    """ASGI middleware: the token rule, the loopback Host rule and the action header."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    def _has_token(self, headers: dict[bytes, bytes]) -> bool:
        assert self.token is not None
        want = self.token.encode()
        auth = headers.get(b"authorization", b"")
        if auth.startswith(b"Bearer ") and hmac.compare_digest(auth[7:], want):
            return True
        for part in headers.get(b"cookie", b"").split(b";"):
            name, _, value = part.strip().partition(b"=")
            if name == COOKIE.encode() and hmac.compare_digest(value, want):
                return True
        return False

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        query = scope.get("query_string", b"").decode("latin-1")
        if self.token is None:
            host = headers.get(b"host", b"").decode("latin-1")
            if _host_name(host) not in LOOPBACK_NAMES:
                await _plain(send, 403, "this server answers loopback names only\n")
                return
        elif not self._has_token(headers):
            params = parse_qsl(query, keep_blank_values=True)
            given = dict(params).get("token", "")
            if given and hmac.compare_digest(given.encode(), self.token.encode()):
                # first visit from the printed link: keep the token in a cookie, drop it
                # from the address bar (and from the history)
                rest = urlencode([(k, v) for k, v in params if k != "token"])
                where = scope["path"] + (f"?{rest}" if rest else "")
                cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                await send(
                    {
                        "type": "http.response.start",
                        "status": 303,
                        "headers": [
                            (b"location", where.encode()),
                            (b"set-cookie", cookie.encode()),
                            (b"content-length", b"0"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
            await _plain(send, 401, "missing or wrong token\n", [(b"www-authenticate", b"Bearer")])
            return
        if scope["method"] == "POST" and headers.get(ACTION_HEADER.encode()) != b"1":
            await _plain(send, 403, f"actions need the {ACTION_HEADER} header\n")
            return
        await self.app(scope, receive, send)


async def _plain(send: Any, status: int, text: str, extra: list | None = None) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})


# -- the app -------------------------------------------------------------------------------


def create_app(ws: Any, token: str | None = None, interval: float | None = None) -> Any:
    """The ASGI app for the workspace `ws` (a token: every request must carry it)."""
    site = Site(ws)

    def blocking(method: Any, *args: Any, query: tuple[str, ...] = ()) -> Any:
        async def endpoint(request: Request) -> Response:
            values = [request.path_params[a] for a in args]
            params = {k: request.query_params[k] for k in query if k in request.query_params}
            try:
                return await run_in_threadpool(method, *values, **params)
            except UserError as e:
                return PlainTextResponse(f"{e}\n", status_code=400)

        return endpoint

    async def events(request: Request) -> Response:
        follower = Follower(site)
        await run_in_threadpool(follower.start, parse_last_id(request.headers.get("last-event-id")))
        kw = {} if interval is None else {"interval": interval}
        return StreamingResponse(
            stream(follower, request.is_disconnected, **kw),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def action(request: Request) -> Response:
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        name = request.path_params["name"]
        try:
            line = await run_in_threadpool(act, site, name, form)
        except UserError as e:
            return JSONResponse({"ok": False, "line": str(e)}, status_code=400)
        except OSError as e:
            return JSONResponse({"ok": False, "line": f"{e.strerror or e}"}, status_code=500)
        return JSONResponse({"ok": True, "line": line})

    async def home(request: Request) -> Response:
        return RedirectResponse("/", status_code=303)

    routes = [
        Route("/", blocking(site.team_page)),
        Route("/board", blocking(site.board_page)),
        Route("/messages", blocking(site.messages_page)),
        Route("/compaction", blocking(site.compaction_page, query=("agent", "before"))),
        Route("/study", blocking(site.study_page)),
        Route("/agent/{agent}", blocking(site.agent_page, "agent")),
        Route("/transcript/{agent}/{name:path}", blocking(site.transcript_page, "agent", "name")),
        Route("/fragment/timeline/{agent}", blocking(site.timeline_fragment, "agent")),
        Route("/events", events),
        Route("/action/{name}", action, methods=["POST"]),
        Route("/index.html", home),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.site = site
    return Gate(app, token)
