"""What failures cost running jobs: checkpoint stalls, work lost since the last checkpoint,
restarts. The scheduler core owns one ``ResilienceBook`` when a run has failures or
checkpointing; the simulator and the runtime report failures to the core the same way
(``Scheduler.fail_node``), so a failure is an event of the one scheduling cycle.

A job launched at ``t0`` (productive from ``t1 = t0 + restart overhead``) at raw rate ``r``
writes a checkpoint after every ``tau`` seconds of training, each stalling it ``delta``
seconds, so it progresses at ``r tau / (tau + delta)``. A failure at ``t`` keeps the work of
the ``floor((t - t1) / (tau + delta))`` checkpoints completed since ``t1`` and loses the rest
(rates changed mid-run by space sharing are charged at the rate at the failure).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlsched.errors import ConfigError
from dlsched.workload.job import Job, JobSpec

if TYPE_CHECKING:  # dlsched.sim imports the core: no import of it at module level here
    from dlsched.sim.checkpoint import CheckpointPlan
    from dlsched.sim.failures import FailureModel

DAY = 86400.0
MOST_FAILURES_PER_COMMIT = 1e6  # expected failures before a job keeps any work, at most
MOST_SLOWDOWN = 100.0  # expected run time over the failure-free one past which a job crawls
FIELDS = {"restart overhead": "restart overhead (--restart-overhead)",
          "checkpoint interval": "checkpoint interval (--checkpoint)",
          "checkpoint cost": "checkpoint cost (--checkpoint-cost; an LLM job's: its "
                             "checkpoint size over the storage bandwidth)"}


class NeverProgresses(ConfigError):
    """Failures would undo every run of a job before it keeps any work (``_check_progress``)."""


class CrawlWarning(UserWarning):
    """Failures undo so much of a job's work that it is expected to take more than
    ``MOST_SLOWDOWN`` times its failure-free time (``ResilienceBook._check_crawl``)."""


@dataclass(slots=True)
class JobLosses:
    failures: int = 0
    lost_work: float = 0.0
    lost_gpu_seconds: float = 0.0  # GPU time that produced work later lost
    checkpoint_gpu_seconds: float = 0.0  # GPU time stalled writing checkpoints
    restart_gpu_seconds: float = 0.0  # GPU time reloading after failures
    # the current run segment
    segment_work: float = 0.0
    raw_rate: float = 0.0
    interval: float = math.inf
    delta: float = 0.0
    # seconds its kept work took at the raw rates of its closed run segments (``launched``)
    productive: float = 0.0
    resized: bool = False  # it ran at a size other than its request (``launched``)

    def productive_seconds(self, work_now: float) -> float:
        """Seconds the work kept so far took at the raw rates it ran at (no checkpoint stalls,
        restarts or lost work): the useful time of an elastic job's ETTR, whose runs may each
        have a size, hence a rate, of their own (its requested size is only its first; an
        ``llm-jobs`` job's, the smallest that fits: counted at that rate, a job run on 64
        GPUs had 64 times more useful time than time)."""
        last = max(0.0, work_now - self.segment_work) / self.raw_rate if self.raw_rate > 0 else 0.0
        return self.productive + last


class ResilienceBook:
    def __init__(self, plan: CheckpointPlan, model: FailureModel | None,
                 cluster_gpus: int, node_gpus: Sequence[int] | None = None,
                 gpu_node: Sequence[int] | None = None, hot_spares: int = 0) -> None:
        """``node_gpus``/``gpu_node``: the cluster's GPUs per node and node of each GPU (a
        failure takes a whole node: ``exposed_gpus``); None counts only a job's own GPUs.
        ``hot_spares``: nodes held per pool (``repair_wait``)."""
        self.plan = plan
        self.model = model
        self.cluster_gpus = cluster_gpus
        self.node_gpus, self.gpu_node = node_gpus, gpu_node
        self.hot_spares = hot_spares
        self.crawling: set[str] = set()  # jobs warned of (``_check_crawl``), once each
        self.jobs: dict[str, JobLosses] = {}
        self.failures = 0
        self.by_category: dict[str, int] = {}
        self.lost_by_category: dict[str, float] = {}  # GPU-seconds
        # GPU-seconds of up GPUs so far (only an up node can fail: failures drawn on a node
        # in repair or on a held spare are dropped), integrated at each change of ``up_gpus``
        self.exposure = 0.0
        self.up_gpus = float(cluster_gpus)
        self.exposed_until = 0.0

    def of(self, job_id: str) -> JobLosses:
        losses = self.jobs.get(job_id)
        if losses is None:
            losses = self.jobs[job_id] = JobLosses()
        return losses

    # -- rates ------------------------------------------------------------------------------
    def rate_per_gpu_second(self, now: float) -> float:
        """The failure rate the interval rules use: the model's, or, for ``adaptive``, the
        rate observed so far with the model's as a prior worth one failure."""
        prior = self.model.rate_per_gpu_day / DAY if self.model is not None else 0.0
        if self.plan.interval != "adaptive" or prior == 0:
            return prior
        exposure = self.exposure + self.up_gpus * max(0.0, now - self.exposed_until)
        return (self.failures + 1) / (exposure + 1 / prior)

    def exposed_gpus(self, job: Job) -> int:
        """GPUs whose failure stops ``job``: every GPU of the nodes it runs on, since a failure
        takes its whole node down (``sim/failures.FailureProcess``). A 1-GPU job on an 8-GPU
        node is stopped by a failure of any of the 8: its MTBF is 8 times shorter than its own
        GPU's."""
        return self._exposure(job)[1]

    def _exposure(self, job: Job) -> tuple[int, int]:
        """(nodes ``job`` runs on, their GPUs); without the cluster's nodes, its own GPUs."""
        node_gpus, gpu_node = self.node_gpus, self.gpu_node
        if node_gpus is None or gpu_node is None:
            return 0, len(job.allocation)
        nodes = {gpu_node[gpu] for gpu in job.allocation}
        return len(nodes), sum(node_gpus[node] for node in nodes)

    def repair_wait(self, job: Job) -> float:
        """Seconds ``job`` is expected to wait for a repair after each failure, where the
        model knows it: without hot spares, when the cluster's other nodes hold fewer GPUs
        than it runs on, it cannot restart before the node that failed is back: the repair
        times of the failure categories weighted by their rates (the category of a failure
        is drawn in proportion to its rate: ``sim/failures.py``). 0 otherwise: a wait for GPUs
        other jobs hold, or for a repair once a pool's spares ran out, depends on the
        schedule, and a repair that never ends leaves the run stalled (reported as such)."""
        node_gpus, gpu_node, model = self.node_gpus, self.gpu_node, self.model
        if model is None or self.hot_spares or node_gpus is None or gpu_node is None:
            return 0.0
        smallest = min(node_gpus[gpu_node[gpu]] for gpu in job.allocation)
        if len(job.allocation) <= self.cluster_gpus - smallest:
            return 0.0  # the others could hold it: whether they are free is the schedule's
        rate = model.rate_per_gpu_day
        repair = sum(c.rate_per_gpu_day * c.repair_hours for c in model.categories) / rate
        return repair * 3600.0 if math.isfinite(repair) else 0.0

    def job_failure_rate(self, job: Job, now: float) -> float:
        """Failures per second that stop ``job`` (1 / its MTBF): the rule's rate per GPU times
        its ``exposed_gpus``."""
        rate = self.rate_per_gpu_second(now)
        return rate * self.exposed_gpus(job) if rate > 0 else 0.0  # no failures: no node walk

    def gpus_up(self, now: float, gpus: float) -> None:
        """From ``now`` on, ``gpus`` GPUs are up (nodes went down, were repaired, or are held
        as spares): the exposure the ``adaptive`` rule divides its failures by."""
        self.exposure += self.up_gpus * max(0.0, now - self.exposed_until)
        self.exposed_until, self.up_gpus = max(now, self.exposed_until), float(gpus)

    def checkpoint_delta(self, spec: JobSpec) -> float:
        from dlsched.perf.llm.models import BUILTIN_MODELS

        llm = BUILTIN_MODELS.get(spec.model or "")
        if llm is None:
            return self.plan.cost_seconds
        return 14.0 * llm.params / (self.plan.storage_gbps * 1e9)  # bf16 weights + Adam fp32

    def launched(self, job: Job, now: float, raw_rate: float) -> float:
        """A job starts a run segment: its checkpoint interval; returns its effective rate."""
        losses = self.of(job.job_id)
        losses.productive = losses.productive_seconds(job.done_work)  # the segment it closes
        if len(job.allocation) != job.spec.num_gpus:
            losses.resized = True
        losses.segment_work, losses.raw_rate = job.done_work, raw_rate
        if job.spec.ends_at is not None:
            # a service replica: no training state to checkpoint, nothing a failure rolls
            # back (what it served stays served); interval 0 keeps all work done
            losses.interval, losses.delta = 0.0, 0.0
            return raw_rate
        delta = self.checkpoint_delta(job.spec)
        rate = self.job_failure_rate(job, now)
        mtbf = math.inf if rate == 0 else 1.0 / rate
        losses.interval, losses.delta = self.plan.interval_for(delta, mtbf), delta
        return raw_rate * _efficiency(losses.interval, delta)

    # -- events -----------------------------------------------------------------------------
    def settled(self, job: Job, start: float, now: float, gpus: float) -> None:
        """Charge the checkpoint stalls of a run segment that ran from ``start`` to ``now``."""
        losses = self.jobs.get(job.job_id)
        if losses is None or math.isinf(losses.interval) or losses.delta <= 0 or now <= start:
            return
        stalled = (now - start) * losses.delta / (losses.interval + losses.delta)
        losses.checkpoint_gpu_seconds += stalled * gpus

    def committed(self, job: Job, now: float) -> float:
        """Work a failure at ``now`` keeps: that of the last completed checkpoint."""
        losses = self.of(job.job_id)
        if math.isinf(losses.interval):
            return losses.segment_work
        if losses.interval == 0:  # free checkpoints, taken continuously
            return job.work_done(now)
        period = losses.interval + losses.delta
        done = math.floor(max(0.0, now - job.productive_from) / period)
        saved = losses.segment_work + done * losses.interval * losses.raw_rate
        return min(job.work_done(now), saved)

    def failed(self, job: Job, now: float, category: str, restart_overhead: float,
               kept: float | None = None) -> float:
        """Record a failure of a running job; returns the work it keeps: that of its last
        checkpoint, or ``kept`` when it reloads none (``reconfigure.py``)."""
        losses = self.of(job.job_id)
        if kept is None:
            kept = self.committed(job, now)
            if kept <= losses.segment_work:  # rolled back to where this run began
                self._check_progress(job, now, kept, restart_overhead)
            if job.job_id not in self.crawling:
                self._check_crawl(job, now, kept, restart_overhead)
        lost = job.work_done(now) - kept
        gpus = sum(job.shares)
        lost_seconds = lost / losses.raw_rate * gpus if losses.raw_rate > 0 else 0.0
        losses.failures += 1
        losses.lost_work += lost
        losses.lost_gpu_seconds += lost_seconds
        losses.restart_gpu_seconds += restart_overhead * gpus
        self.lost_by_category[category] = self.lost_by_category.get(category, 0.0) + \
            lost_seconds + restart_overhead * gpus
        return kept

    def _check_progress(self, job: Job, now: float, kept: float, restart: float) -> None:
        """Refuse a run in which ``job`` can never keep any work (``NeverProgresses``).

        After a restart the job keeps work only once a checkpoint completes, ``restart +
        interval + delta`` seconds after its launch, or once it finishes, ``restart +
        remaining / (raw rate x efficiency)``; whichever comes first, ``T``. Failures stop it
        as a Poisson process of rate ``lambda`` = the rule's rate per GPU x the GPUs of the
        nodes it runs on (a failure takes a whole node: ``exposed_gpus``), so an attempt gets
        there with probability ``exp(-lambda T)``: ``exp(lambda T) - 1`` failures are expected
        first. Past
        ``MOST_FAILURES_PER_COMMIT`` the run would not end (a failure is a few events)."""
        losses = self.of(job.job_id)
        rate = self.job_failure_rate(job, now)
        work = job.spec.work - kept
        speed = losses.raw_rate * _efficiency(losses.interval, losses.delta)
        finish = work / speed if speed > 0 else math.inf
        parts = {"restart overhead": restart, "checkpoint interval": losses.interval,
                 "checkpoint cost": losses.delta}
        commit = sum(parts.values())  # free checkpoints (interval 0): kept once productive
        exposed = rate * min(commit, restart + finish)
        if exposed <= math.log(MOST_FAILURES_PER_COMMIT):
            return
        name = max(parts, key=lambda key: parts[key])
        raise NeverProgresses(
            f"job {job.job_id} ({self._gpus_text(job)}) can never keep any "
            f"work: it fails every {1 / rate:.3g} s on average, but its first checkpoint "
            f"completes {commit:.3g} s after each restart (restart overhead {restart:g} s + "
            f"checkpoint interval {losses.interval:.3g} s + checkpoint cost "
            f"{losses.delta:.3g} s) and its end {restart + finish:.3g} s after (~e^"
            f"{exposed:.0f} failures expected first); lower the {FIELDS[name]}")

    def _check_crawl(self, job: Job, now: float, kept: float, restart: float) -> None:
        """Warn once (``CrawlWarning``) when ``job`` is expected to take more than
        ``MOST_SLOWDOWN`` times its failure-free time.

        It keeps work once per segment of ``s = interval + cost`` seconds (or, when its end
        comes first or it takes no checkpoint, once it finishes), and each restart costs
        ``R``. With failures a Poisson process of rate ``lambda`` that may strike during a
        restart too, a segment takes ``e^(lambda R) (e^(lambda s) - 1) / lambda`` seconds on
        average (Daly, FGCS 2006, §3: the expected wall time ``M e^(R/M) (e^((tau +
        delta)/M) - 1) T_s / tau`` of a solve of ``T_s`` s, ``M`` = 1 / lambda); over ``s``,
        the expected slowdown. That time is ``1 / lambda`` per failure, so
        ``e^(lambda R) (e^(lambda s) - 1)`` failures are expected per segment; each adds the
        wait ``W`` for a repair where the model knows it (``repair_wait``; the job does not
        run, so cannot fail, meanwhile): a slowdown ``1 + lambda W`` times Daly's. A wait in
        the queue for GPUs other jobs hold comes on top: it is a lower bound."""
        losses = self.of(job.job_id)
        rate = self.job_failure_rate(job, now)
        speed = losses.raw_rate * _efficiency(losses.interval, losses.delta)
        if rate <= 0 or speed <= 0 or losses.interval == 0:
            return  # no failures, no progress to judge, or free checkpoints (nothing lost)
        finish = (job.spec.work - kept) / speed
        segment = min(losses.interval + losses.delta, finish)
        if not segment > 0:
            return
        wait = self.repair_wait(job)
        slowdown = _expected_slowdown(rate, restart, segment) * (1.0 + rate * wait)
        if slowdown <= MOST_SLOWDOWN:
            return
        self.crawling.add(job.job_id)
        from dlsched.perf.llm.models import BUILTIN_MODELS

        cost = ("its checkpoint size over the storage bandwidth: an LLM job's"
                if job.spec.model in BUILTIN_MODELS else "--checkpoint-cost")
        warnings.warn(CrawlWarning(
            f"job {job.job_id} ({self._gpus_text(job)}) crawls: it fails every "
            f"{1 / rate:.3g} s on average and keeps work only every {segment:.3g} s "
            f"(checkpoint interval {losses.interval:.3g} s + cost {losses.delta:.3g} s, or its "
            f"end) after a {restart:g} s restart{_waited(wait)}: expected "
            f"~{slowdown:.3g}x its failure-free time, or more (waits for GPUs other jobs hold "
            f"not counted); lower the checkpoint cost ({cost}), shorten the "
            "checkpoint interval (--checkpoint) or the restart (--restart-overhead), "
            f"{'hold spare nodes (--hot-spares), ' if wait else ''}or "
            "re-plan on the surviving nodes instead of rolling back (--resilience oobleck, "
            "LLM jobs)"), stacklevel=2)

    def _gpus_text(self, job: Job) -> str:
        """'4 GPUs', or '1 GPU on 1 node of 8 GPUs' when failures of the GPUs beside its own
        stop it too (``exposed_gpus``)."""
        gpus = len(job.allocation)
        nodes, exposed = self._exposure(job)
        text = f"{gpus} GPU{'s' if gpus != 1 else ''}"
        if exposed == gpus:
            return text
        return f"{text} on {nodes} node{'s' if nodes != 1 else ''} of {exposed} GPUs"

    def node_failed(self, category: str) -> None:
        self.failures += 1
        self.by_category[category] = self.by_category.get(category, 0) + 1


def _waited(wait: float) -> str:
    """The repair wait a crawl warning counts (``repair_wait``), if any."""
    if wait <= 0:
        return ""
    return (f" and a ~{wait:.3g} s wait for its node's repair (mean repair_hours; the other "
            "nodes cannot hold it)")


def _expected_slowdown(rate: float, restart: float, segment: float) -> float:
    """Expected time to get through ``segment`` failure-free seconds, each failure (rate
    ``rate``) restarting it after ``restart`` seconds, over ``segment`` (Daly 2006, §3)."""
    exponent = rate * (restart + segment)
    if exponent > 700:  # e^700 overflows a float: far past any threshold
        return math.inf
    return math.exp(rate * restart) * math.expm1(rate * segment) / (rate * segment)


def _efficiency(interval: float, delta: float) -> float:
    """Share of running time that trains (``sim.checkpoint.efficiency``)."""
    return 1.0 if math.isinf(interval) or delta <= 0 else interval / (interval + delta)
