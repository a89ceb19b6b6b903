"""Which lines of a Claude Code log are the conversation: the links between them.

Lines link to their parent by `parentUuid`; a compaction's boundary links across by
`logicalParentUuid`; a 1.0.x summary is a root continuing what was before it. A link to
a line not in the file is bridged to the nearest earlier line of the same session, and a
log with no links at all is read in file order. The conversation is the path from a leaf
back to its first root (`final_path`); `roots` names each line's tree, so the lines that
hang off the path but belong to it (other blocks of a reply, parallel results) are found.
"""

from __future__ import annotations

from typing import Any

from team.sessions.model import ImportReport

Line = tuple[int, dict[str, Any]]


class Links:
    """Each line's parent, with links to lines not in the file bridged to the nearest
    earlier line of the same session (see the module's docstring)."""

    def __init__(
        self,
        lines: list[Line],
        messages: list[Line],
        by_uuid: dict[str, Line],
        report: ImportReport,
    ) -> None:
        self._by_uuid = by_uuid
        self._report = report
        self._order = [str(o["uuid"]) for _, o in lines if o.get("uuid")]
        self._pos = {u: i for i, u in enumerate(self._order)}
        self._parents: dict[str, str | None] = {}
        # a log with no links at all (a converter's output, a hand-made log): its lines
        # are the conversation in file order, not as many one-line trees
        self._unlinked = len(messages) > 1 and not any(
            o.get("parentUuid") or o.get("logicalParentUuid") for _, o in messages
        )
        if self._unlinked:
            report.normalised["logs without parentUuid links read in file order"] += 1

    def _before(self, uid: str) -> str | None:
        """The nearest earlier line of `uid`'s session."""
        session = self._by_uuid[uid][1].get("sessionId")
        i = self._pos.get(uid, 0) - 1
        while i >= 0:
            other = self._order[i]
            if self._by_uuid[other][1].get("sessionId") == session:
                return other
            i -= 1
        return None

    def _to(self, uid: str, target: Any) -> str | None:
        if not target:
            return None
        if str(target) in self._by_uuid:
            return str(target)
        bridged = self._before(uid)
        if bridged is not None:
            self._report.normalised["links to lines not in the file bridged"] += 1
        else:
            self._report.dropped["links to lines not in the file"] += 1
        return bridged

    def parent(self, uid: str) -> str | None:
        """The tree link: `parentUuid`."""
        if uid not in self._parents:
            self._parents[uid] = self._to(uid, self._by_uuid[uid][1].get("parentUuid"))
        return self._parents[uid]

    def logical(self, uid: str) -> str | None:
        """The conversation link: across a compaction to the line before it."""
        o = self._by_uuid[uid][1]
        if self._unlinked:
            return self._before(uid)
        if o.get("parentUuid"):
            return self.parent(uid)
        if o.get("logicalParentUuid"):
            return self._to(uid, o.get("logicalParentUuid"))
        if o.get("isCompactSummary"):  # 1.0.x: a new root, continuing what was before
            return self._before(uid)
        return None


def final_path(
    leaf: dict[str, Any], by_uuid: dict[str, Line], links: Links, report: ImportReport
) -> set[str]:
    """The uuids from `leaf` back to its first root, across compaction boundaries."""
    path: set[str] = set()
    uid: str | None = str(leaf.get("uuid", ""))
    while uid is not None and uid in by_uuid:
        if uid in path:
            break  # a cycle: a broken log, stop rather than loop
        path.add(uid)
        uid = links.logical(uid)
    if not path:
        path.add(str(leaf.get("uuid", "")))
    return path


def roots(by_uuid: dict[str, Line], links: Links) -> dict[str, str]:
    """The root of every line's tree (following `parentUuid`), in linear time."""
    parent = {uid: links.parent(uid) for uid in by_uuid}
    root: dict[str, str] = {}
    for uid in by_uuid:
        chain: list[str] = []
        in_chain: set[str] = set()
        cur = uid
        while cur not in root:
            chain.append(cur)
            in_chain.add(cur)
            up = parent[cur]
            if up is None or up in in_chain:
                root[cur] = cur
                chain.pop()
                break
            cur = up
        top = root[cur]
        for c in chain:
            root[c] = top
    return root
