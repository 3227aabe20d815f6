"""``--opt policies`` of gavel-osdi20, pollux-osdi21 and tiresias-nsdi19 goes through the
registry's ``chosen_policies``: an unknown name fails before anything runs, with the message
the other experiments give."""

from __future__ import annotations

import pytest

from dlsched.errors import ConfigError
from dlsched.reproduce.registry import ExperimentOptions, get_experiment


@pytest.mark.parametrize(("name", "known"), [
    ("gavel-osdi20", "gavel-fifo, gavel-maxmin-agnostic, gavel-maxmin, gavel-ftf, gavel-las"),
    ("pollux-osdi21", "tiresias, optimus, pollux"),
    ("tiresias-nsdi19", "fifo, tiresias, srtf"),
])
@pytest.mark.parametrize(("asked", "named"), [("nope", "'nope'"), ("{first},nope", "'nope'"),
                                              (" , ", "' , '")])
def test_an_unknown_policy_is_named_with_the_known(name: str, known: str, asked: str,
                                                   named: str) -> None:
    asked = asked.format(first=known.split(", ")[0])
    experiment = get_experiment(name)
    assert "policies" in experiment.options
    options = ExperimentOptions(cases=experiment.cases[:1], variants=experiment.variants[:1],
                                options={"policies": asked})
    rows = iter(experiment.run(options))
    with pytest.raises(ConfigError, match=f"--opt policies: {named} is not one of {known}$"):
        next(rows)
