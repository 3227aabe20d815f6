"""Every trace format and YAML loader, fed mutated files: never a traceback, garbage never
accepted, a harmless change (BOM, CRLF, quoting) never refused or read differently, and every
error names the file and line (issue 11 item 17, issue 12 items 4 and 5). A brief run for CI
(about 300 inputs); ``benchmarks/fuzz_inputs.py`` runs the same mutators at length."""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random

import pytest
from fuzz_mutators import MUTATORS, mutators_for
from fuzz_runner import mutate_and_judge
from fuzz_seeds import TARGETS, TRACES, YAMLS
from hypothesis import given, settings
from hypothesis import strategies as st

PAIRS = [(target, mutator) for target in TRACES + YAMLS for mutator in mutators_for(target)]


@settings(max_examples=300)
@given(pair=st.sampled_from(PAIRS), rng=st.randoms(use_true_random=False))
def test_mutated_inputs_fail_cleanly_or_load(pair: tuple, rng: Random) -> None:
    target, mutator = pair
    with tempfile.TemporaryDirectory() as folder:
        outcome = mutate_and_judge(target, mutator, rng, Path(folder))
    assert not outcome.problems, (outcome.problems, outcome.message)


@pytest.mark.parametrize("mutator", [m for m in MUTATORS if m.expect == "error"],
                         ids=lambda m: m.name)
def test_each_garbage_mutation_is_refused_everywhere_it_applies(mutator, tmp_path: Path) -> None:
    for target in TARGETS.values():
        if mutator.applies(target):
            outcome = mutate_and_judge(target, mutator, Random(7), tmp_path)
            assert outcome.status == "error" and not outcome.problems, (target.name, outcome)
