"""``dlsched policies``: whole summaries, no reStructuredText markup (issue 11 item 13)."""

from __future__ import annotations

from typer.testing import CliRunner

from dlsched.cli import app, policy_summary


def test_policy_summary_is_the_whole_first_paragraph_as_plain_text() -> None:
    doc = "Gavel ``prices`` per\n:ref:`type` and more.\n\nDetails ``not shown``."
    assert policy_summary(doc) == "Gavel prices per type and more."


def test_the_listing_shows_whole_summaries() -> None:
    result = CliRunner().invoke(app, ["policies"], env={"COLUMNS": "1000"})
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    assert "size affinity and migration for locality." in text  # gandiva's second line
    assert "``" not in result.output



def test_an_option_too_long_for_its_column_folds_rather_than_being_cut() -> None:
    """At 80 columns tiresias' last option read ``same_queue_preemption=Fa…``."""
    result = CliRunner().invoke(app, ["policies"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.output
    assert "same_queue_preemption=Fal" in result.output
