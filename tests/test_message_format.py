"""The mail message on disk: the dataclass reads what the pydantic model wrote, and
writes the same bytes (issue 27 took pydantic off `team send`'s path).

`Reference` is the message model as it was before (team/mailbox/message.py at 0687d5a),
kept here as the definition of the files that exist in workspaces today.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from pydantic import BaseModel, ConfigDict, Field

from team.mailbox.message import MESSAGE_TYPES, MailMessage, MessageError


class Reference(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    type: str = "message"
    sender: str = Field(alias="from")
    to: str
    content: str
    timestamp: float = Field(default_factory=time.time)
    task_id: int | None = None
    approved: bool | None = None


CASES = [
    {"from": "user", "to": "alice", "content": "hello"},
    {"from": "bob", "to": "alice", "content": 'quote " back\\slash\nnewline\ttab \x01 é 漢 🙂'},
    {"from": "alice", "to": "lead", "content": "plan", "type": "plan_response", "approved": True},
    {"from": "user", "to": "bob", "content": "do it", "type": "task", "task_id": 12},
    {"from": "alice", "to": "user", "content": "bye", "type": "shutdown_response",
     "request_id": "abc", "seq": 3, "nested": {"a": [1, 2.5, None]}},
    {"from": "user", "to": "alice", "content": "", "timestamp": 1733140000},
    {"from": "user", "to": "alice", "content": "x" * 5000, "timestamp": 1733140000.123456},
]  # fmt: skip


@pytest.mark.parametrize("data", CASES)
def test_same_bytes_as_the_pydantic_model(data: dict) -> None:
    data = {"id": "f" * 32, "timestamp": 1764670000.25, **data}
    old = Reference.model_validate(data).model_dump_json(by_alias=True)
    new = MailMessage.model_validate(data).to_json()
    assert new == old
    back = MailMessage.model_validate_json(old.encode("utf-8"))
    assert back.to_json() == old
    assert back.model_dump() == json.loads(old)


def test_old_files_read_with_their_extra_keys() -> None:
    old = Reference.model_validate(CASES[4]).model_dump_json(by_alias=True)
    msg = MailMessage.model_validate_json(old)
    assert msg.sender == "alice" and msg.type == "shutdown_response"
    assert msg.model_extra == {"request_id": "abc", "seq": 3, "nested": {"a": [1, 2.5, None]}}


def test_every_type_round_trips() -> None:
    for kind in MESSAGE_TYPES:
        msg = MailMessage(sender="user", to="alice", content="c", type=kind)
        assert MailMessage.model_validate_json(msg.to_json()) == msg


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"to": "alice", "content": "c"}, "from"),
        ({"from": "user", "content": "c"}, "to"),
        ({"from": "user", "to": "alice"}, "content"),
        ({"from": "user", "to": "alice", "content": 3}, "content"),
        ({"from": "user", "to": "alice", "content": "c", "type": "spam"}, "type"),
        ({"from": "user", "to": "alice", "content": "c", "task_id": "7"}, "task_id"),
        ({"from": "user", "to": "alice", "content": "c", "task_id": True}, "task_id"),
        ({"from": "user", "to": "alice", "content": "c", "approved": "yes"}, "approved"),
        ({"from": "user", "to": "alice", "content": "c", "timestamp": "now"}, "timestamp"),
        ({"from": None, "to": "alice", "content": "c"}, "from"),
    ],
)
def test_a_bad_message_names_its_key(data: dict, field: str) -> None:
    with pytest.raises(MessageError) as e:
        MailMessage.model_validate_json(json.dumps(data))
    assert e.value.field == field


def test_not_a_message_is_a_value_error() -> None:
    for raw in (b"[1, 2]", b"not json", b"\xff\xfe", b'"text"'):
        with pytest.raises(ValueError):
            MailMessage.model_validate_json(raw)


def test_text_that_is_not_utf8_is_refused_before_it_is_written() -> None:
    # a stray byte on a command line reaches Python as a lone surrogate
    with pytest.raises(MessageError) as e:
        MailMessage(sender="user", to="alice", content="\udcff abc")
    assert (e.value.field, e.value.reason) == ("content", "not UTF-8 text")


def test_copy_is_checked_and_the_original_kept() -> None:
    msg = MailMessage(sender="user", to="alice", content="long")
    cut = msg.model_copy(update={"content": "short"})
    assert (msg.content, cut.content, cut.id) == ("long", "short", msg.id)
    with pytest.raises(MessageError):
        msg.model_copy(update={"task_id": "x"})
