"""Run a registered experiment and join its values with the reference numbers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dlsched.reproduce.published import Key, Reference, published
from dlsched.reproduce.registry import Experiment, ExperimentOptions
from dlsched.reproduce.rows import Measured, ReproduceRow


def run_experiment(experiment: Experiment, options: ExperimentOptions, workers: int = 1
                   ) -> list[ReproduceRow]:
    """Every cell the experiment measured with these options, beside its reference; with
    ``workers`` > 1 the simulations of a ``pooled`` experiment run on that many processes
    (prefetch.py: the same rows)."""
    experiment.check_options(options.options)
    # A quick subset (``--opt limit=N``) is not the setting the numbers were published for:
    # its cells stand alone (a 500-job subset read -79.5% against the 2,000-job mean).
    limit = options.options.get("limit")
    references = published() if limit is None else {}
    note = "" if limit is None else f"not compared: a subset (limit={limit})"
    if workers > 1 and experiment.pooled:
        from dlsched.reproduce.prefetch import measure

        return join(experiment.name, measure(experiment, options, workers), references, note)
    return join(experiment.name, experiment.run(options), references, note)


def join(experiment: str, measured: Iterable[Measured],
         references: Mapping[Key, Reference], note: str = "") -> list[ReproduceRow]:
    """Each measured cell beside its reference (``note``, the source of a cell without
    one)."""
    rows = []
    for cell in measured:
        reference = references.get((experiment, cell.case, cell.policy, cell.metric))
        rows.append(ReproduceRow(experiment, cell.case, cell.policy, cell.metric, cell.value,
                                 None if reference is None else reference.value,
                                 note if reference is None else reference.source))
    return rows
