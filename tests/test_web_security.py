"""`team web` attacked as a stranger would: no token off the loopback, paths outside the
transcripts, another site's page posting an action, a rebinding Host. Each against the
real server (`team web` in a subprocess), over raw HTTP so that no client tidies the
path first."""

from __future__ import annotations

import http.client
import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from teamrun import make_workspace
from webrun import team_cli, web_server

from team.workspace.places import Workspace

pytestmark = pytest.mark.slow


def request(
    base: str, path: str, method: str = "GET", headers: dict | None = None, body: str | None = None
) -> tuple[int, dict, str]:
    u = urlsplit(base)
    conn = http.client.HTTPConnection("127.0.0.1", u.port, timeout=30)
    hdrs = {"Host": f"127.0.0.1:{u.port}", **(headers or {})}
    if body is not None:
        hdrs.setdefault("Content-Type", "application/x-www-form-urlencoded")
    # skip_host: the Host header is ours to choose (a rebinding attack picks it)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in hdrs.items():
        conn.putheader(k, v)
    data = body.encode() if body is not None else None
    if data is not None:
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    r = conn.getresponse()
    text = r.read(200_000).decode("utf-8", "replace") if method != "HEAD" else ""
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, text
    conn.close()
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path / "project", "sim")


PAGES = ["/", "/board", "/messages", "/compaction", "/study", "/agent/alice", "/static/app.js"]


def test_off_the_loopback_every_request_needs_the_token(ws: Workspace) -> None:
    with web_server(ws.root, "--host", "0.0.0.0") as server:
        token = server.url.split("?token=", 1)[1]
        assert "printed only this once" in server.lines[1]
        saved = ws.web_token
        assert saved.read_text().strip() == token
        assert stat.S_IMODE(os.stat(saved).st_mode) == 0o600
        for path in [*PAGES, "/events", "/transcript/alice/x.jsonl"]:
            status, _, body = request(server.base, path)
            assert status == 401, (path, status)
            assert "token" in body
        status, _, _ = request(server.base, "/", headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, _, _ = request(server.base, "/?token=wrong")
        assert status == 401
        status, _, _ = request(server.base, "/action/send", "POST", body="to=alice&text=hi")
        assert status == 401
        assert (
            not list((ws.inbox_dir("alice") / "new").glob("*"))
            if ws.inbox_dir("alice").exists()
            else True
        )
        for path in PAGES:
            status, _, _ = request(server.base, path, headers={"Authorization": f"Bearer {token}"})
            assert status == 200, path
        # the printed link: the token becomes a cookie and leaves the address bar
        status, headers, _ = request(server.base, f"/board?token={token}")
        assert status == 303 and headers["location"] == "/board"
        cookie = headers["set-cookie"].split(";", 1)[0]
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
        status, _, body = request(server.base, "/board", headers={"Cookie": cookie})
        assert status == 200 and "Board" in body
    # a second start keeps the token and does not print it again
    with web_server(ws.root, "--host", "0.0.0.0") as again:
        assert "?token=" not in again.url and str(ws.web_token) in again.lines[0]
        status, _, _ = request(again.base, "/", headers={"Authorization": f"Bearer {token}"})
        assert status == 200


def test_a_given_token_is_asked_for_on_the_loopback_too(ws: Workspace) -> None:
    token = "a-token-of-our-own-choosing"
    with web_server(ws.root, "--token", token) as server:
        assert token not in " ".join(server.lines)
        assert request(server.base, "/")[0] == 401
        assert request(server.base, "/", headers={"Authorization": f"Bearer {token}"})[0] == 200
    r = team_cli(ws.root, "web", "--port", "0", "--host", "0.0.0.0", "--token", "short")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "team: error: --token: give at least 16 characters (or leave it out)"
    ]


def test_on_the_loopback_other_host_names_and_cross_site_posts_are_refused(
    ws: Workspace,
) -> None:
    with web_server(ws.root) as server:
        assert request(server.base, "/")[0] == 200
        # DNS rebinding: a page of evil.example resolved to 127.0.0.1
        status, _, _ = request(server.base, "/", headers={"Host": "evil.example:80"})
        assert status == 403
        # a form on another site posting to us: no X-Team-Action header
        status, _, _ = request(server.base, "/action/send", "POST", body="to=alice&text=hi")
        assert status == 403
        assert not (ws.inbox_dir("alice") / "new").exists() or not list(
            (ws.inbox_dir("alice") / "new").iterdir()
        )
        status, _, body = request(
            server.base,
            "/action/send",
            "POST",
            headers={"X-Team-Action": "1"},
            body="to=alice&text=hi",
        )
        assert status == 200 and '"ok":true' in body.replace(" ", "")
        assert len(list((ws.inbox_dir("alice") / "new").iterdir())) == 1
        # bad input: one line, not a traceback
        status, _, body = request(
            server.base,
            "/action/send",
            "POST",
            headers={"X-Team-Action": "1"},
            body="to=mallory&text=hi",
        )
        assert status == 400 and "unknown agent 'mallory'" in body


def test_the_transcript_viewer_serves_only_transcripts(ws: Workspace, tmp_path: Path) -> None:
    folder = ws.transcripts_dir("alice")
    folder.mkdir(parents=True)
    real = folder / "0001-20260101T000000Z-auto.jsonl"
    line = '{"role": "user", "content": [{"type": "text", "text": "the archived segment"}]}'
    real.write_text(line + "\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("the password is swordfish\n")
    (folder / "0002-20260101T000001Z-auto.jsonl").symlink_to(secret)
    (folder / "inner").symlink_to(ws.root)  # a folder link out of .transcripts
    (ws.transcripts_root / "bob").symlink_to(ws.team_dir)
    with web_server(ws.root) as server:
        status, _, body = request(server.base, f"/transcript/alice/{real.name}")
        assert status == 200 and "the archived segment" in body
        for path in [
            "/transcript/alice/../../team.toml",
            "/transcript/alice/..%2f..%2fteam.toml",
            "/transcript/alice/%2e%2e/%2e%2e/team.toml",
            "/transcript/alice/..%5c..%5cteam.toml",
            "/transcript/..%2f.team/status.json",
            "/transcript/alice/0002-20260101T000001Z-auto.jsonl",
            "/transcript/alice/inner/team.toml",
            "/transcript/bob/status.json",
            f"/transcript/alice/{secret}",
            f"/transcript/alice/%2f{str(secret).lstrip('/')}",
            "/transcript/alice/",
            "/transcript/mallory/x.jsonl",
            "/static/../team.toml",
            "/static/%2e%2e/app.py",
        ]:
            status, _, body = request(server.base, path)
            assert status == 404, (path, status)
            assert "swordfish" not in body and "[team]" not in body
