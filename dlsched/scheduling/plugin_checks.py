"""Clear errors for a policy's plugin that returns what the core cannot use.

A policy of one's own (``--policy-file``) is written against the protocols of
``framework.py`` and ``allocation.py``; a plugin that returns a ``bool`` where a ``Status`` is
due, a list where a mapping of assignments is due, or sort keys that cannot be compared would
otherwise fail deep in the core (``'bool' object has no attribute 'ok'``). The checks here run
only once something already failed (the core catches the error and asks them what went
wrong), or wrap a plugin of the policy's own, so built-in policies pay nothing.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dlsched.errors import DlschedError
from dlsched.scheduling.hooks import plugin_label
from dlsched.wording import count_of

if TYPE_CHECKING:
    from dlsched.scheduling.state import CycleState
    from dlsched.workload.job import Job


_BOOL = np.dtype(bool)


class PluginError(DlschedError):
    """A policy's plugin returned something the core cannot use (a bug in the plugin)."""


class CheckedScore:
    """A Score plugin of a policy's own, with its scores checked: one number per candidate
    node (``framework.ScorePlugin``)."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        self.name = getattr(plugin, "name", type(plugin).__name__)

    def score(self, state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> np.ndarray:
        scores = self.plugin.score(state, job, nodes, capacity, need)
        try:
            values = np.asarray(scores, dtype=float)
        except (TypeError, ValueError):
            values = None
        if values is None or values.shape != (len(nodes),):
            raise PluginError(f"Score plugin {plugin_label(self.plugin)}: score() returned "
                              f"{_what(scores)} for {len(nodes)} candidate nodes; it returns "
                              "one number (0..100) per node")
        return values


def unorderable_keys(profile: str, plugin: Any, state: CycleState | None,
                     jobs: Sequence[Job]) -> PluginError | None:
    """Once sorting ``jobs`` by ``plugin.sort_key`` raised ``TypeError``: the error naming two
    jobs whose keys do not compare, or None when that was not the failure (the plugin's own
    code raised it: the original error then stands)."""
    try:
        keys = [plugin.sort_key(state, job) for job in jobs]
    except TypeError:
        return None
    for index in range(1, len(keys)):
        try:
            keys[0] < keys[index]  # noqa: B015 (only whether it raises)
            keys[index] < keys[0]  # noqa: B015
        except TypeError as error:
            return PluginError(
                f"policy {profile}: QueueSort {plugin_label(plugin)}: sort_key gave keys that "
                f"cannot be compared ({error}): {jobs[0].job_id} -> {keys[0]!r}, "
                f"{jobs[index].job_id} -> {keys[index]!r}; give every job a key of the same "
                "shape, e.g. a tuple of numbers ending with job_id")
    return None


def static_key_error(profile: str, plugin: Any, job: Job, error: Exception) -> PluginError:
    """A ``static = True`` QueueSort whose ``sort_key(None, job)`` failed: the core calls a
    static order without a state (the key may depend on the job only)."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    # Only a failure on the missing state is the static flag's; any other is the key's own bug
    # (an AttributeError on JobSpec read as if static were the cause).
    hint = ("a key that reads the state (time, running jobs) needs static = False"
            if "NoneType" in str(error) else "a mistake in sort_key, not in static")
    return PluginError(f"policy {profile}: QueueSort {plugin_label(plugin)} is static (static = "
                       f"True), so the core calls sort_key(None, job), and it raised "
                       f"{type(error).__name__}: {error}{where} (for {job.job_id}); {hint}")


def not_a_status(point: str, plugin: Any, value: Any) -> PluginError:
    method = {"PreFilter": "pre_filter", "Permit": "permit"}.get(point, point.lower())
    return PluginError(f"{point} plugin {plugin_label(plugin)}: {method}() returned "
                       f"{_what(value)}, not a Status (dlsched.scheduling.framework.Status)")


def not_jobs(plugin: Any, nominees: Sequence[Any] | None, error: Exception) -> Exception:
    """The victim search failed on what a PostFilter nominated (``nominees``; None when
    they came lazily and are gone): the error naming the plugin and the first nominee that
    is not a ``Job``; the original error when every nominee is one."""
    from dlsched.workload.job import Job

    wrong = None
    if nominees is not None:
        wrong = next((item for item in nominees if not isinstance(item, Job)), None)
        if wrong is None:
            return error
    label = plugin_label(plugin) if plugin is not None else "?"
    what = (_what(wrong) if wrong is not None
            else f"something that is not a Job ({type(error).__name__}: {error})")
    return PluginError(f"PostFilter plugin {label}: post_filter() nominated {what}; it returns "
                       "running jobs (Job objects of state.snapshot.running), first to evict "
                       "first")


def not_a_mask(plugin: Any, mask: Any, nodes: int) -> PluginError:
    return PluginError(f"Filter plugin {plugin_label(plugin)}: filter() returned {_what(mask)}; "
                       "it returns the boolean numpy mask it was given "
                       f"({count_of(nodes, 'node')}), narrowed")


def checked_mask(plugin: Any, mask: Any, nodes: int) -> np.ndarray:
    """A Filter's result when it is a boolean mask over the cluster's nodes."""
    if type(mask) is np.ndarray and mask.dtype is _BOOL and mask.shape == (nodes,):
        return mask
    raise not_a_mask(plugin, mask, nodes)


def _what(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
