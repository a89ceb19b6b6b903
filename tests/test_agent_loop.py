"""The agent loop with a scripted model, real inboxes, a real task board and a real session log."""

from __future__ import annotations

import threading
import time

import pytest

from team.agents.runtime.supervisor import Runtime
from team.agents.session.log import SessionLog
from team.compaction.records import AssistantTurn, UserTurn
from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock, validate
from team.core.events import AgentEvent, MemorySink
from team.llm.base import ModelError
from team.llm.scripted import ScriptedModel, reply
from team.llm.sim import SimModel
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage
from team.tasks import TaskBoard
from team.workspace.config import render_config
from team.workspace.places import Workspace


def workspace(tmp_path) -> Workspace:
    ws = Workspace.at(tmp_path)
    ws.config_path.write_text(render_config("t", "sim", [("alice", "coder"), ("bob", "tester")]))
    return ws


def runtime(ws, model, sink=None) -> Runtime:
    return Runtime(ws, ws.load_config(), model, sink or MemorySink(), poll_s=0.05)


def deliver(ws, to, content, sender="bob", type="message"):
    msg = MailMessage(sender=sender, to=to, content=content, type=type)
    MaildirMailbox(ws.inbox_dir(to)).deliver(msg)
    return msg


def bash(i, cmd="echo hi"):
    return ToolUseBlock(f"toolu_{i}", "bash", {"command": cmd})


def test_a_message_arriving_mid_tool_loop_reaches_the_next_call(tmp_path):
    ws = workspace(tmp_path)

    def first(request):
        deliver(ws, "alice", "ping from bob")  # lands while the tool loop runs
        return reply(bash(1))

    model = ScriptedModel([first, reply("done")])
    deliver(ws, "alice", "start", sender="user")
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    assert len(model.requests) == 2
    second = model.requests[1].messages[-1]
    assert isinstance(second.content[0], ToolResultBlock)
    assert "ping from bob" in second.content[-1].text and 'from="bob"' in second.content[-1].text
    validate(model.requests[1].messages)
    assert MaildirMailbox(ws.inbox_dir("alice")).pending() == []


def test_an_agent_that_stops_with_open_tasks_is_reminded_once(tmp_path):
    ws = workspace(tmp_path)
    board = TaskBoard(ws.tasks_dir)
    task = board.create("Fix the parser", owner="alice")
    model = ScriptedModel([reply("I'll get to it"), reply("still later")])
    deliver(ws, "alice", "hello", sender="user")
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    assert len(model.requests) == 2  # once reminded, it waits for new input
    reminder = model.requests[1].messages[-1].text()
    assert reminder.startswith("Reminder: you still own open tasks:") and f"#{task.id}" in reminder


def test_an_idle_agent_claims_an_open_task(tmp_path):
    ws = workspace(tmp_path)
    board = TaskBoard(ws.tasks_dir)
    board.create("Write docs")
    model = ScriptedModel([reply("on it")], default=reply("ok"))
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    assert board.list()[0].owner == "alice" and board.list()[0].status == "in_progress"
    assert "You claimed open task #1: Write docs" in model.requests[0].messages[-1].text()


def test_a_tool_call_cut_off_by_a_crash_gets_an_interrupted_result(tmp_path):
    ws = workspace(tmp_path)
    # what a process killed after the model asked for bash leaves behind
    log = SessionLog(ws.session_log("alice"))
    log.append(UserTurn((TextBlock("<message>go</message>"),)))
    log.append(AssistantTurn(Message("assistant", (bash(1),))))
    log.close()
    model = ScriptedModel([reply("I will run it again")])
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    msgs = model.requests[0].messages
    validate(msgs)
    result = msgs[-1].content[0]
    assert (
        isinstance(result, ToolResultBlock) and result.is_error and "Interrupted" in result.content
    )
    assert msgs[0].text() == "<message>go</message>"


def test_a_failed_model_call_changes_nothing_and_is_retried(tmp_path):
    ws = workspace(tmp_path)
    model = ScriptedModel([ModelError("529 overloaded"), reply("fine now")])
    deliver(ws, "alice", "go", sender="user")
    agent = runtime(ws, model).build_agent("alice")
    agent.run(until_idle=True)
    assert model.requests[0].messages == model.requests[1].messages
    again = runtime(ws, ScriptedModel()).build_agent("alice")
    again.resume()
    assert [m.role for m in again.context.messages] == ["user", "assistant"]
    assert again.context.messages[-1] == Message("assistant", (TextBlock("fine now"),))


def test_shutdown_is_answered_in_the_requesters_inbox(tmp_path):
    ws = workspace(tmp_path)
    rt = runtime(ws, SimModel())
    rt.start()
    try:
        rt.request_stop()
        assert rt.wait(timeout=20)
    finally:
        rt.close()
    answers = MaildirMailbox(ws.inbox_dir("user")).pending()
    assert sorted(m.sender for m in answers) == ["alice", "bob"]
    assert all(m.type == "shutdown_response" for m in answers)


def test_a_crashed_agent_thread_is_restarted_and_finishes(tmp_path):
    ws = workspace(tmp_path)
    sim = SimModel()
    crashed = threading.Event()

    def flaky(request):
        if request.agent == "alice" and not crashed.is_set():
            crashed.set()
            raise RuntimeError("bug in a collaborator")
        return sim.complete(request)

    sink = MemorySink()
    TaskBoard(ws.tasks_dir).create("Count lines in team.toml", owner="alice")
    deliver(ws, "alice", "Count lines in team.toml", sender="user", type="task")
    rt = runtime(ws, ScriptedModel(default=flaky), sink)
    rt.start()
    try:
        assert rt.wait(until_idle=True, idle_grace=0.3, timeout=60)
    finally:
        rt.close()
    kinds = [e.kind for e in sink.of(AgentEvent) if e.agent == "alice"]
    assert "crashed" in kinds and "restarted" in kinds
    assert TaskBoard(ws.tasks_dir).all_done()


def test_an_agent_that_cannot_even_be_built_does_not_hold_up_a_stop(tmp_path):
    """It crash-loops before it could read a shutdown request: the stop ends its backoff."""
    ws = workspace(tmp_path)
    ws.session_log("alice").mkdir(parents=True)  # a folder where its log should be
    sink = MemorySink()
    rt = runtime(ws, ScriptedModel(default=reply("ok")), sink)
    rt.start()
    try:
        deadline = time.monotonic() + 60
        while rt.crashes.get("alice", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rt.crashes.get("alice", 0) >= 2
        assert rt.status()["agents"]["alice"]["state"] == "crashed, restarting"
        rt.request_stop()
        waiting = threading.Thread(target=rt.wait, kwargs={"stop_grace": 600}, daemon=True)
        waiting.start()
        waiting.join(timeout=60)  # without the check it waits out stop_grace
        assert not waiting.is_alive(), "a crash-looping agent held the team up"
    finally:
        rt.close()
    assert [e.kind for e in sink.of(AgentEvent) if e.agent == "bob"][-1] == "stopped"


def test_shutdown_during_a_tool_batch_keeps_the_batch_and_repeats_nothing(tmp_path):
    ws = workspace(tmp_path)
    send = ToolUseBlock("toolu_s", "send_message", {"to": "bob", "content": "hello bob"})
    look = ToolUseBlock("toolu_r", "read_inbox", {})

    def first(request):  # `team down` lands while the model is thinking
        deliver(ws, "alice", "stop please", sender="user", type="shutdown_request")
        return reply(send, look)

    model = ScriptedModel([first], default=reply("ok"))
    agent = runtime(ws, model).build_agent("alice")
    deliver(ws, "alice", "go", sender="user")
    agent.run()  # runs the batch (read_inbox sees the request), then stops at the boundary
    assert len(model.requests) == 1
    bob = MaildirMailbox(ws.inbox_dir("bob")).pending()
    assert [m.content for m in bob] == ["hello bob"]
    answers = MaildirMailbox(ws.inbox_dir("user")).pending()
    assert [m.type for m in answers] == ["shutdown_response"]
    again = runtime(ws, ScriptedModel(default=reply("ok"))).build_agent("alice")
    again.resume()
    results = [b for b in again.context.messages[-1].content if isinstance(b, ToolResultBlock)]
    assert {r.tool_use_id for r in results} == {"toolu_s", "toolu_r"}
    assert not any("Interrupted" in r.content for r in results)


def test_a_teammate_cannot_shut_another_agent_down(tmp_path):
    ws = workspace(tmp_path)
    agent = runtime(ws, ScriptedModel()).build_agent("bob")
    r = agent.toolbox.run(
        "send_message", {"to": "alice", "content": "stop", "msg_type": "shutdown_request"}
    )
    assert r.is_error and "msg_type" in r.content
    assert MaildirMailbox(ws.inbox_dir("alice")).pending() == []


def test_a_task_claimed_just_before_a_crash_is_not_forgotten(tmp_path):
    ws = workspace(tmp_path)
    deliver(ws, "alice", "hello", sender="user")
    runtime(ws, ScriptedModel(default=reply("ok"))).build_agent("alice").run(until_idle=True)
    # the claim reached the board, the process died before the session log heard of it
    board = TaskBoard(ws.tasks_dir)
    task = board.create("Write the changelog")
    board.claim(task.id, "alice")
    model = ScriptedModel(default=reply("ok"))
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    assert f"#{task.id} Write the changelog" in model.requests[0].messages[-1].text()


def test_a_crash_between_archive_and_log_loses_nothing(tmp_path):
    """kill -9 after the transcript is written but before the session log records the
    compaction: the restart continues the old segment, and the transcript is extra."""
    ws = workspace(tmp_path)
    model = ScriptedModel([reply(bash(1, "seq 1 50")), reply("done")], summary=reply("summary"))
    deliver(ws, "alice", "go", sender="user")
    agent = runtime(ws, model).build_agent("alice")
    agent.run(until_idle=True)
    before = [m.to_dict() for m in agent.context.messages]
    rec = agent.context.compactor.compact(
        agent.context.history, identity=agent.identity(), layer="manual", trigger="test"
    )
    assert rec is not None  # ...and the process dies before the record is appended
    again = runtime(ws, ScriptedModel()).build_agent("alice")
    again.resume()
    assert [m.to_dict() for m in again.context.messages] == before
    assert len(list(ws.transcripts_dir("alice").glob("*.jsonl"))) == 1


def test_mail_taken_in_before_a_crash_is_still_new_in_the_facts_after_resume(tmp_path):
    """The log holds the mail but no reply to it: the resumed agent's first request names
    it as new mail, as the request before the crash would have."""
    ws = workspace(tmp_path)
    sent = deliver(ws, "alice", "please run the tests", sender="user")
    crashing = ScriptedModel([RuntimeError("the process died mid-call")])
    with pytest.raises(RuntimeError):
        runtime(ws, crashing).build_agent("alice").run(until_idle=True)
    assert [m.id for m in crashing.requests[0].facts.new_mail] == [sent.id]
    model = ScriptedModel([reply("on it")])
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    new = model.requests[0].facts.new_mail
    assert [(m.id, m.sender, m.body) for m in new] == [(sent.id, "user", "please run the tests")]


def test_mail_read_with_read_inbox_is_new_in_the_next_facts(tmp_path):
    ws = workspace(tmp_path)

    def first(request):
        deliver(ws, "alice", "ping from bob")  # lands while the model thinks
        return reply(ToolUseBlock("toolu_r", "read_inbox", {}))

    model = ScriptedModel([first, reply("done")])
    deliver(ws, "alice", "start", sender="user")
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    second = model.requests[1]
    assert [m.body for m in second.facts.new_mail] == ["ping from bob"]


def test_mail_recorded_before_a_crash_is_not_taken_twice_after_a_long_run(tmp_path, monkeypatch):
    """The seen-ids window covers the newest mail turns only (memory flat over hours),
    and still drops the mail a crash left recorded but not marked done."""
    monkeypatch.setattr("team.agents.session.log.SEEN_TURNS", 3)
    ws = workspace(tmp_path)
    early = []
    for i in range(6):  # six mail turns, twice the window
        early.append(deliver(ws, "alice", f"note {i}", sender="user"))
        runtime(ws, ScriptedModel(default=reply("ok"))).build_agent("alice").run(until_idle=True)
    # the process records the next mail, then dies before marking it done
    last = deliver(ws, "alice", "the one before the crash", sender="user")
    (claim,) = MaildirMailbox(ws.inbox_dir("alice")).receive()
    session = SessionLog(ws.session_log("alice"))
    session.load()
    session.append(UserTurn((TextBlock(f"mail {claim.message.id}"),), inbox=(last.id,)))
    session.close()
    model = ScriptedModel(default=reply("ok"))
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    assert all("the one before the crash" not in r.messages[-1].text() for r in model.requests)
    assert MaildirMailbox(ws.inbox_dir("alice")).pending() == []
    reloaded = SessionLog(ws.session_log("alice"))
    reloaded.load()
    assert reloaded.seen(last.id) and not reloaded.seen(early[0].id)


def test_a_quiet_team_with_a_task_nobody_finishes_says_so_once(tmp_path, monkeypatch, caplog):
    # alice says she is done but never completes the task (as a real model can): the team
    # goes quiet with #1 open; --until-idle waits for it, and says why once, not every tick
    from team.agents.runtime import supervisor

    monkeypatch.setattr(supervisor, "STALL_NOTICE_S", 0.5)
    ws = workspace(tmp_path)
    TaskBoard(ws.tasks_dir).create("Fix the parser", owner="alice")
    deliver(ws, "alice", "Fix the parser", sender="user", type="task")
    rt = runtime(ws, ScriptedModel(default=reply("All done, I think.")))
    rt.start()
    try:
        with caplog.at_level("WARNING", logger=supervisor.__name__):
            assert not rt.wait(until_idle=True, idle_grace=0.1, timeout=4)  # the timeout ends it
    finally:
        rt.close()
    said = [r.getMessage() for r in caplog.records if "still open" in r.getMessage()]
    assert len(said) == 1, said
    assert "#1 (alice, pending)" in said[0] and "--timeout" in said[0]
