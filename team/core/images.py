"""Images in tool results: the block, its size in pixels, and what it costs in tokens.

The Messages API takes a tool_result whose content is a list of text and image blocks
(base64 JPEG, PNG, GIF or WebP, at most 5 MB and 8000 px a side). It bills an image by
its area: about width x height / 750 tokens, after scaling it down to fit 1568 px on its
long side, and never more than about 1,600. The pixel size is read from the image's own
header (no imaging library), once, when the block is made.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from typing import Any

MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_BYTES = 5 * 1024 * 1024
MAX_SIDE = 8000
LONG_EDGE = 1568
MAX_TOKENS = 1600
PIXELS_PER_TOKEN = 750
CHARS_PER_TOKEN = 4
"""The characters an image counts as, per token: the estimate's own ratio (team.llm.base)."""


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """One image of a tool result, base64 as the API takes it, with its size in pixels
    (0 when its header could not be read)."""

    media_type: str
    data: str
    width: int = 0
    height: int = 0

    @classmethod
    def of(cls, media_type: str, data: str) -> ImageBlock:
        """The block for base64 `data`, its size read from the image itself."""
        w, h = pixel_size(_decoded(data))
        return cls(media_type, data, w, h)

    @property
    def bytes(self) -> int:
        """Size of the image itself (base64 is 4 characters for 3 bytes)."""
        return len(self.data) * 3 // 4

    def tokens(self) -> int:
        """What the API bills for this image (the most an image can cost when its size is
        unknown)."""
        w, h = self.width, self.height
        if w <= 0 or h <= 0:
            return MAX_TOKENS
        scale = min(1.0, LONG_EDGE / max(w, h))
        return min(MAX_TOKENS, math.ceil((w * scale) * (h * scale) / PIXELS_PER_TOKEN))

    def chars(self) -> int:
        """Its weight in the character-based context estimate."""
        return self.tokens() * CHARS_PER_TOKEN

    def problem(self) -> str | None:
        """Why the Messages API would refuse this image, or None."""
        if self.media_type not in MEDIA_TYPES:
            return f"{self.media_type or 'an unknown type'} is not one the API takes"
        if not self.data:
            return "it is empty"
        if self.bytes > MAX_BYTES:
            return f"{self.bytes:,} bytes is over the API's 5 MB"
        if max(self.width, self.height) > MAX_SIDE:
            return f"{self.width}x{self.height} px is over the API's {MAX_SIDE} px a side"
        return None

    def describe(self) -> str:
        """`[image image/png 640x480]`: what a text rendering shows in its place."""
        size = f" {self.width}x{self.height}" if self.width else ""
        return f"[image {self.media_type}{size}]"

    def to_api(self) -> dict[str, Any]:
        source = {"type": "base64", "media_type": self.media_type, "data": self.data}
        return {"type": "image", "source": source}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "image", "media_type": self.media_type, "data": self.data}
        if self.width:
            d["width"], d["height"] = self.width, self.height
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImageBlock:
        """Ours (`to_dict`) or the API's shape (`{"source": {...}}`)."""
        source = d.get("source")
        if isinstance(source, dict):
            return cls.of(str(source.get("media_type", "")), str(source.get("data", "")))
        if "width" in d:
            return cls(str(d["media_type"]), str(d["data"]), int(d["width"]), int(d["height"]))
        return cls.of(str(d.get("media_type", "")), str(d.get("data", "")))


def _decoded(data: str, head: int = 64 * 1024) -> bytes:
    """The first bytes of base64 `data` (enough for any header a size is read from)."""
    part = data[: head // 3 * 4]
    try:
        return base64.b64decode(part, validate=False)
    except (binascii.Error, ValueError):
        return b""


def pixel_size(raw: bytes) -> tuple[int, int]:
    """(width, height) from a PNG, GIF, JPEG or WebP header; (0, 0) when it is none of those."""
    try:
        if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR":
            return struct.unpack(">II", raw[16:24])
        if raw[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", raw[6:10])
        if raw.startswith(b"\xff\xd8"):
            return _jpeg_size(raw)
        if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            return _webp_size(raw)
    except struct.error:  # a header cut short
        pass
    return 0, 0


def _jpeg_size(raw: bytes) -> tuple[int, int]:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return 0, 0
        marker = raw[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", raw[i + 2 : i + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame
            h, w = struct.unpack(">HH", raw[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return 0, 0


def _webp_size(raw: bytes) -> tuple[int, int]:
    kind = raw[12:16]
    if kind == b"VP8X":
        w = int.from_bytes(raw[24:27], "little") + 1
        h = int.from_bytes(raw[27:30], "little") + 1
        return w, h
    if kind == b"VP8L":
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8 ":
        w, h = struct.unpack("<HH", raw[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return 0, 0
