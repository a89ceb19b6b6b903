"""Tool results that fit (issue 25): whatever a tool returns or a teammate sends, what
enters the conversation is at most the cap, and the whole is kept on disk where
`read_result` reads it back. The agent loop with a scripted model, a real board, real
inboxes and the real session log."""

from __future__ import annotations

import json
import re
from typing import Any

from test_agent_loop import deliver, runtime, workspace

from team.agents.build import Parts, build_agent
from team.agents.session.log import read_records
from team.agents.tools.input import ToolResult
from team.compaction.records import UserTurn
from team.core.conversation import TextBlock, ToolResultBlock, ToolUseBlock
from team.core.events import MemorySink
from team.llm.scripted import ScriptedModel, reply
from team.tasks import TaskBoard

CAP = 30_000  # the default `[compaction] result_cap`
POINTER = re.compile(r'read_result\{"id": "([^"]+)", "offset": (\d+)\}')


def results_of(ws, agent="alice") -> list[ToolResultBlock]:
    return [
        b
        for rec in read_records(ws.session_log(agent))
        if isinstance(rec, UserTurn)
        for b in rec.blocks
        if isinstance(b, ToolResultBlock)
    ]


def read_back(model: ScriptedModel, start: str):
    """Replies that follow the pointer with read_result until the end, then stop."""
    state = {"n": 0}

    def step(request):
        last = request.messages[-1].content[-1]
        text = last.content if isinstance(last, ToolResultBlock) else ""
        found = POINTER.search(text)
        if found is None:
            return reply("done")
        state["n"] += 1
        key, offset = found[1], int(found[2])
        args = {"id": key, "offset": offset}
        return reply(ToolUseBlock(f"toolu_read{state['n']}", "read_result", args))

    return step


def test_a_2mb_task_description_enters_the_context_cut_and_is_read_back_whole(tmp_path):
    ws = workspace(tmp_path)
    board = TaskBoard(ws.tasks_dir)
    spec = "".join(f"line {i}: the spec says something about field {i}\n" for i in range(40_000))
    assert len(spec) > 2_000_000
    task = board.create("Implement the spec", owner="bob", description=spec)
    get = reply(ToolUseBlock("toolu_get", "get_task", {"task_id": task.id}))
    model = ScriptedModel([get], default=None)
    model.default = read_back(model, "toolu_get")
    deliver(ws, "alice", "look at the spec of task 1", sender="user")
    runtime(ws, model).build_agent("alice").run(until_idle=True)

    got = results_of(ws)
    assert got[0].tool_use_id == "toolu_get"
    assert all(len(r.content) <= CAP for r in got)  # nothing over the cap was recorded
    # ... nor sent: the call after get_task carries the cut result, not 2 MB
    assert sum(m.chars() for m in model.requests[1].messages) < CAP + 5_000
    whole = json.dumps(board.get(task.id).model_dump(), indent=1)
    kept = ws.results_dir("alice") / "toolu_get.txt"
    assert kept.read_text() == whole
    # the model followed the pointer to the end: the parts are the whole, in order
    parts = [r.content for r in got[1:]]
    assert parts and parts[-1].endswith("[end]")
    text = "".join(p.split("\n", 1)[1].rsplit("\n[", 1)[0] for p in parts)
    head = int(CAP * 0.6)
    assert whole[:head] + text == whole


class Huge:
    """A tool this codebase never heard of (an MCP server's, say): 500k characters."""

    def run(self, name: str, input: dict[str, Any]) -> ToolResult:
        return ToolResult("row of data, " * 40_000)


def test_every_tool_passes_the_cap_even_one_we_did_not_write(tmp_path):
    ws = workspace(tmp_path)
    model = ScriptedModel(
        [reply(ToolUseBlock("toolu_q", "query_warehouse", {"sql": "select *"})), reply("ok")]
    )
    deliver(ws, "alice", "query it", sender="user")
    parts = Parts(ws, ws.load_config(), model, MemorySink(), TaskBoard(ws.tasks_dir))
    build_agent(parts, "alice", toolbox=Huge()).run(until_idle=True)
    (result,) = results_of(ws)
    assert len(result.content) <= CAP and result.name == "query_warehouse"
    assert "520,000 characters" in result.content  # says how much there is
    assert (ws.results_dir("alice") / "toolu_q.txt").read_text() == "row of data, " * 40_000
    assert len(model.requests[1].messages[-1].content[0].content) <= CAP


def test_a_long_message_arrives_as_a_preview_with_where_the_whole_is(tmp_path):
    ws = workspace(tmp_path)
    body = "please review: " + "word " * 200_000
    msg = deliver(ws, "alice", body)
    model = ScriptedModel([reply("ok")])
    runtime(ws, model).build_agent("alice").run(until_idle=True)
    (request,) = model.requests
    (mail,) = request.facts.new_mail  # the facts and the text agree: both the preview
    assert len(mail.body) <= CAP and mail.body.startswith("please review: ")
    block = request.messages[-1].content[-1]
    assert isinstance(block, TextBlock) and block.text == mail.render()
    assert f'read_result{{"id": "mail-{msg.id}"' in block.text
    assert (ws.results_dir("alice") / f"mail-{msg.id}.txt").read_text() == body


def test_read_result_refuses_what_is_not_a_kept_result_in_one_line(tmp_path):
    from team.agents.tools.toolbox import Toolbox
    from team.teamwork import Crew

    ws = workspace(tmp_path)
    (ws.root / "secret.txt").write_text("not a result")
    box = Toolbox(Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir)), "alice")
    for key in ("../../../secret", "nope", "../results/x", ""):
        out = box.run("read_result", {"id": key})
        assert out.is_error and "\n" not in out.content, out.content
    kept = box.results.keep("toolu_x", "abcdef" * 10_000)
    out = box.run("read_result", {"id": kept, "offset": 6, "limit": 6})
    assert not out.is_error and out.content.split("\n")[1] == "abcdef"
    bad = box.run("read_result", {"id": kept, "offset": -1})
    assert bad.is_error and "offset" in bad.content
    # bob cannot read alice's: ids are looked up in the caller's own folder
    bob = Toolbox(Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir)), "bob")
    assert bob.run("read_result", {"id": kept}).is_error
