"""YAML input files (clusters, tenants, run files, tokens) parsed with limits.

PyYAML's ``SafeLoader`` refuses arbitrary Python objects but not size: a 564-byte file of nested
aliases (the "billion laughs") stands for 10^9 values, and an alias inside its own anchor makes
a cyclic document. ``BoundedLoader`` counts, while composing, what the document would expand to
and refuses past ``MAX_VALUES`` values, ``MAX_DEPTH`` levels of nesting or ``MAX_ALIASES``
aliases, and any recursive alias, naming the line. Every error is an ``InputError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError

from dlsched.errors import InputError, InputLocation
from dlsched.textinput import read_text

MAX_VALUES = 200_000  # scalars, lists and mappings after expanding aliases
MAX_DEPTH = 64
MAX_ALIASES = 1_000


class BoundedLoader(yaml.SafeLoader):
    """A ``SafeLoader`` that refuses documents too large, too deep or cyclic (see above)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._open: set[str] = set()  # anchors whose node is being composed
        self._sizes: dict[int, int] = {}  # id(node) -> values it expands to
        self._path: list[str] = []  # key path of the node being composed, for errors

    def key_path(self) -> str | None:
        """Where composing stopped, as ``node_groups[1].count`` (None at the top)."""
        return "".join(self._path).lstrip(".") or None

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._alias(event)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._refuse(event, f"nested more than {MAX_DEPTH} levels deep")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)
        self._path.append(_segment(parent, index))
        node = super().compose_node(parent, index)
        self._count(node, event)
        self._path.pop()
        self._open.discard(anchor)
        self._depth -= 1
        return node

    def _alias(self, event: yaml.AliasEvent) -> None:
        self._aliases += 1
        if event.anchor in self._open:
            raise self._refuse(event, f"alias *{event.anchor} refers to a value that contains "
                                      "it (a recursive document)")
        if self._aliases > MAX_ALIASES:
            raise self._refuse(event, f"more than {MAX_ALIASES:,} aliases")

    def _count(self, node: yaml.Node, event: yaml.Event) -> None:
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        size = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        if size > MAX_VALUES:
            raise self._refuse(event, f"the document expands to more than {MAX_VALUES:,} "
                                      "values (aliases of aliases?)")
        self._sizes[id(node)] = size

    @staticmethod
    def _refuse(event: yaml.Event, message: str) -> ComposerError:
        return ComposerError(None, None, message, event.start_mark)


def _segment(parent: yaml.Node | None, index: Any) -> str:
    if isinstance(index, int):
        return f"[{index}]"
    if isinstance(index, yaml.ScalarNode) and isinstance(parent, yaml.MappingNode):
        return f".{index.value}"
    return ""


@dataclass(frozen=True)
class YamlSource:
    """A parsed file: where it came from, the line of every key path and, when asked for
    (``parse_yaml(keep_texts=True)``), each scalar's text as written (``1.10``, ``yes``: what
    YAML 1.1 reads as the float 1.1 and the boolean true)."""

    path: str
    lines: Mapping[str, int]
    texts: Mapping[str, str] = field(default_factory=dict)

    def error(self, key_path: str, message: str) -> InputError:
        """An error at ``key_path``'s line (else its nearest parent's, else line 1)."""
        return InputError(InputLocation(self.path, self.line(key_path), key_path or None),
                          message)

    def line(self, key_path: str) -> int:
        at = key_path
        while at not in self.lines and at:
            at = at[:max(at.rfind("."), at.rfind("["), 0)]
        return self.lines.get(at, 1)


def _line_map(node: yaml.Node, key_path: str, lines: dict[str, int], src_path: str,
              texts: dict[str, str] | None = None) -> None:
    """Record the 1-based line of every key path (and into ``texts``, if given, each scalar's
    text); reject duplicate keys, which YAML allows."""
    lines.setdefault(key_path, node.start_mark.line + 1)
    if texts is not None and isinstance(node, yaml.ScalarNode):
        texts[key_path] = node.value
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, f"{key_path}[{i}]", lines, src_path, texts)
    elif isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            name = str(key_node.value)
            child = f"{key_path}.{name}" if key_path else name
            lines[child] = key_node.start_mark.line + 1
            if name in keys:
                raise InputError(InputLocation(src_path, lines[child], child), "duplicate key")
            keys.add(name)
            _line_map(value_node, child, lines, src_path, texts)


def parse_yaml(text: str, source: str, keep_texts: bool = False) -> tuple[Any, YamlSource]:
    """The YAML document, parsed once with limits, and the line of every key path in it
    (``keep_texts``: and each scalar's text as written)."""
    loader = BoundedLoader(text)
    try:
        root = loader.get_single_node()
        doc = None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or exc
        if problem == "but found another document":  # PyYAML's words for a second '---'
            problem = "a second document starts here (after '---'): give one document"
        syntax = "JSON" if source.lower().endswith(".json") else "YAML"  # JSON is read as YAML
        raise InputError(InputLocation(source, line, loader.key_path()),
                         f"not valid {syntax}: {problem}") from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    texts: dict[str, str] | None = {} if keep_texts else None
    if root is not None:
        _line_map(root, "", lines, source, texts)
    return doc, YamlSource(source, lines, texts or {})


def load_yaml_file(path: str | Path, keep_texts: bool = False) -> tuple[Any, YamlSource]:
    """``parse_yaml`` of a file read as checked text (UTF-8, BOM allowed, size-capped)."""
    return parse_yaml(read_text(path), str(path), keep_texts)


# YAML 1.1 (PyYAML's safe loader) reads a float only with a '.' and a signed exponent:
# 1e3 and 1.5e3 are text, 1.0e+3 is 1000.0.
_EXPONENT_AS_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def number_read_as_text(value: Any, integer: bool) -> str:
    """Why a number the user wrote is text to the YAML reader, or '' (a suffix for the
    message of a field that must be a number: ``got '1e3'`` then says how to write it)."""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if _EXPONENT_AS_TEXT.fullmatch(text):
        return f" (YAML reads {text} as text: write the number in full" + (
            ")" if integer else ", or with a point and a signed exponent, 1.0e+3)")
    try:
        float(text)
    except ValueError:
        return ""
    return " (a quoted number is text: drop the quotes)"
