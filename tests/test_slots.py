"""``slot_builder`` (dlsched/slots.py) makes the same objects as the dataclass's ``__init__``,
and ``plain_spec`` the same specs and errors as ``JobSpec``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from dlsched.perf.model import Placement
from dlsched.scheduling.decisions import CycleResult, Preempt, Start
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


@pytest.mark.parametrize("cls, args", [
    (Start, ("j1", (0, 3), (1.0, 1.0))), (Preempt, ("j1", "preempted by j2")),
    (JobRecord, ("j1", "vc", 2, 1.0, None, 9.5, "finished", 1, 17.0, 8.0, 8.0, "")),
], ids=["start", "preempt", "record"])
def test_builder_fills_a_twin_of_the_same_slots_then_gives_it_the_class(
        cls: type, args: tuple) -> None:
    """Each field a plain slot store on a twin class, then ``__class__`` assigned (issue 14: a
    ``Start`` of four fields cost ~4,200 instructions through the slots' descriptors, ~1,700
    so): the instance is the class's own, equal, hashed and shown alike, and still frozen."""
    build = slot_builder(cls)
    assert build.__globals__["_twin"] is not None  # the fast path, not the descriptors
    made, expected = build(*args), cls(*args)
    assert type(made) is cls
    assert made == expected and hash(made) == hash(expected) and repr(made) == repr(expected)
    with pytest.raises(AttributeError):
        made.job_id = "other"


def test_builder_of_a_subclass_sets_its_fields_through_the_descriptors() -> None:
    """A class whose slots are not all its own (a dataclass over another) has no twin: its
    fields are set through the slots' descriptors, the same object."""
    @dataclass(frozen=True, slots=True)
    class Base:
        a: int

    @dataclass(frozen=True, slots=True)
    class Derived(Base):
        b: str = "x"

    build = slot_builder(Derived)
    assert build.__globals__["_twin"] is None
    assert build(1) == Derived(1) and type(build(1, "y")) is Derived and build(1, "y").b == "y"


def test_builder_of_a_class_without_slots_fills_its_dict_as_its_init_would() -> None:
    """A frozen dataclass without slots (``CycleResult``, one a Tiresias lane cycle): a twin
    of no slots, then ``__class__``; fields passed that have a default factory are taken as
    given (one not passed still refuses: no factory is called)."""
    build = slot_builder(CycleResult, ("starts", "reasons", "next_wakeup", "blocked"))
    assert build.__globals__["_twin"] is not None
    made = build((), {"j1": "why"}, 7.0, {})
    expected = CycleResult(reasons={"j1": "why"}, next_wakeup=7.0)
    assert type(made) is CycleResult and made == expected and repr(made) == repr(expected)
    assert list(vars(made)) == list(vars(expected))  # the fields, in order, in its dict
    with pytest.raises(AttributeError):
        made.next_wakeup = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="default factory"):
        slot_builder(CycleResult, ("starts",))
