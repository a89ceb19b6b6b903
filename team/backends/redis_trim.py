"""Acknowledging inbox entries, and trimming what every consumer group has acknowledged.

Without trimming an inbox stream grows for as long as the team lives. The policy
(docs/design.md, "A team across machines (Redis)"):

- an entry is trimmable only once every consumer group of the stream has acknowledged
  it: it was delivered to the group (at or before its `last-delivered-id`) and is not in
  its pending list (older than the oldest pending entry). An entry not yet read, or read
  and not yet acknowledged, is never deleted; a stream nobody ever read (no group yet)
  is never trimmed;
- the newest `keep` entries stay whatever their state, so `team inbox --all` still
  shows recent processed mail (the agent's session log holds every message it took in);
- trimming runs with the acknowledgement, in the same script, once the stream is longer
  than `keep + slack`, so it costs one `XLEN` per ack and a real trim only every `slack`
  messages.

Acknowledgement and trim are one Lua script, so the decision and the deletion are
atomic against concurrent `XADD`s, `XREADGROUP`s and acks. Only `XDEL`, `XRANGE`,
`XINFO` and `XPENDING` are used, which every Redis since 5.0 has.
"""

from __future__ import annotations

import redis

KEEP = 1000
"""Entries an inbox stream keeps at least (the newest), whatever their state."""

ACK_AND_TRIM = """
local key, group = KEYS[1], ARGV[1]
local keep, slack = tonumber(ARGV[2]), tonumber(ARGV[3])
local acked = 0
if #ARGV > 3 then
  acked = redis.call('XACK', key, group, unpack(ARGV, 4))
end
local length = redis.call('XLEN', key)
if length <= keep + slack then
  return {acked, 0}
end

local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end

-- per group: entries at or before `upto` are delivered; before `first` none is pending
local limits = {}
for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do
  local info = {}
  for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
  local limit = {upto = info['last-delivered-id'], first = nil}
  if tonumber(info['pending']) > 0 then
    limit.first = redis.call('XPENDING', key, info['name'])[2]
  end
  table.insert(limits, limit)
end
if #limits == 0 then
  return {acked, 0}
end
local function done_by_all(id)
  for _, l in ipairs(limits) do
    if less(l.upto, id) then return false end
    if l.first and not less(id, l.first) then return false end
  end
  return true
end

-- at most 1000 a call: Lua's unpack has a limit, and a script blocks the server
local doomed = {}
local n = math.min(length - keep, 1000)
for _, entry in ipairs(redis.call('XRANGE', key, '-', '+', 'COUNT', n)) do
  if not done_by_all(entry[1]) then break end  -- ids only grow: nothing later is done
  table.insert(doomed, entry[1])
end
if #doomed > 0 then
  redis.call('XDEL', key, unpack(doomed))
end
return {acked, #doomed}
"""
"""KEYS: the stream. ARGV: group, keep, slack, then the ids to acknowledge (maybe none).
Returns {acknowledged, deleted}."""


class Trimmer:
    """`XACK` plus the trim, for one inbox stream.

    Args:
        client: the Redis client (the script is registered on it).
        key: the stream.
        group: the group whose acks these are.
        keep: entries the stream keeps at least.
    """

    def __init__(self, client: redis.Redis, key: str, group: str, keep: int = KEEP) -> None:
        self.key = key
        self.group = group
        self.keep = keep
        self.slack = max(1, keep // 10)
        self._script = client.register_script(ACK_AND_TRIM)

    def ack(self, r: redis.Redis, ids: list[str]) -> tuple[int, int]:
        """Acknowledge `ids` and trim; returns (acknowledged, deleted). Safe to repeat."""
        acked, deleted = self._script(
            keys=[self.key], args=[self.group, self.keep, self.slack, *ids], client=r
        )
        return int(acked), int(deleted)
