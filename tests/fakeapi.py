"""A local stand-in for the Anthropic Messages API, strict about what the real API rejects.

`FakeMessagesAPI` is a real HTTP server on 127.0.0.1 (the SDK runs on httpx2, so only a
real socket intercepts it). It validates every POST /v1/messages on the raw JSON,
independently of `team.core.conversation`, so it checks our client rather than echoing it,
answers valid requests through a `responder`, simulates the prompt cache per block
(`fakeapi_cache`: lookback, per-model minimum, TTL),
can inject failures (429/529/500, and 401/403/404 with `fail_next`), and with
`context_window` answers an over-long request with the API's prompt-too-long 400. Every
call is recorded for assertions.

Use it as a context manager in tests, or run it as a process for end-to-end runs:

    python tests/fakeapi.py --port-file PORT [--responder pkg.mod:func] [--record calls.jsonl]
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from team.llm.prices import context_window

if __package__:  # imported as tests.fakeapi
    from .fakeapi_cache import PromptCache
    from .fakeapi_rules import request_problems, tokens
else:  # tests/ on sys.path (pytest's default) or run as a script
    from fakeapi_cache import PromptCache
    from fakeapi_rules import request_problems, tokens

Responder = Callable[[dict[str, Any]], dict[str, Any]]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
SECRET_HEADERS = {"x-api-key", "authorization"}


# --------------------------------------------------------------------------- responders


class FakeError(Exception):
    """Raised by a responder to answer this one call with an API error (e.g. 404 for one agent)."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message or ERROR_TYPES.get(status, "api_error"))
        self.status = status


def text_responder(text: str = "OK") -> Responder:
    """A responder that always ends the turn with `text`."""

    def respond(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}

    return respond


class ScriptedResponder:
    """Answers with `replies` in order (a str is a text reply), then with `then` forever."""

    def __init__(self, replies: list[dict[str, Any] | str], then: str = "OK") -> None:
        self._replies = list(replies)
        self._then = then
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            reply = self._replies.pop(0) if self._replies else self._then
        if isinstance(reply, str):
            return {"content": [{"type": "text", "text": reply}], "stop_reason": "end_turn"}
        return reply


# ----------------------------------------------------------------------------- the server


@dataclass
class Call:
    """One HTTP call as the server saw it (credential headers redacted)."""

    path: str
    headers: dict[str, str]
    body: Any
    status: int
    error_type: str = ""
    error: str = ""
    response: dict[str, Any] | None = None

    @property
    def injected(self) -> bool:
        return self.error.startswith("injected")


class FakeMessagesAPI:
    """A local Messages API. `with FakeMessagesAPI() as api:` serves on `api.url`.

    Args:
        responder: request JSON -> {"content": [...], "stop_reason"?: str, "usage"?: {...}}.
        failure_rate: fraction of valid calls answered with an injected failure.
        failure_statuses: the statuses injected failures draw from (429, 529, 500).
        seed: seeds the failure draws so a run is reproducible.
        retry_after_ms: sent with injected failures; the SDK honours `retry-after-ms`, which
            keeps its backoff (0.5 s, 1 s, 2 s, ... otherwise) short in tests.
        allow_prefill: accept requests that end on an assistant turn.
        record_path: also append every call as a JSON line here (for other processes).
        context_window: a valid request estimated above this many tokens is answered
            400 "prompt is too long", as the real API does past the window; default the
            window of the model it names (team.llm.prices).
        clock: the prompt cache's clock (monotonic seconds), so tests can expire it.
        models: the model ids `GET /v1/models` lists (dated, as the real API lists them).
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        failure_rate: float = 0.0,
        failure_statuses: tuple[int, ...] = (429, 529, 500),
        seed: int = 0,
        retry_after_ms: int = 10,
        allow_prefill: bool = False,
        record_path: str | os.PathLike[str] | None = None,
        port: int = 0,
        context_window: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        models: tuple[str, ...] = ("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"),
    ) -> None:
        self.models = models
        self.responder = responder or text_responder()
        self.failure_rate = failure_rate
        self.failure_statuses = failure_statuses
        self.retry_after_ms = retry_after_ms
        self.allow_prefill = allow_prefill
        self.context_window = context_window
        self.cache = PromptCache(clock)
        self.calls: list[Call] = []
        self._rng = random.Random(seed)
        self._queued: list[int] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._record = Path(record_path) if record_path else None
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The base URL to give the SDK (ANTHROPIC_BASE_URL)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeMessagesAPI:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="fakeapi",
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout)

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail_next(self, *statuses: int) -> None:
        """Answer the next valid calls with these statuses, in order (deterministic)."""
        with self._lock:
            self._queued.extend(statuses)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of every call that reached validation, in arrival order."""
        return [c.body for c in self.calls if isinstance(c.body, dict)]

    @property
    def rejections(self) -> list[Call]:
        """Calls answered 400/401/404: what the real API would have refused."""
        return [c for c in self.calls if c.status in (400, 401, 404)]

    @property
    def answered(self) -> list[Call]:
        return [c for c in self.calls if c.status == 200]

    def handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict, dict]:
        """Answer one call: (status, extra response headers, JSON body). Thread-safe."""
        shown = {k: ("<redacted>" if k in SECRET_HEADERS else v) for k, v in headers.items()}
        call = Call(path, shown, None, 200)
        status, extra, out = self._answer(call, headers, raw)
        call.status = status
        if status != 200:
            call.error_type, call.error = out["error"]["type"], out["error"]["message"]
        else:
            call.response = out
        with self._lock:
            self.calls.append(call)
            if self._record:
                with self._record.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(call)) + "\n")
        return status, extra, out

    def list_models(self, path: str, headers: dict[str, str]) -> tuple[int, dict, dict]:
        """`GET /v1/models`: one page of every model, in the API's shape; 401 without a key."""
        if path_of(path) != "/v1/models":
            return _error(404, f"Not found: {path}")
        if not headers.get("x-api-key") and not headers.get("authorization"):
            return _error(401, "x-api-key header is required")
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2025-09-29T00:00:00Z"}
            for m in self.models
        ]
        page = {"data": data, "has_more": False, "first_id": None, "last_id": None}
        if data:
            page.update(first_id=data[0]["id"], last_id=data[-1]["id"])
        return 200, {}, page

    def _answer(self, call: Call, headers: dict[str, str], raw: bytes) -> tuple[int, dict, dict]:
        if path_of(call.path) != "/v1/messages":
            return _error(404, f"Not found: {call.path}")
        bearer = headers.get("authorization", "")
        if not headers.get("x-api-key") and not bearer.removeprefix("Bearer ").strip():
            return _error(401, "x-api-key header is required")
        if not headers.get("anthropic-version"):
            return _error(400, "anthropic-version: header is required")
        try:
            call.body = json.loads(raw or b"null")
        except ValueError as e:
            return _error(400, f"There was an issue with your request body: invalid JSON ({e})")
        problem = next(request_problems(call.body, allow_prefill=self.allow_prefill), None)
        if problem:
            return _error(400, problem)
        window = self.context_window or context_window(str(call.body.get("model", "")))
        size = prompt_tokens(call.body)
        if size > window:
            return _error(400, f"prompt is too long: {size} tokens > {window} maximum")
        with self._lock:  # draw before any state changes, so a failed call changes nothing
            if self._queued:
                injected: int | None = self._queued.pop(0)
            elif self.failure_rate and self._rng.random() < self.failure_rate:
                injected = self._rng.choice(self.failure_statuses)
            else:
                injected = None
        if injected is not None:
            status, extra, out = _error(injected, f"injected {ERROR_TYPES[injected]}")
            extra.update({"retry-after": "0", "retry-after-ms": str(self.retry_after_ms)})
            return status, extra, out
        try:
            return 200, {}, self._respond(call.body)
        except FakeError as e:
            return _error(e.status, str(e))
        except Exception as e:  # a broken responder is a test bug: say so, don't retry it
            status, extra, out = _error(500, f"responder failed: {type(e).__name__}: {e}")
            return status, {"x-should-retry": "false"}, out

    def _respond(self, body: dict[str, Any]) -> dict[str, Any]:
        counted = self.cache.account(body)
        if body["max_tokens"] == 0:  # pre-warming: cache written, nothing generated
            reply: dict[str, Any] = {"content": [], "stop_reason": "max_tokens"}
        else:
            reply = self.responder(body)
        with self._lock:
            n = next(self._ids)
        content = []
        for k, block in enumerate(reply.get("content", [])):
            block = dict(block)
            if block.get("type") == "tool_use":
                block.setdefault("id", f"toolu_fake{n:05d}{k:02d}")
                block.setdefault("input", {})
            content.append(block)
        has_tool_use = any(b.get("type") == "tool_use" for b in content)
        usage = {
            "input_tokens": counted["input_tokens"],
            "output_tokens": tokens(len(json.dumps(content))) if content else 0,
            "cache_creation_input_tokens": counted["cache_creation_input_tokens"],
            "cache_read_input_tokens": counted["cache_read_input_tokens"],
            "cache_creation": {
                "ephemeral_5m_input_tokens": counted["ephemeral_5m"],
                "ephemeral_1h_input_tokens": counted["ephemeral_1h"],
            },
            **reply.get("usage", {}),
        }
        return {
            "id": f"msg_fake{n:06d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": reply.get("stop_reason") or ("tool_use" if has_tool_use else "end_turn"),
            "stop_sequence": None,
            "usage": usage,
        }


def prompt_tokens(body: dict[str, Any]) -> int:
    """About how many tokens the request's prompt holds (system, tools and messages)."""
    parts = (body.get("system") or "", body.get("tools") or [], body["messages"])
    return tokens(sum(len(json.dumps(p)) for p in parts))


def path_of(path: str) -> str:
    return path.split("?", 1)[0].rstrip("/")


def _error(status: int, message: str) -> tuple[int, dict, dict]:
    kind = ERROR_TYPES.get(status, "api_error")
    return status, {}, {"type": "error", "error": {"type": kind, "message": message}}


def _handler_for(api: FakeMessagesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client died mid-request (kill -9): no request
                self.close_connection = True
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, out = api.handle(self.path, headers, raw)
            self._send(status, extra, out)

        def do_GET(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._send(*api.list_models(self.path, headers))

        def _send(self, status: int, extra: dict, out: dict) -> None:
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_fake{len(api.calls):06d}")
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    return Handler


def load_record(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the calls another process's server appended to `record_path`."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line]


def load_responder(spec: str) -> Responder:
    """Import `package.module:function` (the current directory is on the path)."""
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"fakeapi: --responder must look like module:function, not {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return getattr(importlib.import_module(module), attr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the port here (atomically) once listening")
    parser.add_argument("--responder", help="module:function taking the request JSON")
    parser.add_argument("--text", default="OK", help="the default responder's reply")
    parser.add_argument("--failure-rate", type=float, default=0.0)
    parser.add_argument("--failure-statuses", default="429,529,500")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retry-after-ms", type=int, default=10)
    parser.add_argument("--allow-prefill", action="store_true")
    parser.add_argument("--record", help="append every call as a JSON line to this file")
    parser.add_argument("--context-window", type=int, help="prompt-too-long past this many tokens")
    args = parser.parse_args(argv)
    responder = load_responder(args.responder) if args.responder else text_responder(args.text)
    api = FakeMessagesAPI(
        responder,
        failure_rate=args.failure_rate,
        failure_statuses=tuple(int(s) for s in args.failure_statuses.split(",") if s),
        seed=args.seed,
        retry_after_ms=args.retry_after_ms,
        allow_prefill=args.allow_prefill,
        record_path=args.record,
        port=args.port,
        context_window=args.context_window,
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with api:
        if args.port_file:
            tmp = Path(f"{args.port_file}.tmp")
            tmp.write_text(str(api.port), encoding="utf-8")
            tmp.replace(args.port_file)  # rename: a reader never sees a half-written port
        print(f"fakeapi listening on {api.url}", flush=True)
        while not stop.wait(0.2):
            pass


if __name__ == "__main__":
    main()
