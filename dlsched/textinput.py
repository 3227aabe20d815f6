"""Reading users' text files safely: UTF-8 only (a leading byte-order mark is accepted), lines
and fields of bounded length, no control characters; every refusal is an ``InputError`` naming
the file, the line and, where there is one, the field.

Trace readers (``workload/readers``) and the YAML loaders (cluster, tenants, run files, tokens)
all read through here, so a binary file, a Latin-1 export or a runaway field gets the same clear
message everywhere instead of a ``UnicodeDecodeError`` traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from dlsched.errors import InputError, InputLocation

BOM = "\ufeff"
MAX_LINE_CHARS = 1 << 20  # one line of a trace; no real trace comes near
MAX_FIELD_CHARS = 4096  # one value: ids, queue names, commands are far shorter
MAX_YAML_BYTES = 8 << 20  # a cluster, tenant, run or tokens file
# C0 controls but tab, line ends handled by the caller; DEL; C1 controls; a BOM past the start;
# the two noncharacters U+FFFE/U+FFFF (what a UTF-16 file read as UTF-8 may leave)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff\ufffe\uffff]")
# a line worth checking value by value: a control character or a carriage return before its end
_SUSPECT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\ufffe\uffff]")


def control_character(text: str) -> str | None:
    """A description of the first control character in ``text`` (e.g. ``U+0000``), or None."""
    match = _CONTROL.search(text)
    if match is None:
        return None
    return f"control character U+{ord(match.group()):04X} at column {match.start() + 1}"


def value_problem(value: str) -> str | None:
    """Why one field's value cannot be read (too long, a control character), or None."""
    if len(value) > MAX_FIELD_CHARS:
        return f"value is {len(value):,} characters long; the limit is {MAX_FIELD_CHARS:,}"
    if "\n" in value or "\r" in value:
        return "value runs over several lines (an unterminated quote?)"
    control = control_character(value)
    return None if control is None else f"{control} (not text)"


def field_at(text_before: str, delimiter: str | None, names: Sequence[str]) -> str | None:
    """The name of the field a position falls in, counting delimiters before it."""
    if delimiter is None or not names:
        return None
    index = text_before.count(delimiter)
    return names[index] if index < len(names) else None


def decode(raw: bytes, path: str, line: int, *, delimiter: str | None = None,
           names: Sequence[str] = ()) -> str:
    """``raw`` as UTF-8 (a leading BOM dropped on line 1), or an error naming line and field."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[:exc.start].decode("utf-8", errors="replace")
        field = field_at(before.lstrip(BOM), delimiter, names)
        raise InputError(InputLocation(path, line, field),
                         f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column "
                         f"{len(before) + 1} (save the file as UTF-8)") from None
    return text[1:] if line == 1 and text.startswith(BOM) else text


class TextLines:
    """The decoded lines of a file (line ends kept), numbered from 1 in ``line``.

    Memory stays bounded: a line over ``MAX_LINE_CHARS`` fails without being read whole.
    Lines end at ``\n``, ``\r\n`` or a lone ``\r`` (the csv module's rule).
    ``names`` (set once a header is read) lets a decoding error name its field.
    """

    def __init__(self, path: Path, delimiter: str | None = None) -> None:
        self.path = path
        self.delimiter = delimiter
        self.names: Sequence[str] = ()
        self.line = 0
        self.last = ""
        self.remember = 0  # the line whose text to keep in ``remembered`` (a record's start)
        self.remembered = ""
        self.suspect = False  # a line read since the caller last cleared it needs a closer look

    def __iter__(self) -> Iterator[str]:
        try:
            f = open(self.path, encoding="utf-8-sig", newline="")  # noqa: SIM115
        except OSError as exc:
            raise InputError(InputLocation(str(self.path)), f"cannot read: {exc.strerror}") \
                from None
        with f:
            try:
                while text := f.readline(MAX_LINE_CHARS + 1):
                    self.line += 1
                    if len(text) > MAX_LINE_CHARS:
                        raise InputError(InputLocation(str(self.path), self.line),
                                         f"line longer than {MAX_LINE_CHARS:,} characters "
                                         "(not a trace file?)")
                    self.last = text
                    if self.line == self.remember:
                        self.remembered = text
                    self._screen(text)
                    yield text
            except UnicodeDecodeError:  # decoded a block ahead: find the line in bytes
                raise self._decode_error() from None

    def _decode_error(self) -> InputError:
        names = self.names
        with open_binary(self.path) as f:
            for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_CHARS * 4), b""),
                                         start=1):
                text = decode(raw, str(self.path), number, delimiter=self.delimiter,
                              names=names)
                if number == 1 and not names and self.delimiter:  # a header not yet read
                    names = [c.strip() for c in text.rstrip("\r\n").split(self.delimiter)]
        return InputError(InputLocation(str(self.path), self.line + 1), "not UTF-8 text")

    def _screen(self, text: str) -> None:
        """One regex per line, so that clean lines skip the per-value checks. An ASCII line
        is screened without it: its characters ``_SUSPECT`` finds are exactly those that
        ``isprintable`` refuses, less the tab (and a line feed, which a line holds only at
        its end); two passes in C, where the regex's class cost ~75 instructions a
        character (~8k a line of Gavel's traces)."""
        end = len(text) - (2 if text.endswith("\r\n") else 1 if text.endswith("\n") else 0)
        if end > MAX_FIELD_CHARS:
            self.suspect = True
            return
        body = text[:end] if end < len(text) else text
        if body.isascii():
            if not body.replace("\t", " ").isprintable():
                self.suspect = True
        elif _SUSPECT.search(body):
            self.suspect = True


def open_binary(path: Path):  # noqa: ANN201 (a file object)
    try:
        return open(path, "rb")  # noqa: SIM115 (the caller closes it)
    except OSError as exc:
        raise InputError(InputLocation(str(path)), f"cannot read: {exc.strerror}") from None


def first_line(path: Path) -> str:
    """The first non-blank line of a text file, decoded ('' if none); errors are located.
    A byte that is not UTF-8 on a later line is left to the reader, which names its field
    (TextLines decodes a block ahead: 'u.csv:3: not UTF-8 text' came without the column's
    name when the format was detected, 'u.csv:3:cluster: ...' with --format)."""
    try:
        for text in TextLines(path):
            if text.strip():
                return text.rstrip("\r\n")
    except InputError as error:
        found = _first_line_before(path, error)
        if found is None:
            raise
        return found
    return ""


def _first_line_before(path: Path, error: InputError) -> str | None:
    """The first non-blank line before the line of a decoding ``error``, read as bytes; None
    for any other error, or no such line."""
    line = error.location.line
    if not error.message.startswith("not UTF-8") or line is None:
        return None
    with open_binary(path) as f:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_CHARS + 1), b""),
                                     start=1):
            if number >= line:
                return None
            text = decode(raw, str(path), number)
            if text.strip():
                return text.rstrip("\r\n")
    return None


_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)?([A-Za-z_][\w.-]*)[ \t]*:")


def _key_on(line: str) -> str | None:
    """The YAML key a line starts with (``  - gpus: 4`` -> ``gpus``), to name in an error."""
    match = _KEY.match(line)
    return match.group(1) if match else None


def read_text(path: str | Path, max_bytes: int = MAX_YAML_BYTES) -> str:
    """A whole (small) text file: UTF-8, BOM dropped, at most ``max_bytes``, no NUL or other
    control characters (tabs and line ends allowed); errors name the line."""
    with open_binary(Path(path)) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(InputLocation(str(path)),
                         f"file larger than {max_bytes:,} bytes (not a configuration file?)")
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            text = decode(raw, str(path), number).rstrip("\r\n")
        except InputError as exc:
            key = _key_on(raw.decode("utf-8", errors="replace"))
            raise InputError(InputLocation(str(path), number, key), exc.message) from None
        control = control_character(text)
        if control is not None:
            raise InputError(InputLocation(str(path), number, _key_on(text)),
                             f"{control} (not text)")
    text = data.decode("utf-8")
    return text[1:] if text.startswith(BOM) else text
