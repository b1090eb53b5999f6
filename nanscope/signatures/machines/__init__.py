"""The closed set of machines a signature can name. Each sees only events (never raw text),
keeps bounded state per stream (one stream = one rank of one node, or one rank-less source), and
emits Matches. A new kind of fingerprint is a new machine in the module of its family; a new
failure is a TOML file.

    base       Match, Machine, the line machine, field getters, event order, descriptions
    nonfinite  transient / persistent runs of NaN and inf
    scale      loss-scale runs, skipped-update rate
    counting   n events within a window, the first rank to show something
    crash      cascades from a root error, launcher blame
    values     spikes, trends, outliers across ranks (and their rolling windows)
    peers      several processes naming the same peer as the one that went away
"""

from __future__ import annotations

from nanscope.signatures.machines.base import (EVIDENCE_PER_MATCH, Emit, Line, Machine, Match, field_getter,
                                               field_vector, happened_before, order_key, resolve)
from nanscope.signatures.machines.counting import CountWithin, FirstAcrossRanks
from nanscope.signatures.machines.crash import Cascade, LauncherBlame
from nanscope.signatures.machines.nonfinite import Persistent, Transient
from nanscope.signatures.machines.peers import NamedPeer
from nanscope.signatures.machines.scale import ScaleRun, SkipRate
from nanscope.signatures.machines.values import OutlierAcrossRanks, Spike, Trend, rolling_median, rolling_min

MACHINES: dict[str, type[Machine]] = {m.name: m for m in (
    Line, Transient, Persistent, ScaleRun, SkipRate, CountWithin, FirstAcrossRanks, Cascade, LauncherBlame, Spike, Trend,
    OutlierAcrossRanks, NamedPeer,
)}

__all__ = ["EVIDENCE_PER_MATCH", "MACHINES", "Cascade", "CountWithin", "Emit", "FirstAcrossRanks", "LauncherBlame",
           "Line", "Machine", "Match", "NamedPeer", "OutlierAcrossRanks", "Persistent", "ScaleRun", "SkipRate", "Spike",
           "Transient", "Trend", "field_getter", "field_vector", "happened_before", "order_key", "resolve",
           "rolling_median", "rolling_min"]
