"""The policy registry: lower-case names, option parsing, helpful errors."""

from __future__ import annotations

import pytest

from dlsched.errors import ConfigError
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import accepts, build_policy, policies, register_policy

CORE_POLICIES = ("backfill", "fifo", "sjf", "srtf", "tiresias")


def test_core_policies_are_registered_with_lower_case_names() -> None:
    known = policies()
    assert set(CORE_POLICIES) <= set(known)
    for name, info in known.items():
        assert name == name.lower() == info.name
        assert info.summary, f"{name} has no docstring summary"
    assert list(known) == sorted(known)


def test_upper_case_name_is_refused() -> None:
    with pytest.raises(ValueError, match="lower-case"):
        register_policy("FIFO")


def test_registering_a_name_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register_policy("fifo")(lambda: Profile("fifo", object()))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", CORE_POLICIES)
def test_build_gives_a_fresh_profile(name: str) -> None:
    first, second = build_policy(name), build_policy(name)
    assert first.name == name and first is not second
    assert first.queue_sort is not second.queue_sort  # plugins keep per-run state


OPTIONS = [
    ("tiresias-thresholds", "tiresias", {"thresholds": "100:1000"},
     lambda p: p.queue_sort.thresholds == (100.0, 1000.0)),
    ("tiresias-one-threshold", "tiresias", {"thresholds": "250"},
     lambda p: p.queue_sort.thresholds == (250.0,)),
    ("tiresias-knob", "tiresias", {"promote_knob": "0.5"},
     lambda p: p.queue_sort.promote_knob == 0.5),
    ("fifo-not-strict", "fifo", {"strict": "false"}, lambda p: not p.strict_fifo),
    ("fifo-strict-yes", "fifo", {"strict": "yes"}, lambda p: p.strict_fifo),
    ("srtf-min-runtime", "srtf", {"min_runtime": "20"},
     lambda p: p.post_filters[0].min_runtime == 20.0),
]


@pytest.mark.parametrize(("policy", "options", "check"), [c[1:] for c in OPTIONS],
                         ids=[c[0] for c in OPTIONS])
def test_options_are_parsed(policy: str, options: dict[str, str], check) -> None:
    profile = build_policy(policy, options)
    assert check(profile)
    assert profile.options == options  # recorded as given, for the run's metadata


def test_fifo_is_strict_by_default() -> None:
    assert build_policy("fifo").strict_fifo


def test_placement_is_passed_through() -> None:
    assert build_policy("fifo", placement="spread").placement == "spread"
    assert build_policy("fifo").placement == "consolidated"
    with pytest.raises(ConfigError, match="unknown placement 'diagonal'"):
        build_policy("fifo", placement="diagonal")


@pytest.mark.parametrize("name", sorted(n for n in policies() if not accepts(n, "placement")))
def test_a_policy_that_places_its_jobs_itself_refuses_a_placement(name: str) -> None:
    # --placement reached the builder as an unknown keyword: a TypeError's traceback
    with pytest.raises(ConfigError, match=f"policy {name} places its jobs itself"):
        build_policy(name, placement="spread")


def test_unknown_option_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="policy tiresias: unknown option 'threshold'") as err:
        build_policy("tiresias", {"threshold": "100"})
    assert ("(options: thresholds, promote_knob, min_runtime, same_queue_preemption)"
            in str(err.value))
    with pytest.raises(ConfigError, match=r"unknown option 'x' \(options: strict\)"):
        build_policy("fifo", {"x": "1"})
    with pytest.raises(ConfigError, match=r"\(options: none\)"):
        build_policy("sjf", {"x": "1"})


@pytest.mark.parametrize(("policy", "options"), [
    ("fifo", {"strict": "maybe"}),
    ("tiresias", {"promote_knob": "fast"}),
    ("tiresias", {"thresholds": "100:lots"}),
    ("gandiva", {"quantum": "nan"}),
    ("tiresias", {"thresholds": "100:inf"}),
    ("elasticflow", {"round_seconds": "inf"}),
], ids=["bool", "float", "tuple", "nan", "inf-in-a-tuple", "inf"])
def test_bad_option_value(policy: str, options: dict[str, str]) -> None:
    key, text = next(iter(options.items()))
    with pytest.raises(ConfigError, match=f"option {key}={text!r} is not valid"):
        build_policy(policy, options)


@pytest.mark.parametrize(("policy", "options", "said"), [
    ("tiresias", {"thresholds": "abc"}, "(numbers separated by ':', default 3600)"),
    ("tiresias", {"thresholds": ""}, "has no value (default 3600)"),
    ("tiresias", {"promote_knob": "fast"}, "(default 0)"),
    ("fifo", {"strict": "maybe"}, "(true or false, default true)"),
], ids=["tuple", "tuple-empty", "float", "bool"])
def test_a_bad_value_names_the_default_as_it_is_written(policy: str, options: dict[str, str],
                                                       said: str) -> None:
    """The default read as Python's repr: ``thresholds='abc' is not valid (default
    (3600.0,))``, ``strict`` ``(default True)``, where the option is written ``3600:36000``."""
    with pytest.raises(ConfigError) as caught:
        build_policy(policy, options)
    assert str(caught.value).endswith(said)


@pytest.mark.parametrize(("typed", "meant"), [
    ("FIFO", "fifo"), ("Tiresias", "tiresias"), ("tiresia", "tiresias"),
], ids=["upper", "capitalized", "typo"])
def test_an_unknown_policy_names_the_closest_in_any_case(typed: str, meant: str) -> None:
    with pytest.raises(ConfigError, match=f"did you mean {meant!r}\\?$"):
        build_policy(typed)


def test_unknown_policy_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown policy 'lifo'") as err:
        build_policy("lifo")
    for name in CORE_POLICIES:
        assert name in str(err.value)


@pytest.mark.parametrize("policy", ["afs", "afs-p", "elasticflow", "optimus", "pollux", "sia"])
@pytest.mark.parametrize("seconds", ["0", "-60"])
def test_a_round_that_does_not_advance_the_clock_is_refused(policy: str, seconds: str) -> None:
    # round_seconds=0 used to hang the simulation (the next round at the same time, forever)
    with pytest.raises(ConfigError, match=f"policy {policy}: round_seconds must be > 0"):
        build_policy(policy, {"round_seconds": seconds})


@pytest.mark.parametrize(("policy", "option", "value", "message"), [
    ("tiresias", "min_runtime", "-5", "min_runtime must be >= 0, got -5.0"),
    ("tiresias", "promote_knob", "-1", "promote_knob must be >= 0"),
    ("srtf", "min_runtime", "-1", "min_runtime must be >= 0"),
    ("edf", "min_runtime", "-1", "min_runtime must be >= 0"),
    ("pollux", "restart_seconds", "-1", "restart_seconds must be >= 0"),
    ("sia", "restart_seconds", "-3", "restart_seconds must be >= 0"),
    ("chronus", "restart_seconds", "-1", "restart_seconds must be >= 0"),
    ("afs", "max_workers", "0", "max_workers must be >= 1, got 0"),
    ("afs-p", "max_workers", "0", "max_workers must be >= 1, got 0"),
    ("elasticflow", "max_workers", "0", "max_workers must be >= 1"),
    ("optimus", "max_workers", "0", "max_workers must be >= 1"),
])
def test_out_of_range_numbers_are_refused_by_name(policy: str, option: str, value: str,
                                                  message: str) -> None:
    """A negative protection or restart cost, or no workers at all, was taken silently (the
    run then misbehaved or ended "nothing could start")."""
    with pytest.raises(ConfigError, match=f"policy {policy}: {message}"):
        build_policy(policy, {option: value})


def test_an_empty_value_is_refused() -> None:
    """``thresholds=`` read as no thresholds at all (one queue) rather than an error."""
    with pytest.raises(ConfigError, match="policy tiresias: option thresholds= has no value"):
        build_policy("tiresias", {"thresholds": ""})


def test_a_mistyped_policy_names_the_one_meant() -> None:
    """``--policy tiresas`` listed 32 policies without saying which was meant."""
    with pytest.raises(ConfigError, match="; did you mean 'tiresias'\\?$"):
        build_policy("tiresas")


def test_a_mistyped_option_names_the_one_meant() -> None:
    """``dlsched serve --policy-opt thresold=5`` listed the options without saying which."""
    with pytest.raises(ConfigError, match="unknown option 'thresold' .*; did you mean "
                                          "'thresholds'\\?$"):
        build_policy("tiresias", {"thresold": "5"})
