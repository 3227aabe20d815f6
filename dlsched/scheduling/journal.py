"""Which running jobs each change of the core's running jobs touched (issue 14).

The core counts the changes to its running jobs (a start, a stop, a new rate, a new attempt
start: ``Scheduler.running_changes``, shown in each snapshot). A plugin that keeps something
per running job across cycles (backfill's running ends) used to look at every running job
again whenever the count moved, O(running jobs) per cycle on a busy cluster. The journal says
which jobs moved it: a reader that last looked at count ``c`` reads the jobs changed since
(``since``) and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dlsched.workload.job import Job


class RunningJournal:
    """The jobs of the core's running-job changes in order, numbered as the count. A change
    that is not told job by job (a re-rating of many jobs at once: ``note_unknown``) makes
    ``since`` answer None for counts before it, as does a count older than the journal
    keeps (``keep`` changes at least).

    ``note`` is the kept list's own ``append`` (two a swap, ~10^6 on a contended run: no
    Python frame each), so the count follows from the list (``count``) and the oldest
    entries go when the count is read or ``trim`` is asked, as many as dropping them at each
    ``note`` would have dropped by then: every answer is the same."""

    def __init__(self, count: int, keep: int = 4096) -> None:
        self._base = count  # the count before the first kept change
        self._unknown = count  # ``since`` answers None below this count
        self._jobs: list[Job | None] = []
        self._keep = keep
        self._most = 2 * keep  # entries held before the oldest are dropped down to ``keep``
        # A change of ``job`` (None: of jobs not told, ``note_unknown``)
        self.note: Callable[[Job | None], None] = self._jobs.append

    @property
    def count(self) -> int:
        """The changes so far (the oldest kept entries dropped first)."""
        jobs = self._jobs
        if len(jobs) > self._most:
            self.trim()
        return self._base + len(jobs)

    def trim(self) -> None:
        """Drop the oldest entries as ``note`` once did, each time it made more than
        ``2 * keep``: down to ``keep``, that is ``2 * keep + 1 - keep`` at a time."""
        jobs, most = self._jobs, self._most
        if len(jobs) > most:
            step = most + 1 - self._keep
            drop = ((len(jobs) - most - 1) // step + 1) * step
            del jobs[:drop]
            self._base += drop

    def note_unknown(self) -> None:
        """A change whose jobs are not told: every reader looks at all running jobs again."""
        self.note(None)
        self._unknown = self.count

    def since(self, count: int) -> Sequence[Job] | None:
        """The jobs of the changes after ``count`` (a job once per change), or None when the
        journal cannot tell them (after ``count``, at or past the last unknown change, the
        kept entries are all jobs)."""
        now = self.count  # (trimmed first)
        if count < self._base or count < self._unknown or count > now:
            return None
        return self._jobs[count - self._base:]  # type: ignore[return-value]
