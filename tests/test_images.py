"""Images in tool results: sent as the API takes them, counted, cleared by micro, kept in
the log. The images come from Pillow (which writes real JPEG, GIF and WebP files), not
from the header reader under test."""

from __future__ import annotations

import base64
import io

import pytest
from fakeapi_rules import request_problems
from PIL import Image

from team.compaction.micro import MicroCompactor, placeholder
from team.core.conversation import (
    Message,
    ToolResultBlock,
    ToolUseBlock,
    block_from_dict,
    problems,
    render_block,
    to_api,
)
from team.core.images import ImageBlock, pixel_size
from team.workspace.config import CompactionConfig


def picture(fmt: str, size: tuple[int, int]) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, (10, 120, 200)).save(buf, format=fmt)
    return base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize(
    ("fmt", "media"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
def test_the_size_of_every_kind_the_api_takes_is_read_from_the_image(fmt, media):
    image = ImageBlock.of(media, picture(fmt, (640, 480)))
    assert (image.width, image.height) == (640, 480)
    assert image.problem() is None
    assert image.tokens() == 410  # 640 * 480 / 750, rounded up


def test_lossless_webp_and_garbage():
    buf = io.BytesIO()
    Image.new("RGB", (33, 17)).save(buf, format="WEBP", lossless=True)
    assert pixel_size(buf.getvalue()) == (33, 17)
    assert pixel_size(b"not an image at all") == (0, 0)
    assert pixel_size(b"\x89PNG\r\n\x1a\n") == (0, 0)  # a header cut short


def test_tokens_follow_the_apis_scaling_and_cap():
    big = ImageBlock("image/png", "x", 4000, 3000)  # scaled to 1568 x 1176 first
    assert big.tokens() == 1600
    unknown = ImageBlock("image/png", "x")
    assert unknown.tokens() == 1600  # the most an image can cost
    small = ImageBlock("image/png", "x", 100, 100)
    assert small.tokens() == 14 and small.chars() == 56


def test_what_the_api_would_refuse_is_named():
    assert "not one the API takes" in ImageBlock("image/bmp", "AAAA").problem()
    assert "8000 px" in ImageBlock("image/png", "AAAA", 9000, 10).problem()
    huge = ImageBlock("image/png", "A" * (7 * 1024 * 1024), 10, 10)
    assert "5 MB" in huge.problem()


def conversation(result: ToolResultBlock) -> list[Message]:
    return [
        Message.user("take a screenshot"),
        Message("assistant", (ToolUseBlock("t1", "mcp__web__shot", {}),)),
        Message("user", (result,)),
    ]


def test_a_result_with_an_image_goes_out_as_a_content_list_the_api_accepts():
    image = ImageBlock.of("image/png", picture("PNG", (64, 48)))
    messages = conversation(ToolResultBlock("t1", "the page", "mcp__web__shot", images=(image,)))
    assert problems(messages) == []
    sent = to_api(messages)[2]["content"][0]["content"]
    assert sent[0] == {"type": "text", "text": "the page"}
    assert sent[1]["type"] == "image" and sent[1]["source"]["media_type"] == "image/png"
    tools = [{"name": "mcp__web__shot", "input_schema": {"type": "object"}}]
    body = {"model": "m", "max_tokens": 10, "messages": to_api(messages), "tools": tools}
    assert list(request_problems(body)) == []
    # an image-only result has no (empty, refused) text block
    alone = to_api(conversation(ToolResultBlock("t1", "", "x", images=(image,))))
    assert [p["type"] for p in alone[2]["content"][0]["content"]] == ["image"]


def test_a_refused_image_is_caught_before_sending():
    bad = ImageBlock("image/tiff", "AAAA", 1, 1)
    errs = problems(conversation(ToolResultBlock("t1", "x", images=(bad,))))
    assert errs and "image refused" in errs[0]


def test_the_session_log_keeps_the_image_and_reads_the_apis_shape_too():
    image = ImageBlock.of("image/gif", picture("GIF", (20, 10)))
    block = ToolResultBlock("t1", "shot", "mcp__web__shot", images=(image,))
    assert block_from_dict(block.to_dict()) == block
    wire = block.to_api()  # a request read back (the fake API's sim responder does)
    assert block_from_dict(wire).images == (image,)
    assert "[image image/gif 20x10]" in render_block(block)  # what summaries read


def test_micro_clears_an_image_like_any_other_result():
    image = ImageBlock.of("image/png", picture("PNG", (800, 600)))
    history = []
    for i in range(4):
        history += [
            Message("assistant", (ToolUseBlock(f"t{i}", "mcp__web__shot", {}),)),
            Message("user", (ToolResultBlock(f"t{i}", "", "mcp__web__shot", images=(image,)),)),
        ]
    history = [Message.user("go"), *history, Message.assistant("done"), Message.user("next")]
    micro = MicroCompactor(CompactionConfig(keep_recent=1, micro_policy="eager"))
    out = micro.view(history)
    cleared = [b for m in out.view for b in m.tool_results() if not b.images]
    assert len(cleared) == 3 and cleared[0].content == placeholder("mcp__web__shot")
    assert out.tokens_cleared >= 3 * 640  # each 800x600 image is 640 tokens
    assert sum(len(b.images) for m in history for b in m.tool_results()) == 4  # stored: all
