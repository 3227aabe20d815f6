"""``slot_builder`` (dlsched/slots.py) makes the same objects as the dataclass's ``__init__``,
and ``plain_spec`` the same specs and errors as ``JobSpec``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from dlsched.perf.model import Placement
from dlsched.sim.result import JobRecord
from dlsched.slots import slot_builder
from dlsched.workload.job import JobSpec, plain_spec


def test_builder_equals_the_constructor_with_defaults() -> None:
    build = slot_builder(JobRecord)
    args = ("j1", "vc", 2, 1.0, None, 9.5, "finished", 1, 17.0, 8.0, 8.0, "")
    made, expected = build(*args), JobRecord(*args)
    assert made == expected and hash(made) == hash(expected) and repr(made) == repr(expected)
    assert build(*args, 3, 20.0) == JobRecord(*args, 3, 20.0)  # defaults overridden
    assert slot_builder(Placement)(("V100",), (0,), (), None) == Placement(("V100",), (0,))
    with pytest.raises(AttributeError):
        made.queue = "other"  # still frozen


def test_builder_of_chosen_fields_defaults_the_rest() -> None:
    build = slot_builder(JobSpec, ("job_id", "submit_time", "num_gpus", "work"))
    assert build("a", 0.0, 1, 5.0) == JobSpec("a", 0.0, 1, 5.0)
    with pytest.raises(TypeError, match="no default"):
        slot_builder(JobSpec, ("job_id",))


def test_builder_refuses_default_factories() -> None:
    @dataclass(frozen=True, slots=True)
    class WithList:
        items: list = None  # type: ignore[assignment]
        other: dict = field(default_factory=dict)

    with pytest.raises(TypeError, match="default factory"):
        slot_builder(WithList)


@pytest.mark.parametrize("values", [("x", 3.0, 2, 7.5, "q", "q"), ("y", 0.0, 1, 1.0, "default",
                                                                   None)])
def test_plain_spec_is_jobspec(values: tuple) -> None:
    job_id, submit, gpus, work, queue, pool = values
    assert plain_spec(*values) == JobSpec(job_id, submit, gpus, work, queue=queue, pool=pool)


@pytest.mark.parametrize("values", [("x", 0.0, 0, 1.0), ("x", 0.0, 1, 0.0), ("x", -1.0, 1, 1.0),
                                    ("x", 0.0, 1, float("nan"))])
def test_plain_spec_refuses_what_jobspec_refuses(values: tuple) -> None:
    with pytest.raises(ValueError) as expected:
        JobSpec(*values)
    with pytest.raises(ValueError, match=str(expected.value).replace("(", r"\(")):
        plain_spec(*values)
