"""The `named_peer` machine: several processes name the same peer as the one that went away.

NCCL's proxy service thread prints `[Service thread] Connection closed by localRank N` when the
process of local rank N on its host closes its connection. At an ordinary teardown every process
closes, so every local rank gets named; when one process dies first, the others all name that one
and no other. The reporters are told apart by a field (the NCCL line's pid), the peers grouped per
host. With `self` (the reporter's own id in the peer's numbering), a reporter that names itself
disqualifies the group.
"""

from __future__ import annotations

from typing import Any, Optional

from nanscope.model import Event
from nanscope.signatures.machines.base import Emit, Machine


def _field(ev: Event, path: str) -> Any:
    if path.startswith("fields."):
        return (getattr(ev, "fields", None) or {}).get(path[len("fields."):])
    return getattr(ev, path, None)


class NamedPeer(Machine):
    """Fires once per `group` value whose events (those satisfying `when`) name exactly one `peer`
    value, from at least `min_reporters` distinct `reporter` values, none of which is that peer
    (`self`: the reporter's own id in the peer's numbering)."""

    name = "named_peer"
    PARAMS = {"when": (True, "condition"), "peer": (True, "str"), "reporter": (True, "str"),
              "group": (False, "str"), "self": (False, "str"), "min_reporters": (False, "int")}
    DEFAULT_EVENTS = ("error",)
    MAX_GROUPS = 256

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.when = self.cond("when")
        self.min_reporters = int(self.num("min_reporters", 2))
        self.groups: dict = {}  # group -> {"peers": set, "reporters": dict reporter -> self id, "first": Event}

    def feed(self, ev: Event, emit: Emit) -> None:
        if not self.when(ev):
            return
        peer, who = _field(ev, self.spec["peer"]), _field(ev, self.spec["reporter"])
        if peer is None or who is None:
            return
        key = _field(ev, self.spec["group"]) if "group" in self.spec else None
        g = self.groups.get(key)
        if g is None:
            if len(self.groups) >= self.MAX_GROUPS:
                return
            g = self.groups[key] = {"peers": set(), "reporters": {}, "events": []}
        g["peers"].add(peer)
        if who not in g["reporters"]:
            g["reporters"][who] = _field(ev, self.spec["self"]) if "self" in self.spec else None
            if len(g["events"]) < 4:
                g["events"].append(ev)

    def finish(self, emit: Emit) -> None:
        for key, g in self.groups.items():
            if len(g["peers"]) != 1 or len(g["reporters"]) < self.min_reporters:
                continue
            (peer,) = g["peers"]
            selves: set[Optional[Any]] = set(g["reporters"].values())
            if peer in selves:
                continue  # a reporter that names itself: an ordinary close, not a peer gone first
            emit(self.match(g["events"][0], g["events"], peer=peer, group=key, reporters=len(g["reporters"])))
