"""SimModel acts like an agent: valid, deterministic replies that finish tasks.

A tiny loop in this file plays the runtime's part: it executes the sim's tool calls
against a fake board and file store, passes the agent's facts with every request (as the
loop does), compacts when asked (with the sim as summariser), and reminds once, so whole
task runs can be checked without the real agent loop. The prose is rendered by the
product's own writers (`team.agents.words.identity`, `MailMessage`, `team.tasks.wording`).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field

import pytest

from team.agents.words.identity import identity_block, system_prompt
from team.compaction.summary import ask_focus
from team.core.conversation import (
    INTERRUPTED,
    Block,
    Message,
    TaskNote,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_user,
    validate,
)
from team.llm.base import AgentFacts, ModelRequest, ModelResponse, ToolSpec
from team.llm.sim import SimModel
from team.mailbox.message import MailMessage
from team.tasks import wording

TOOL_NAMES = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "compact",
    "send_message",
    "broadcast",
    "read_inbox",
    "list_tasks",
    "claim_task",
    "complete_task",
    "idle",
]
TOOLS = [ToolSpec(n, f"the {n} tool", {"type": "object", "properties": {}}) for n in TOOL_NAMES]
MATES = {"alice": "coder", "bob": "tester", "carol": "reviewer"}
FILES = {
    "src/parser.py": "\n".join(f"def parse_{i}(text):  # parser step {i}" for i in range(80)),
    "src/lexer.py": "import parser\n" * 20,
    "README.md": "# demo\nA parser and a lexer.\n",
}


def facts_for(agent: str, tasks=(), mail=()) -> AgentFacts:
    mates = tuple((n, r) for n, r in MATES.items() if n != agent)
    return AgentFacts(agent, MATES[agent], "demo", mates, tuple(tasks), tuple(mail))


def system_for(agent: str) -> str:
    return system_prompt(facts_for(agent), "Use the tools to do your tasks.")


def task_message(agent: str, task: int, subject: str) -> TextBlock:
    mail = MailMessage(sender="user", to=agent, type="task", task_id=task, content=subject)
    return mail.as_block()


@dataclass
class World:
    """Fake tools: a task board and a file store; every call is recorded."""

    agent: str
    tasks: dict[int, dict] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=lambda: dict(FILES))
    fail_all: bool = False
    cut_off: set[str] = field(default_factory=set)  # tools a crash cuts off, once each
    calls: list[ToolUseBlock] = field(default_factory=list)

    def add_task(self, task: int, subject: str, owner: str | None = None) -> None:
        self.tasks[task] = {"id": task, "subject": subject, "status": "pending", "owner": owner}

    def open_tasks(self) -> list[dict]:
        return [
            t
            for t in self.tasks.values()
            if t["owner"] == self.agent and t["status"] != "completed"
        ]

    def facts(self, mail=()) -> AgentFacts:
        tasks = [(t["id"], t["subject"]) for t in self.open_tasks()]
        return facts_for(self.agent, tasks, mail)

    def run(self, use: ToolUseBlock) -> ToolResultBlock:
        self.calls.append(use)
        if use.name in self.cut_off:  # what a resumed agent is given for it (never ran)
            self.cut_off.discard(use.name)
            return ToolResultBlock(use.id, INTERRUPTED, use.name, True)
        if self.fail_all:
            return ToolResultBlock(use.id, f"error: {use.name} is broken", use.name, True)
        try:
            out = self._run(use.name, use.input)
        except (KeyError, ValueError) as e:
            return ToolResultBlock(use.id, f"error: {e}", use.name, True)
        return ToolResultBlock(use.id, out, use.name)

    def _run(self, name: str, args: dict) -> str:
        if name == "bash":
            cmd = args["command"]
            if "grep" in cmd:  # several KB, so compaction has something to work on
                return "".join(f"./src/parser.py:{i}:def parse_{i}(text):\n" for i in range(80))
            if "wc -l" in cmd:
                return "".join(f"  {len(t.splitlines())} ./{p}\n" for p, t in self.files.items())
            return "total 3\n" + "".join(f"-rw-r--r-- 1 u u 10 Jan 1 00:00 {p}\n" for p in FILES)
        if name == "read_file":
            return self.files[args["path"]]
        if name == "write_file":
            self.files[args["path"]] = args["content"]
            return f"wrote {len(args['content'])} chars"
        if name == "edit_file":
            text = self.files[args["path"]]
            if args["old_text"] not in text:
                raise ValueError("old_text not found")
            self.files[args["path"]] = text.replace(args["old_text"], args["new_text"], 1)
            return "edited"
        if name == "claim_task":
            task = self.tasks[int(args["task_id"])]
            if task["owner"] not in (None, self.agent):
                raise ValueError(f"task {task['id']} is owned by {task['owner']}")
            task.update(owner=self.agent, status="in_progress")
            return wording.claimed(task["id"], task["subject"])
        if name == "complete_task":
            task = self.tasks[int(args["task_id"])]
            task.update(status="completed", result=args.get("result"))
            return wording.completed(task["id"], task["subject"])
        if name == "list_tasks":
            return json.dumps(list(self.tasks.values()))
        return f"ok: {name}"


def render(messages: list[Message]) -> str:
    """A segment as text, the way a compactor hands it to the summariser."""
    lines = []
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                lines.append(f"[{m.role} tool_use {b.name}] {json.dumps(b.input)}")
            elif isinstance(b, ToolResultBlock):
                lines.append(f"[tool_result {b.name}] {b.content}")
            else:
                lines.append(f"[{m.role}] {b.text}")
    return "\n".join(lines)


def summary_request(
    agent: str,
    segment: str | list[Block] | list[Message],
    focus: str | None = None,
    facts: AgentFacts | None = None,
) -> ModelRequest:
    """A summary request over `segment`: text, user blocks (mail carries its data), or
    stored messages (sent as text, with the messages as the request's segment)."""
    stored: tuple[Message, ...] = ()
    if isinstance(segment, list) and segment and isinstance(segment[0], Message):
        stored = tuple(segment)
        segment = render(list(stored))
    blocks = [segment] if isinstance(segment, str) else list(segment)
    system = (
        f"You summarise the work of agent '{agent}'. Write a structured summary with sections: "
        "request and intent, decisions, files, errors and fixes, messages from teammates, "
        "pending tasks with ids, current work, next step."
    )
    if focus:
        system += "\n" + ask_focus(focus)
    return ModelRequest(
        system=system,
        messages=[Message.user(*blocks)],
        tool_choice="none",
        purpose="summary",
        agent=agent,
        facts=facts,
        focus=focus,
        segment=stored,
    )


def compact(
    model: SimModel, world: World, messages: list[Message], focus: str | None
) -> list[Message]:
    request = summary_request(world.agent, messages, focus, facts_for(world.agent))
    summary = model.complete(request)
    identity = identity_block(world.facts())
    layer = "manual" if focus is not None else "auto"
    path = f".transcripts/{world.agent}/0001-20250101T000000Z-{layer}.jsonl"
    text = f"{identity}\n\n{summary.message().text()}\n\nTranscript: {path}"
    return [Message.user(text)]


@dataclass
class Run:
    replies: list[ModelResponse]
    messages: list[Message]
    compactions: int = 0
    requests: list[ModelRequest] = field(default_factory=list)


def drive(
    model: SimModel,
    world: World,
    first: str | Block | list[Block],
    limit: int = 40,
    auto_every: int = 0,
    facts: bool = True,
) -> Run:
    """Play the agent loop until the sim ends its turn with nothing left (or `limit`).

    `auto_every` > 0 compacts (as the auto layer would) after every that many replies;
    `facts=False` sends no facts (a request rebuilt from the wire).
    """
    blocks = first if isinstance(first, list) else [first]
    messages = [Message.user(*blocks)]
    run = Run([], messages)
    reminded = False
    # what the first user turn brought
    new_mail = [b.mail for b in messages[0].content if isinstance(b, TextBlock) and b.mail]
    for _ in range(limit):
        validate(messages)
        request = ModelRequest(
            system=system_for(world.agent),
            messages=list(messages),
            tools=TOOLS,
            agent=world.agent,
            cache_breakpoints=(len(messages) - 1,),
            facts=world.facts(new_mail) if facts else None,
        )
        new_mail = []
        reply = model.complete(request)
        run.requests.append(request)
        run.replies.append(reply)
        assert reply.message().text().strip(), "every reply carries some text"
        messages.append(reply.message())
        uses = reply.message().tool_uses()
        if not uses:
            assert reply.stop_reason == "end_turn"
            validate([*messages, Message.user("next")])
            if world.open_tasks() and not reminded:
                reminded = True
                listed = "; ".join(f"#{t['id']} {t['subject']}" for t in world.open_tasks())
                append_user(messages, TextBlock(f"Reminder: you still own open tasks: {listed}"))
                continue
            run.messages = messages
            return run
        assert reply.stop_reason == "tool_use"
        results = [
            ToolResultBlock(u.id, "compacting", u.name) if u.name == "compact" else world.run(u)
            for u in uses
        ]
        append_user(messages, *results)
        for u in uses:
            if u.name == "compact":
                world.calls.append(u)
                messages = compact(model, world, messages, u.input.get("focus", ""))
                run.compactions += 1
        if auto_every and len(run.replies) % auto_every == 0:
            messages = compact(model, world, messages, None)
            run.compactions += 1
    raise AssertionError(f"the sim did not finish within {limit} calls")


def names(world: World) -> list[str]:
    return [c.name for c in world.calls]


def test_same_request_same_reply() -> None:
    world = World("alice")
    world.add_task(3, "Fix the parser crash", owner="alice")
    run = drive(SimModel(), world, task_message("alice", 3, "Fix the parser crash"))
    fresh = SimModel()
    assert run.compactions == 0 and len(run.requests) > 3
    for request, reply in zip(run.requests, run.replies, strict=True):  # replay every one
        assert fresh.complete(request).content == reply.content
        assert SimModel().complete(request) == SimModel().complete(request)


def test_finishes_an_assigned_task_with_real_tool_calls() -> None:
    world = World("alice")
    world.add_task(3, "Fix the parser crash", owner="alice")
    run = drive(SimModel(seed=1), world, task_message("alice", 3, "Fix the parser crash"))
    calls = names(world)
    assert calls[0] == "claim_task"
    assert {"bash", "read_file", "write_file", "send_message", "complete_task"} <= set(calls)
    assert len(run.replies) <= 15
    assert world.tasks[3]["status"] == "completed"
    notes = world.files["notes/alice-task-3.md"]
    assert "Task #3" in notes and "Status: done" in notes
    told = [c.input for c in world.calls if c.name == "send_message"]
    assert told and all(t["to"] in ("bob", "carol") for t in told)
    read = [c.input["path"] for c in world.calls if c.name == "read_file"]
    assert read and read[0] in FILES  # a file it found, not a made-up one
    assert run.replies[-1].stop_reason == "end_turn"
    assert any(len(r.content) > 2 for r in run.replies), "sometimes calls tools in parallel"


def test_tool_use_ids_are_unique_and_results_come_back_valid() -> None:
    world = World("bob")
    world.add_task(5, "Write tests for the lexer", owner="bob")
    run = drive(SimModel(), world, task_message("bob", 5, "Write tests for the lexer"))
    ids = [u.id for m in run.messages for u in m.tool_uses()]
    assert len(ids) == len(set(ids)) > 0
    assert all(re.fullmatch(r"toolu_[0-9a-f]{24}", i) for i in ids)


def test_finishes_even_when_every_tool_fails() -> None:
    world = World("alice", fail_all=True)
    world.add_task(7, "Refactor the lexer", owner="alice")
    run = drive(SimModel(), world, task_message("alice", 7, "Refactor the lexer"))
    assert len(run.replies) <= 15
    assert "complete_task" in names(world)
    assert names(world).count("complete_task") == 1


def test_a_completion_a_crash_cut_off_is_made_again() -> None:
    # killed while complete_task ran: the resumed agent is told it was interrupted, and
    # finishes the task instead of taking it as done (a team waiting for it never idles)
    world = World("carol", cut_off={"complete_task"})
    world.add_task(3, "Summarise the open questions", owner="carol")
    drive(SimModel(), world, task_message("carol", 3, "Summarise the open questions"))
    assert names(world).count("complete_task") == 2
    assert world.tasks[3]["status"] == "completed"


def test_compacts_now_and_then_and_still_finishes_every_task() -> None:
    compacted = 0
    for task in range(1, 10):
        world = World("carol")
        world.add_task(task, f"Review parser change {task}", owner="carol")
        model = SimModel()
        run = drive(model, world, task_message("carol", task, f"Review parser change {task}"))
        assert world.tasks[task]["status"] == "completed"
        focus = [c.input for c in world.calls if c.name == "compact"]
        assert focus in ([], [{"focus": f"task #{task}"}]), "at most once per task"
        compacted += run.compactions
    assert 0 < compacted < 9  # now and then, not always


@pytest.mark.parametrize("every", [1, 2, 3])
def test_resumes_after_compaction_instead_of_starting_over(every: int) -> None:
    world = World("alice")
    world.add_task(3, "Fix the parser crash", owner="alice")
    world.add_task(4, "Speed up the lexer", owner="alice")
    first = [task_message("alice", 3, "Fix the parser crash")]
    first.append(task_message("alice", 4, "Speed up the lexer"))
    run = drive(SimModel(), world, first, limit=40, auto_every=every)
    assert world.tasks[3]["status"] == world.tasks[4]["status"] == "completed"
    assert run.compactions >= 4
    assert names(world).count("claim_task") == 2, "no task was started over"
    assert names(world).count("complete_task") == 2


@pytest.mark.parametrize("every", [0, 2])
def test_without_facts_it_still_finishes_what_its_context_shows(every: int) -> None:
    world = World("alice")
    world.add_task(3, "Fix the parser crash", owner="alice")
    run = drive(
        SimModel(), world, task_message("alice", 3, "Fix the parser crash"), auto_every=every
    )
    world2 = World("alice")
    world2.add_task(3, "Fix the parser crash", owner="alice")
    first = task_message("alice", 3, "Fix the parser crash")
    bare = drive(SimModel(), world2, first, auto_every=every, facts=False)
    assert world2.tasks[3]["status"] == "completed"
    assert names(world2).count("claim_task") == 1 and names(world2).count("complete_task") == 1
    # what it cannot know without facts, it leaves out: no teammate to tell
    assert "send_message" in names(world) and "send_message" not in names(world2)
    assert bare.compactions >= (1 if every else 0) and run.replies


def test_idle_agent_lists_tasks_and_claims_an_unowned_one() -> None:
    world = World("bob")
    world.add_task(1, "Done already", owner="alice")
    world.tasks[1]["status"] = "completed"
    world.add_task(2, "Taken by carol", owner="carol")
    world.add_task(4, "Document the lexer")
    broadcast = MailMessage(sender="alice", to="bob", type="broadcast", content="New tasks up")
    drive(SimModel(), world, broadcast.as_block())
    calls = names(world)
    assert calls[:2] == ["list_tasks", "claim_task"]
    assert world.tasks[4] == {**world.tasks[4], "owner": "bob", "status": "completed"}
    assert world.tasks[2]["owner"] == "carol"


def test_losing_a_claim_race_ends_the_turn_without_working_on_it() -> None:
    broadcast = MailMessage(sender="alice", to="bob", type="broadcast", content="Tasks up")

    class Racing(World):
        def _run(self, name: str, args: dict) -> str:
            if name == "claim_task":
                self.tasks[4]["owner"] = "carol"  # carol got there first
            return super()._run(name, args)

    racing = Racing("bob")
    racing.add_task(4, "Document the lexer")
    run = drive(SimModel(), racing, broadcast.as_block())
    assert names(racing) == ["list_tasks", "claim_task"]
    assert run.replies[-1].stop_reason == "end_turn"


def test_teammate_messages_get_a_text_acknowledgement_not_a_reply_message() -> None:
    world = World("alice")
    mail = MailMessage(sender="bob", to="alice", type="message", content="Parser tests pass now.")
    run = drive(SimModel(), world, mail.as_block())
    assert "bob" in run.replies[0].message().text()
    assert "send_message" not in names(world)


def test_user_can_ask_for_a_simple_command() -> None:
    world = World("alice")
    mail = MailMessage(sender="user", to="alice", content="Please run `ls -1 src` for me")
    drive(SimModel(), world, mail.as_block())
    assert world.calls[0].name == "bash" and world.calls[0].input == {"command": "ls -1 src"}


def test_reminder_brings_the_agent_back_to_its_task() -> None:
    world = World("alice")
    world.add_task(9, "Fix the flaky test", owner="alice")
    drive(SimModel(), world, "Reminder: you still own open tasks: #9 Fix the flaky test")
    assert world.tasks[9]["status"] == "completed"


def test_one_instance_serves_agents_in_parallel_threads() -> None:
    model = SimModel()
    finished: dict[str, int] = {}
    errors: list[BaseException] = []

    def work(agent: str, task: int) -> None:
        try:
            for _ in range(5):
                world = World(agent)
                world.add_task(task, f"Task for {agent}", owner=agent)
                drive(model, world, task_message(agent, task, f"Task for {agent}"))
                assert world.tasks[task]["status"] == "completed"
                finished[agent] = finished.get(agent, 0) + 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(a, i + 1)) for i, a in enumerate(MATES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors and not any(t.is_alive() for t in threads)
    assert finished == dict.fromkeys(MATES, 5)


def test_usage_counts_the_whole_prompt_and_the_reply() -> None:
    model = SimModel()
    request = ModelRequest(
        system=system_for("alice"),
        messages=[Message.user(task_message("alice", 3, "Fix the parser crash"))],
        tools=TOOLS,
        agent="alice",
        cache_system=False,
    )
    usage = model.complete(request).usage
    prompt = json.dumps([t.to_api() for t in TOOLS]) + request.system
    prompt += json.dumps(request.messages[0].to_dict())
    assert abs(usage.input_tokens - len(prompt) / 4) < 10
    assert usage.cache_read_tokens == usage.cache_write_tokens == 0
    assert usage.output_tokens > 0


# --- summaries ----------------------------------------------------------------------------


def long_segment() -> list[Block]:
    """A realistic segment: tasks, teammates, a big tool output, errors, decisions."""
    world = World("alice")
    world.add_task(3, "Fix the parser crash", owner="alice")
    world.add_task(12, "Speed up the lexer", owner="alice")
    parts = [
        task_message("alice", 3, "Fix the parser crash"),
        task_message("alice", 12, "Speed up the lexer"),
        MailMessage(sender="bob", to="alice", content="The crash is in src/parser.py").as_block(),
        MailMessage(
            sender="dave", to="alice", type="broadcast", content="Standup at 10"
        ).as_block(),
        "[assistant] I decided to read src/parser.py first, then look at tests/test_parser.py.",
        "[tool_result bash] "
        + "".join(f"./src/parser.py:{i}:def parse_{i}(x):\n" for i in range(300)),
        "[tool_result bash] Traceback (most recent call last):\nValueError: bad token at 12",
        "[assistant] I will fix the ValueError by checking for empty tokens.",
        '[assistant tool_use send_message] {"to": "carol", "content": "Please review #3"}',
        "[assistant] Task #12: the lexer spends most time in src/lexer.py tokenize().",
        "[tool_result bash] " + "".join(f"  {i} ./pkg/module_{i}.py\n" for i in range(200)),
        "[assistant] Next I will profile tokenize() for task #12.",
    ]
    return [p if isinstance(p, TextBlock) else TextBlock(p) for p in parts]


def test_summary_keeps_every_task_id_and_name_and_is_much_shorter() -> None:
    segment = long_segment()
    reply = SimModel().complete(summary_request("alice", segment))
    summary = reply.message().text()
    assert reply.stop_reason == "end_turn" and not reply.message().tool_uses()
    for must in ("#3", "#12", "bob", "carol", "dave", "src/parser.py", "ValueError"):
        assert must in summary, must
    for heading in (
        "Request and intent",
        "Decisions",
        "Files",
        "Errors and fixes",
        "Messages from teammates",
        "Pending tasks",
        "Current work",
        "Next step",
    ):
        assert f"## {heading}" in summary
    assert len(summary) < sum(b.chars() for b in segment) / 10
    assert len(summary) / 4 < 2000
    assert summary.startswith("[sim]"), "labelled as a simulation"


def test_summary_stays_bounded_on_a_huge_segment() -> None:
    segment = long_segment() * 40
    summary = SimModel().complete(summary_request("alice", segment)).message().text()
    assert len(summary) / 4 < 2000


def test_summaries_that_chain_do_not_grow_with_every_task_ever_finished() -> None:
    """Each summary begins the next segment: open tasks and the newest finished ones are
    named, older finished ones only counted, so a long run's summaries stay one size."""
    done = [
        TextBlock(wording.completed(t, f"task {t}"), tasks=(TaskNote(t, "completed"),))
        for t in range(1, 401)
    ]
    segment = [*done, TextBlock("Still open: task #401 and task #402.")]
    summary = SimModel().complete(summary_request("alice", segment)).message().text()
    assert "#401" in summary and "#402" in summary and "#400 (completed)" in summary
    assert "#5 (completed)" not in summary and "older completed" in summary
    assert len(summary) < 3000


def test_ids_mentioned_but_never_seen_finishing_are_not_carried_for_ever() -> None:
    """A teammate's tasks in a listing are named once; a summary that called every such
    id open carried it into every later summary (the soak's fresh contexts passed the
    threshold after 30,000 calls). The agent's own open task, from the facts, stays."""
    facts = AgentFacts(name="alice", role="coder", team="t", tasks=((7, "write the parser"),))
    model = SimModel()
    summary, sizes = "", []
    for k in range(40):
        listing = ", ".join(f"task #{1000 + 20 * k + i}" for i in range(20))
        segment = f"{summary}\nThe board lists {listing}, all owned by bob."
        request = summary_request("alice", segment, facts=facts)
        summary = model.complete(request).message().text()
        sizes.append(len(summary))
        assert "#7: write the parser" in summary  # not in the text: from the facts
        assert "Continue task #7" in summary
    assert max(sizes[10:]) < 1.2 * sizes[9]  # one size, not growing with every listing
    assert "#1000" not in summary and "older tasks mentioned" in summary


def test_summary_honours_the_focus() -> None:
    segment = long_segment()
    plain = SimModel().complete(summary_request("alice", segment)).message().text()
    focused = SimModel().complete(summary_request("alice", segment, "task #12")).message().text()
    first_bullets = focused.split("## Focus", 1)[1].split("##", 1)[0]
    assert "Focus: task #12" in first_bullets
    assert "tokenize()" in first_bullets and "#12" in first_bullets
    assert "## Focus" not in plain
    assert focused.index("## Focus") < focused.index("## Request and intent")
    assert "Continue task #12" in focused and "Continue task #3" in plain
