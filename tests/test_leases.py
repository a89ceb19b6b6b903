"""Agent leases on a real Redis: one node per agent, renewed while held, lapsing after kill -9."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from teamrun import wait_for

from team.backends.redis_lease import LeaseHeld, Leases
from team.backends.redis_link import RedisLink


def leases(url: str, node: str, seconds: float = 1.0, **kw) -> Leases:
    return Leases(RedisLink(url, "lt", wait=True), node, seconds, **kw)


def test_a_held_agent_is_refused_with_one_line_naming_the_holder(redis_url: str) -> None:
    a, b = leases(redis_url, "gpu-box", 30), leases(redis_url, "laptop", 30)
    a.acquire("alice")
    with pytest.raises(LeaseHeld) as e:
        b.acquire("alice")
    line = str(e.value)
    assert "\n" not in line
    assert "'alice'" in line and "'gpu-box'" in line and "lapses within 30s" in line
    b.acquire("bob")  # other agents are free
    assert b.holder("alice")["node"] == "gpu-box"
    assert set(a.running(["alice", "bob", "carol"])) == {"alice", "bob"}
    a.close()  # releases
    b.acquire("alice")
    assert b.held() == ["alice", "bob"]
    b.close()
    assert a.running(["alice", "bob"]) == {}


def test_the_keeper_renews_a_lease_past_its_time(redis_url: str) -> None:
    a, b = leases(redis_url, "a", 1.0), leases(redis_url, "b", 1.0)
    a.acquire("alice")
    deadline = time.monotonic() + 2.5  # 2.5 lease times
    while time.monotonic() < deadline:
        with pytest.raises(LeaseHeld):
            b.acquire("alice")
        time.sleep(0.2)
    a.close()


def test_a_lease_lapses_after_its_holder_is_killed(redis_url: str) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import time
                from team.backends.redis_lease import Leases
                from team.backends.redis_link import RedisLink
                Leases(RedisLink({redis_url!r}, "lt", wait=True), "doomed", 1.0).acquire("alice")
                print("held", flush=True)
                time.sleep(120)
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        other = leases(redis_url, "survivor", 1.0)
        with pytest.raises(LeaseHeld, match="'doomed'"):
            other.acquire("alice")
        holder.kill()  # kill -9: no release, no more renewals
        holder.wait(timeout=10)

        def taken() -> bool:
            try:
                other.acquire("alice")
            except LeaseHeld:
                return False
            return True

        wait_for(taken, timeout=20, what="the dead node's lease to lapse")
        assert other.holder("alice")["node"] == "survivor"
        other.close()
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_lapsed_lease_is_taken_back_and_a_stolen_one_reported(redis_url: str) -> None:
    lost: list[str] = []
    a = leases(redis_url, "a", 30, on_lost=lost.append)
    a.acquire("alice")
    a.acquire("bob")
    client = a.link.client
    client.delete(a.key("alice"))  # lapsed while Redis was away; nobody took it
    client.delete(a.key("bob"))
    leases(redis_url, "b", 30).acquire("bob")  # ... and this one another node took
    a.renew()
    assert a.holder("alice")["node"] == "a"
    assert lost == ["bob"] and a.held() == ["alice"]
    assert a.holder("bob")["node"] == "b"
    a.close()
    assert a.holder("bob")["node"] == "b"  # never releases what is not ours


def _holder_of(proc_pid: int, **over) -> dict:
    import socket

    from team.backends.redis_lease import pid_namespace

    return {"node": "n", "host": socket.gethostname(), "pid": proc_pid,
            "pidns": pid_namespace(), **over}  # fmt: skip


def test_only_a_holder_dead_on_this_host_and_pid_namespace_counts_as_gone() -> None:
    from team.backends.redis_lease import holder_gone

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its pid is free
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert holder_gone(_holder_of(dead.pid))
        assert not holder_gone(_holder_of(alive.pid))  # alive: wait for it
        assert not holder_gone(_holder_of(dead.pid, host="another-machine"))
        assert not holder_gone(_holder_of(dead.pid, pidns="pid:[1]"))  # a container's pid
        assert not holder_gone(_holder_of(dead.pid, pidns=None))  # an older record
        assert not holder_gone(_holder_of("123"))  # type: ignore[arg-type]
        alive.kill()  # killed, not yet reaped: a zombie is dead too
        wait_for(lambda: holder_gone(_holder_of(alive.pid)), timeout=30, what="the zombie")
    finally:
        alive.kill()
        alive.wait()


def test_a_lease_of_a_dead_pid_here_is_taken_at_once(redis_url: str) -> None:
    import json

    link = RedisLink(redis_url, "lt", wait=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    link.client.set(link.key("lease", "dora"), json.dumps(_holder_of(dead.pid)), px=60_000)
    b = leases(redis_url, "restarted", 60)
    b.acquire("dora")  # no LeaseHeld, no wait for the 60 s
    assert b.holder("dora")["node"] == "restarted"
    b.close()


def test_a_message_delivered_twice_with_one_id_is_in_the_stream_once(redis_url: str) -> None:
    from team.backends.redis_inbox import RedisMailbox
    from team.mailbox.message import MailMessage

    box = RedisMailbox(RedisLink(redis_url, "lt"), "erin")
    msg = MailMessage.model_validate({"from": "user", "to": "erin", "content": "hi", "id": "m-1"})
    first = box.deliver(msg)
    assert box.deliver(msg) == first  # a retry: the same entry, nothing added
    other = MailMessage.model_validate({"from": "user", "to": "erin", "content": "hi"})
    assert box.deliver(other) != first
    ids = [e.message.id for e in box.entries() if e.message is not None]
    assert ids == ["m-1", other.id]
