"""Tables that fit the terminal: columns left out by priority, one column cut, or rows
stacked, and never a value cut that the user has to type next.

Every table the CLI prints (`team status`, `tasks`, `transcripts`, `stats`, `audit`) and
the live table of `team up` are laid out here, in plain text: no styling to strip when
piped, and nothing to import but the standard library (`team status` is a fast path).

How a table is fitted into `width` columns:

1. Every column is shown whole, at the width of its longest cell, except a `flex` one,
   which may be cut (with "…") down to its `least` width.
2. If that does not fit, the column with the lowest `keep` is left out (the rightmost of
   equals first), and so on; a column with `keep=REQUIRED` is never left out.
3. If even the required ones do not fit, each row is stacked: a line of its first cell,
   then one `header: value` line per other cell, whole. Paths stay copyable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

GAP = "  "
REQUIRED = 1_000
ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    header: str
    keep: int = 0
    """Priority to stay when space runs out: the lowest goes first; REQUIRED never."""
    right: bool = False
    """Numbers align right."""
    flex: bool = False
    """May be cut to fit (a description, what an agent is doing); others are shown whole."""
    least: int = 12
    """The narrowest a flex column is cut to before columns are left out."""


@dataclass
class Fitted:
    lines: list[str]
    dropped: list[str] = field(default_factory=list)
    """Headers of the columns left out, for a hint such as `--wide shows ...`."""


def one_line(text: object) -> str:
    """A cell is one line, however the text was typed."""
    return " ".join(str(text).split())


def cut(text: str, width: int) -> str:
    """`text` in at most `width` characters, "…" marking a cut."""
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS


def fit(columns: Sequence[Column], rows: Sequence[Sequence[object]], width: int | None) -> Fitted:
    """Lay out `rows` under `columns` in at most `width` characters (None: no limit)."""
    cells = [[one_line(c) for c in row] for row in rows]
    natural = [max([len(col.header), *(len(r[i]) for r in cells)]) for i, col in enumerate(columns)]
    shown = list(range(len(columns)))

    def least(i: int) -> int:
        col = columns[i]
        return min(natural[i], max(col.least, len(col.header))) if col.flex else natural[i]

    def need(idx: list[int], sizes) -> int:
        return sum(sizes(i) for i in idx) + len(GAP) * (len(idx) - 1)

    if width is not None:
        droppable = sorted(
            (i for i in shown if columns[i].keep < REQUIRED), key=lambda i: (columns[i].keep, -i)
        )
        while need(shown, least) > width and droppable:
            shown.remove(droppable.pop(0))
        if need(shown, least) > width:
            return Fitted(_stacked(columns, cells))
    widths = {i: natural[i] for i in shown}
    if width is not None:
        spare = width - need(shown, least)
        for i in shown:  # flex columns grow back towards their natural width, left first
            if columns[i].flex:
                widths[i] = least(i) + min(spare, natural[i] - least(i))
                spare -= widths[i] - least(i)
    lines = [_line([(columns[i].header, widths[i], columns[i].right) for i in shown])]
    lines.append(_line([("-" * widths[i], widths[i], False) for i in shown]))
    for row in cells:
        lines.append(_line([(cut(row[i], widths[i]), widths[i], columns[i].right) for i in shown]))
    dropped = [c.header for i, c in enumerate(columns) if i not in shown]
    return Fitted(lines, dropped)


def _line(parts: list[tuple[str, int, bool]]) -> str:
    return GAP.join(t.rjust(w) if right else t.ljust(w) for t, w, right in parts).rstrip()


def _stacked(columns: Sequence[Column], cells: list[list[str]]) -> list[str]:
    lines = []
    for row in cells:
        lines.append(row[0])
        lines += [f"  {col.header}: {row[i]}" for i, col in enumerate(columns) if i]
    return lines


def wrap(text: str, width: int | None, indent: str = "") -> list[str]:
    """A note under a table, wrapped at spaces to `width` (a path is never split)."""
    if width is None:
        return [indent + text]
    import textwrap

    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent]
