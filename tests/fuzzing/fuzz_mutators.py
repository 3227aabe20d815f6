"""Mutations of a valid input file, each with what must come of it.

``expect`` is ``error`` (the result is garbage: loading must fail with a located error, never
succeed), ``same`` (the file means what the seed means: a BOM, CRLF line ends, quoted values)
or ``any`` (random damage: success or a located error, never a traceback). A mutator draws from
a ``random.Random``, so hypothesis (``st.randoms()``) and the benchmark's seeded generator drive
the same code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from random import Random

from fuzz_seeds import Target

Apply = Callable[[bytes, Target, Random], bytes]


@dataclass(frozen=True)
class Mutator:
    name: str
    apply: Apply
    expect: str  # "error" | "same" | "any"
    applies: Callable[[Target], bool] = lambda target: True


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _first_data_line(target: Target) -> int:
    return 1 if target.kind == "trace" and target.header else 0


def _pick_row(data: bytes, target: Target, rng: Random) -> tuple[list[bytes], int]:
    lines = _lines(data)
    return lines, rng.randrange(_first_data_line(target), len(lines))


def _with_field(data: bytes, target: Target, rng: Random, value: Callable[[bytes], bytes],
                column: int | None = None) -> bytes:
    """One field of one data row replaced by ``value(old)``."""
    lines, row = _pick_row(data, target, rng)
    delimiter = target.delimiter.encode()
    fields = lines[row].rstrip(b"\r\n").split(delimiter)
    index = rng.randrange(len(fields)) if column is None else column
    fields[index] = value(fields[index])
    lines[row] = delimiter.join(fields) + b"\n"
    return b"".join(lines)


def _insert(data: bytes, rng: Random, piece: bytes, start: int = 0) -> bytes:
    at = rng.randrange(start, len(data))
    return data[:at] + piece + data[at:]


def invalid_utf8(data: bytes, target: Target, rng: Random) -> bytes:
    return _insert(data, rng, rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"]))


def control_character(data: bytes, target: Target, rng: Random) -> bytes:
    code = rng.choice([0, 1, 7, 8, 11, 12, 27, 31, 127])
    return _insert(data, rng, bytes([code]))


def duplicate_row(data: bytes, target: Target, rng: Random) -> bytes:
    lines, row = _pick_row(data, target, rng)
    return b"".join(lines + [lines[row]])


def empty(data: bytes, target: Target, rng: Random) -> bytes:
    return rng.choice([b"", b"\n", b"  \n\n", b"\xef\xbb\xbf"])


def header_only(data: bytes, target: Target, rng: Random) -> bytes:
    return _lines(data)[0] + rng.choice([b"", b"\n", b"\n\n"])


def unterminated_quote(data: bytes, target: Target, rng: Random) -> bytes:
    return _with_field(data, target, rng, lambda old: b'"' + old)


def long_field(data: bytes, target: Target, rng: Random) -> bytes:
    size = rng.choice([5_000, 70_000, 140_000, 300_000])
    return _with_field(data, target, rng, lambda old: b"7" * size)


def binary(data: bytes, target: Target, rng: Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(16, 400)))


def pre_1970(data: bytes, target: Target, rng: Random) -> bytes:
    when = rng.choice([b"1969-12-31 23:59:59", b"1900-01-01 00:00:00", b"0001-01-01 00:00:00"])
    return _with_field(data, target, rng, lambda old: when, target.time_column)


def merged_fields(data: bytes, target: Target, rng: Random) -> bytes:
    lines, row = _pick_row(data, target, rng)
    lines[row] = lines[row].replace(target.delimiter.encode(), b"", 1)
    return b"".join(lines)


def with_bom(data: bytes, target: Target, rng: Random) -> bytes:
    return b"\xef\xbb\xbf" + data


def crlf(data: bytes, target: Target, rng: Random) -> bytes:
    return data.replace(b"\n", b"\r\n")


def quoted_field(data: bytes, target: Target, rng: Random) -> bytes:
    return _with_field(data, target, rng, lambda old: b'"' + old.replace(b'"', b'""') + b'"')


def nonfinite(data: bytes, target: Target, rng: Random) -> bytes:
    value = rng.choice([b"nan", b"inf", b"-inf", b"1e400", b"-1e400", b"1e16", b"-0",
                        b"99999999999999999999999", b"1_000", b"0x10", b"\xd9\xa1\xd9\xa2"])
    return _with_field(data, target, rng, lambda old: value)


def byte_flip(data: bytes, target: Target, rng: Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def delete_range(data: bytes, target: Target, rng: Random) -> bytes:
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randrange(1, 40):]


def splice_text(data: bytes, target: Target, rng: Random) -> bytes:
    piece = rng.choice([b",", b"\t", b'"', b"'", b"\n", b"\r", b" ", b"-", b"0", b"#", b":",
                        b"[", b"{", b"&a", b"*a", b"!!binary", b"\xe2\x80\xa8", b"..."])
    return _insert(data, rng, piece * rng.randrange(1, 5))


def swap_lines(data: bytes, target: Target, rng: Random) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def truncate(data: bytes, target: Target, rng: Random) -> bytes:
    return data[:rng.randrange(1, len(data))]


_ALPHABET = ("abcXYZ019 ,;\t\"'-+._:/\\#[]{}&*!|>%@`~=?\u00e9\u00a0\u2028\u200b\u0661\U0001f600"
             "\ud7ff\ufffd")


def random_value(data: bytes, target: Target, rng: Random) -> bytes:
    """One field replaced by a short random string of awkward characters (any Unicode that
    UTF-8 can encode: separators, quotes, exotic digits and spaces, emoji)."""
    value = "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 12)))
    return _with_field(data, target, rng, lambda old: value.encode())


def cross_format(data: bytes, target: Target, rng: Random) -> bytes:
    """Another format's header or rows in this file (a file given the wrong --format)."""
    from fuzz_seeds import TRACES, YAMLS

    other = rng.choice([t for t in (TRACES if target.kind == "trace" else YAMLS)
                        if t.name != target.name]).seed.encode()
    mine, theirs = _lines(data), _lines(other)
    if rng.random() < 0.5:
        return b"".join(theirs[:1] + mine[1:])
    return b"".join(mine[:1] + theirs[1:])


# YAML: documents that must be refused whatever the loader

def billion_laughs(data: bytes, target: Target, rng: Random) -> bytes:
    width, depth = rng.choice([(9, 9), (10, 7), (4, 16)])
    text = "a0: &a0 [" + ",".join(['"lol"'] * width) + "]\n"
    for level in range(1, depth):
        text += f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * width) + "]\n"
    return text.encode()


def recursive_alias(data: bytes, target: Target, rng: Random) -> bytes:
    return rng.choice([b"x: &a [1, *a]\n", b"&a {k: *a}\n", b"name: &n\n  - *n\n"])


def deep_nesting(data: bytes, target: Target, rng: Random) -> bytes:
    depth = rng.choice([100, 1_000, 20_000])
    return rng.choice([b"[" * depth + b"]" * depth, b"{a: " * depth + b"1" + b"}" * depth])


def unknown_key(data: bytes, target: Target, rng: Random) -> bytes:
    return data + rng.choice([b"bogus_key: 1\n", b"nod_groups: []\n", b"? [1, 2]\n: 3\n"])


def huge_number(data: bytes, target: Target, rng: Random) -> bytes:
    """A count or quantity far beyond any cluster: must be refused (``error``) for counts."""
    value = rng.choice([b"1000000000", b"10000000000000000000000000000", b".inf", b"1.0e+400"])
    return re.sub(rb"(count|gpus|nominal|gpu): [0-9.]+", rb"\1: " + value, data, count=1)


def type_swap(data: bytes, target: Target, rng: Random) -> bytes:
    value = rng.choice([b"[1, 2]", b"{a: b}", b"null", b"true", b"!!binary aGVsbG8=", b"''",
                        b"2001-12-14", b"-1", b"0", b"x" * 300])
    lines = _lines(data)
    candidates = [i for i, line in enumerate(lines) if re.search(rb":\s*\S", line)]
    i = rng.choice(candidates)
    lines[i] = re.sub(rb":\s*\S.*", b": " + value, lines[i].rstrip(b"\n"), count=1) + b"\n"
    return b"".join(lines)


def _trace(target: Target) -> bool:
    return target.kind == "trace"


def _csv(target: Target) -> bool:
    return target.kind == "trace" and target.delimiter == ","


def _yaml(target: Target) -> bool:
    return target.kind == "yaml"


MUTATORS = (
    Mutator("invalid_utf8", invalid_utf8, "error"),
    Mutator("control_character", control_character, "error"),
    Mutator("duplicate_id", duplicate_row, "error", lambda t: t.id_column is not None),
    Mutator("duplicate_row", duplicate_row, "any", lambda t: _trace(t) and t.id_column is None),
    Mutator("empty", empty, "error", lambda t: not t.empty_ok),
    Mutator("header_only", header_only, "error", lambda t: _trace(t) and t.header),
    Mutator("unterminated_quote", unterminated_quote, "error", _csv),
    Mutator("long_field", long_field, "error", _trace),
    Mutator("binary", binary, "error"),
    Mutator("pre_1970", pre_1970, "error", lambda t: t.time_column is not None),
    Mutator("merged_fields", merged_fields, "error", _trace),
    Mutator("bom", with_bom, "same"),
    Mutator("crlf", crlf, "same"),
    Mutator("quoted_field", quoted_field, "same", _csv),
    Mutator("nonfinite", nonfinite, "any", _trace),
    Mutator("byte_flip", byte_flip, "any"),
    Mutator("delete_range", delete_range, "any"),
    Mutator("splice_text", splice_text, "any"),
    Mutator("swap_lines", swap_lines, "any"),
    Mutator("truncate", truncate, "any"),
    Mutator("random_value", random_value, "any"),
    Mutator("cross_format", cross_format, "any"),
    Mutator("billion_laughs", billion_laughs, "error", _yaml),
    Mutator("recursive_alias", recursive_alias, "error", _yaml),
    Mutator("deep_nesting", deep_nesting, "error", _yaml),
    Mutator("unknown_key", unknown_key, "error", _yaml),
    Mutator("huge_count", huge_number, "error", lambda t: t.name in ("cluster",)),
    Mutator("huge_number", huge_number, "any", lambda t: t.name == "tenants"),
    Mutator("type_swap", type_swap, "any", _yaml),
)


def mutators_for(target: Target) -> list[Mutator]:
    return [m for m in MUTATORS if m.applies(target)]
