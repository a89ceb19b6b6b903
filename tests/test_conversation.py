import json

import pytest

from team.core.conversation import (
    InvalidConversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_user,
    problems,
    to_api,
    validate,
)


def use(i, name="bash"):
    return ToolUseBlock(f"t{i}", name, {"command": "ls"})


def res(i, text="out", name="bash"):
    return ToolResultBlock(f"t{i}", text, name)


def test_json_round_trip_is_exact():
    msgs = [
        Message.user("hello"),
        Message.assistant("ok", use(1), use(2, "read_file")),
        Message("user", (res(1), ToolResultBlock("t2", "x", "read_file", True), TextBlock("n"))),
    ]
    text = json.dumps([m.to_dict() for m in msgs])
    back = [Message.from_dict(d) for d in json.loads(text)]
    assert back == msgs
    assert json.dumps([m.to_dict() for m in back]) == text


def test_to_api_drops_the_private_tool_name():
    api = to_api([Message("user", (res(1),))])
    assert api[0]["content"][0] == {"type": "tool_result", "tool_use_id": "t1", "content": "out"}


def test_a_valid_tool_loop_passes():
    validate([Message.user("go"), Message.assistant(use(1)), Message("user", (res(1),))])


@pytest.mark.parametrize(
    "msgs, fragment",
    [
        ([], "at least one"),
        ([Message.assistant("hi"), Message.user("x")], "first message"),
        ([Message.user("x"), Message.assistant("hi")], "last message"),
        ([Message.user("x"), Message.assistant(use(1)), Message.user("no result")], "without"),
        ([Message.user("x"), Message.assistant("hi"), Message("user", (res(9),))], "unexpected"),
        (
            [
                Message.user("x"),
                Message.assistant(use(1)),
                Message("user", (TextBlock("a"), res(1))),
            ],
            "must come first",
        ),
        ([Message.user("  ")], "non-whitespace"),
        ([Message.user("")], "non-whitespace"),
        (
            [
                Message.user("x"),
                Message.assistant(use(1), use(1)),
                Message("user", (res(1),)),
            ],
            "unique",
        ),
        (
            [
                Message.user("x"),
                Message.assistant(use(1)),
                Message("user", (res(1),)),
                Message.assistant(use(1)),
                Message("user", (res(1),)),
            ],
            "unique",
        ),
        ([Message("user", ())], "non-empty"),
    ],
)
def test_validate_rejects_what_the_api_rejects(msgs, fragment):
    assert any(fragment in p for p in problems(msgs)), problems(msgs)
    with pytest.raises(InvalidConversation):
        validate(msgs)


def test_append_user_merges_and_keeps_results_first():
    msgs = [Message.user("go"), Message.assistant(use(1))]
    append_user(msgs, TextBlock("inbox: hi"))
    append_user(msgs, res(1))
    assert msgs[-1].content == (res(1), TextBlock("inbox: hi"))
    validate(msgs)
