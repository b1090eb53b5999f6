"""Rejoin a line that two ranks' writes split.

torchrun --tee prints each worker's output with `tail_logfile`
(torch/distributed/elastic/multiprocessing/tail_log.py): `line = fp.readline()` then
`dst.write(f"{header}{line}")`. When a worker has flushed only part of a line, readline returns
that part without its newline, and the next write to the shared stdout, another worker's
`[default0]:...\\n`, lands on the same output line; the rest of the first worker's line comes later
under its own prefix:

    [default1]:step 12, lo[default0]:step 12, loss=2.31
    ...
    [default1]:ss=nan

Open MPI --tag-output does the same (huggingface/accelerate-style consoles show
`[1,1]<stdout>:Train Epoch: 10 ... Loss: 0.121522[1,0]<stdout>:Train Epoch: 10 ...` followed by
a bare `[1,1]<stdout>:` that is rank 1's newline, spellml/examples#17).

Only within one read chunk (2 MiB) of the input, and only when the line with the inner prefix is
a candidate (holds a parser's keyword): the reader looks for inner prefixes among the candidates
(one RE2 pass over them, not over every line). The rule, conservative: a launcher prefix *inside* a line, of the same kind as the one that starts
it (same torchrun role, same Open MPI job), right after a character no prefix follows (not a line
start, NUL or `]`; a `:` only after a character that ends no prefix; a blank only after a character that ends no prefix or timestamp, so srun's
`1: `, Ray's `(pid=..) ` and kubectl's `...Z ` are no split), marks the text before it as a fragment of the first prefix's process.
That fragment is moved into the same process's next line of the region, right after its prefix:
the line where the process's write ended. The line that held it keeps the other process's part.
No line is added or removed, so line numbers stay where an editor puts them. A fragment whose
process prints nothing more in the region is left where it was.
"""

from __future__ import annotations

import re

MID = re.compile(rb"(?:(?<=[^\s:\]\x00])|(?<=[^\s:\])Z0-9\x00][ \t])|(?<=[^\s\]>\x00]:))(?:\[[A-Za-z_]+\d+\]:|\[\d+,(?:mpirank:)?\d+(?:,[\w.\-]{1,64})?\]<std(?:out|err)>:)")
# a line's first launcher prefix (after any wrapper such as srun's label or a timestamp)
_FIRST = re.compile(rb"\[(?P<role>[A-Za-z_]+)(?P<n>\d+)\]:|\[(?P<job>\d+),(?:mpirank:)?(?P<rank>\d+)(?:,[\w.\-]{1,64})?\]<std(?:out|err)>:")


def _kind(m: "re.Match[bytes]") -> tuple:
    if m.group("role") is not None:
        return (m.group("role"), None)
    return (None, m.group("job"))


def _who(m: "re.Match[bytes]") -> tuple:
    return _kind(m) + (m.group("n") or m.group("rank"),)


# the same test in RE2 (pyarrow), for a chunk's candidate lines
MID_RE2 = r"(?:[^\s:\]\x00]|[^\s:\])Z0-9\x00][ \t]|[^\s\]>\x00]:)\[(?:[A-Za-z_]+\d+\]:|\d+,(?:mpirank:)?\d+(?:,[\w.\-]{1,64})?\]<std(?:out|err)>:)"


def rejoin(region: bytes) -> bytes:
    """The region with interleaved fragments moved to where their lines end (see the module
    docstring); the region itself when there is none."""
    if MID.search(region) is None:
        return region
    lines = region.split(b"\n")
    pending: dict = {}  # process -> (line index, fragment text)
    moved: dict = {}  # line index -> the line indices its fragments came from
    for i, line in enumerate(lines):
        first = _FIRST.search(line)
        if first is None:
            continue
        who = _who(first)
        if who in pending:
            j, frag = pending.pop(who)
            line = line[:first.end()] + frag + line[first.end():]
            moved.setdefault(i, []).append(j)
        at = first.end()
        while first is not None:
            mid = MID.search(line, at)
            if mid is None:
                break
            nxt = _FIRST.match(line, mid.start())
            if nxt is None or _kind(nxt) != _kind(first):
                at = mid.end()
                continue
            who = _who(first)
            if who in pending:
                break  # the same process split twice before finishing a line: leave the rest
            frag = line[first.end():mid.start()]
            line = line[:first.start()] + line[mid.start():]
            first = _FIRST.match(line, first.start())
            if first is not None and _who(first) == who:  # its own rest came right behind it
                line = line[:first.end()] + frag + line[first.end():]
                at = first.end() + len(frag)
                continue
            pending[who] = (i, frag)
            at = first.end() if first is not None else len(line)
            if first is not None and _who(first) in pending and _who(first) != who:
                j, earlier = pending.pop(_who(first))  # the next segment ends an earlier fragment
                line = line[:first.end()] + earlier + line[first.end():]
                moved.setdefault(i, []).append(j)
                at = first.end() + len(earlier)
        lines[i] = line
    if not moved:
        return region
    if pending:  # fragments with no continuation in the region: their lines stay as printed
        original = region.split(b"\n")
        keep = {j for j, _ in pending.values()}
        grown = True
        while grown:  # and so do the lines that took a fragment from one of those
            grown = False
            for i, froms in moved.items():
                if i not in keep and any(j in keep for j in froms):
                    keep.add(i)
                    grown = True
            for i in list(keep):
                for j in moved.get(i, ()):
                    if j not in keep:
                        keep.add(j)
                        grown = True
        for j in keep:
            lines[j] = original[j]
    return b"\n".join(lines)
