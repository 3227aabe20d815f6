"""Slurm host lists (``gpu[01-04,07],login1``) and GRES strings (``gpu:a100:8(S:0-1)``), as
``sinfo`` and ``scontrol`` print them (``sinfo.py``)."""

from __future__ import annotations

import re

MAX_HOSTS = 100_000  # as a cluster's nodes (``loader.MAX_NODES``)
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def split_top(text: str, opening: str = "[", closing: str = "]") -> list[str]:
    """``text`` split at the commas outside brackets (``a[1,3],b`` -> ``a[1,3]``, ``b``)."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced {closing!r} in {text!r}")
        elif char == "," and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    if depth:
        raise ValueError(f"unbalanced {opening!r} in {text!r}")
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def expand_hostlist(text: str) -> list[str]:
    """The host names of a Slurm host list, in its order: ``n[01-03,07]`` is n01, n02, n03,
    n07 (numbers padded to the width of the range's first bound); several brackets in one
    name give every combination (``r[1-2]n[1-2]``: r1n1, r1n2, r2n1, r2n2). ValueError with
    the reason when it is not one."""
    hosts: list[str] = []
    for item in split_top(text):
        hosts.extend(_expand_one(item))
        if len(hosts) > MAX_HOSTS:
            raise ValueError(f"more than {MAX_HOSTS:,} hosts")
    return hosts


def _expand_one(item: str) -> list[str]:
    names = [""]
    rest = item
    while rest:
        open_at = rest.find("[")
        if open_at < 0:
            return [name + rest for name in names]
        close_at = rest.find("]", open_at)
        if close_at < 0:
            raise ValueError(f"unbalanced '[' in {item!r}")
        numbers = _numbers(rest[open_at + 1:close_at], item)
        names = [name + rest[:open_at] + number for name in names for number in numbers]
        if len(names) > MAX_HOSTS:
            raise ValueError(f"more than {MAX_HOSTS:,} hosts")
        rest = rest[close_at + 1:]
    return names


def _numbers(ranges: str, item: str) -> list[str]:
    out: list[str] = []
    for part in ranges.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise ValueError(f"not a range of numbers: {part!r} in {item!r}")
        low_text, high_text = match.group(1), match.group(2) or match.group(1)
        low, high = int(low_text), int(high_text)
        if high < low:
            raise ValueError(f"range {part!r} ends before it starts in {item!r}")
        if high - low >= MAX_HOSTS:
            raise ValueError(f"more than {MAX_HOSTS:,} hosts in {part!r}")
        width = len(low_text) if low_text.startswith("0") else 0
        out.extend(f"{n:0{width}d}" for n in range(low, high + 1))
    return out


def gpus_of_gres(text: str) -> tuple[int, str]:
    """A node's GPUs and their type from its GRES (``gpu:a100:8``, ``gpu:8``,
    ``gpu:a100:8(S:0-1),nic:2``); ``(null)`` or no ``gpu`` entry: none. The type is empty when
    the GRES names none. ValueError with the reason: a count that is not a number, or GPUs of
    two types on one node (``gpu_kinds_of_gres`` reads those)."""
    kinds = gpu_kinds_of_gres(text)
    if len(kinds) > 1:
        raise ValueError(f"GPUs of {len(kinds)} types on one node "
                         f"({', '.join(repr(kind) for kind, _ in kinds)})")
    return (kinds[0][1], kinds[0][0]) if kinds else (0, "")


def gpu_kinds_of_gres(text: str) -> tuple[tuple[str, int], ...]:
    """A node's GPUs per type from its GRES, in the order first named (``gpu:a100:4,
    gpu:v100:2``: (("a100", 4), ("v100", 2)); a type named twice, as per socket, summed; the
    type empty where the GRES names none); none for ``(null)`` or no ``gpu`` entry.
    ValueError with the reason: an entry that is not ``gpu:COUNT`` or ``gpu:TYPE:COUNT``."""
    text = text.strip()
    if text in ("", "(null)", "N/A"):
        return ()
    counts: dict[str, int] = {}
    for item in split_top(text, "(", ")"):
        plain = item.split("(", 1)[0].strip()
        parts = plain.split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) not in (2, 3) or not parts[-1].isdigit():
            raise ValueError(f"not a GPU GRES (gpu:COUNT or gpu:TYPE:COUNT): {item!r}")
        kind = parts[1] if len(parts) == 3 else ""
        counts[kind] = counts.get(kind, 0) + int(parts[-1])
    return tuple((kind, count) for kind, count in counts.items() if count)
