"""Hostile YAML for every loader (cluster, tenants, tokens): an ``InputError`` at
``file:line[:key]``, quickly and in little memory (issue 11 item 17, issue 12 item 4)."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dlsched.cluster.loader import load_cluster_yaml
from dlsched.errors import InputError
from dlsched.runtime.auth import load_tokens
from dlsched.tenancy.loader import load_tenants

LOADERS: dict[str, Callable[[Path], Any]] = {
    "cluster": load_cluster_yaml, "tenants": load_tenants, "tokens": load_tokens}

# the "billion laughs": 9 levels of 9 aliases, 342 bytes standing for 9^9 strings
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n"
    for i in range(8))

HOSTILE = [  # (id, bytes, expected location suffix, message part)
    ("billion-laughs", LAUGHS.encode(), ":", "expands to more than"),
    ("recursive-alias", b"name: &a [x, *a]\n", ":1", "recursive"),
    ("deep-nesting", b"name: " + b"[" * 5000 + b"]" * 5000 + b"\n", ":1", "nested more than"),
    ("invalid-utf8", b"name: c\xff\n", ":1", "not UTF-8 text"),
    ("nul", b"name: c\x00\n", ":1", "control character U+0000"),
    ("utf16", "name: c\n".encode("utf-16"), ":1", "not UTF-8 text"),
    ("two-documents", b"name: a\n---\nname: b\n", ":2", "not valid YAML"),
]


@pytest.mark.parametrize("loader", list(LOADERS))
@pytest.mark.parametrize(("data", "where", "message"), [h[1:] for h in HOSTILE],
                         ids=[h[0] for h in HOSTILE])
def test_hostile_yaml_is_refused_fast(tmp_path: Path, loader: str, data: bytes, where: str,
                                      message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(data)
    start = time.process_time()
    with pytest.raises(InputError) as caught:
        LOADERS[loader](path)
    assert str(caught.value).startswith(f"{path}{where}")
    assert message in str(caught.value)
    assert time.process_time() - start < 2.0  # CPU seconds: the laughs took 10.9 s and a GiB


def test_a_group_of_a_billion_nodes_is_refused_before_any_is_made(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: c\nnode_groups:\n  - {count: 1000000000, gpu_type: T4, gpus: 4}\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match=r"c.yaml:3:node_groups\[0\].count: must be at most"):
        load_cluster_yaml(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_many_groups_cannot_add_up_past_the_node_limit(tmp_path: Path) -> None:
    groups = "".join(f"  - {{count: 60000, gpu_type: T4, gpus: 4, prefix: g{i}}}\n"
                     for i in range(2))
    path = tmp_path / "c.yaml"
    path.write_text("name: c\nnode_groups:\n" + groups)
    with pytest.raises(InputError, match=r":4:node_groups\[1\].count: the cluster would have"):
        load_cluster_yaml(path)


@pytest.mark.parametrize(("value", "message"), [
    (".inf", "must be at most"), ("1.0e+400", "must be at most"),
    (".nan", "must be a finite number, got nan"),
    ("10000000000000000000000000", "must be at most")])
def test_numbers_are_finite_and_bounded(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"name: c\nnodes:\n  - {{name: a, gpus: 0, cpus: {value}}}\n")
    with pytest.raises(InputError, match=rf"c.yaml:3:nodes\[0\].cpus: {message}"):
        load_cluster_yaml(path)


def test_a_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("\ufeffname: c\nnodes:\n  - {name: a, gpus: 0}\n")
    assert load_cluster_yaml(path).name == "c"


def test_names_may_not_hide_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text('name: "c\\0"\nnodes:\n  - {name: a, gpus: 0}\n')
    with pytest.raises(InputError, match=r"c.yaml:1:name: has a control character U\+0000"):
        load_cluster_yaml(path)


def test_scalar_texts_are_kept_only_when_asked() -> None:
    """``keep_texts``: a job file's ``env`` sends ``1.10`` as written, not YAML 1.1's float
    1.1; other inputs (a cluster of thousands of nodes) keep no texts they never read."""
    from dlsched.yamlinput import parse_yaml

    text = "env:\n  VERSION: 1.10\n  DEBUG: yes\nlist: [010]\n"
    doc, source = parse_yaml(text, "job.yaml", keep_texts=True)
    assert doc["env"] == {"VERSION": 1.1, "DEBUG": True} and doc["list"] == [8]
    assert {key: source.texts[key] for key in ("env.VERSION", "env.DEBUG", "list[0]")} == {
        "env.VERSION": "1.10", "env.DEBUG": "yes", "list[0]": "010"}
    assert parse_yaml(text, "job.yaml")[1].texts == {}


@pytest.mark.parametrize(("name", "syntax"), [("jobs.json", "JSON"), ("JOBS.JSON", "JSON"),
                                              ("jobs.yaml", "YAML")])
def test_a_broken_json_file_is_called_json(tmp_path: Path, name: str, syntax: str) -> None:
    """``kubectl get jobs -o json`` cut short read "jobs.json:2:items: not valid YAML": the
    reader parses JSON as YAML, the user wrote JSON."""
    from dlsched.yamlinput import load_yaml_file

    path = tmp_path / name
    path.write_text('{"items": [\n')
    with pytest.raises(InputError, match=f"{name}:2:items: not valid {syntax}: "):
        load_yaml_file(path)
