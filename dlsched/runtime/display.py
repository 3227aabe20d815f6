"""How the CLI shows a job: its status as a person reads it, its events with their times, its
last progress report in words. Everything from the service is escaped (a queue or message with
``[brackets]`` is text, not rich markup)."""

from __future__ import annotations

import shlex
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from dlsched.scheduling.decisions import waiting_reason
from dlsched.wording import count_of

# The retry backoff's reason (runtime/backoff.py): the job failed and waits to be retried.
# A cycle's reason comes tagged with the plugin that gave it (``Status.__str__``), so the
# service stores ``[retry-backoff] backing off after ...``; older rows have no tag.
RETRY_REASON = "backing off after"
RETRY_TAG = "[retry-backoff] "


# A waiting job the last cycle did not try (the REST API says so too: ``waiting_reason``).
WAITING_STATUSES = ("pending", "preempted")


def reason_shown(job: Any) -> str:
    """Why a job waits (or ended), as the CLI and the dashboard show it: its reason, or, for a
    waiting job with none, that the last cycle did not get to it (under Tiresias on 4 GPUs the
    dashboard showed places 6 to 76 with an empty "why it waits"). A reason that only repeats
    the status (the core's ``cancelled``) is not shown: the listing's "pending reason" of a
    cancelled job read "cancelled" beside its status, as if it still waited."""
    if job.pending_reason == job.status:
        return ""
    return waiting_reason(job.pending_reason, job.status in WAITING_STATUSES)


def shown_status(job: Any) -> str:
    """``retrying`` for a job that failed and waits out its backoff (the core keeps it
    ``preempted``, which reads as if the scheduler took its GPUs)."""
    reason = job.pending_reason.removeprefix(RETRY_TAG)
    if job.status == "preempted" and reason.startswith(RETRY_REASON):
        return "retrying"
    return job.status


def gpus_shown(job: Any) -> str:
    """The GPUs a job asks for, or, running at another size (an elastic job resized), the
    GPUs it holds and what it asked: ``4 (asked 1)``."""
    held = getattr(job, "gpus_held", None)
    if held is None or held == job.gpus:
        return str(job.gpus)
    return f"{held} (asked {job.gpus})"


def listed_gpus(job: Any) -> str:
    """The listing's GPUs: ``gpus_shown``, with each worker's share when below a whole GPU
    (``0.5``, ``2 x 0.3``) or its MIG instance (``MIG 3g.20gb``); a half-GPU job read "1",
    as if it held the whole GPU."""
    profile = getattr(job, "mig_profile", None)
    if profile:
        return f"MIG {profile}"
    share = getattr(job, "gpu_share", 1.0)
    if share >= 1.0:
        return gpus_shown(job)
    held = getattr(job, "gpus_held", None)
    workers = job.gpus if held is None else held
    return f"{share:g}" if workers == 1 else f"{workers} x {share:g}"


_PER_WORKER = (("gpu_share", "share", 1.0), ("gpu_memory_gb", "GiB GPU memory", 0.0),
               ("cpus_per_gpu", "CPUs", 0.0), ("memory_gb_per_gpu", "GiB memory", 0.0))


def asked_text(job: Any) -> str:
    """``gpus_shown``, an elastic job's range and what each worker asks beyond a whole GPU:
    ``2 (asked 1), elastic 1..4`` or ``1, MIG 3g.20gb`` or ``2, per worker: share 0.5, 8 CPUs``
    (a resized job read "GPUs 1" while it ran on 2)."""
    parts = [gpus_shown(job)]
    low, high = getattr(job, "min_gpus", None), getattr(job, "max_gpus", None)
    if low is not None or high is not None:
        parts.append(f"elastic {low or 1}..{high if high is not None else job.gpus}")
    asks = worker_asks(job)
    if asks:
        parts.append(asks)
    cap = getattr(job, "max_per_node", 0)
    if cap:
        group = getattr(job, "group", None)
        parts.append(f"at most {cap} per node" + (f" of group {group}" if group else ""))
    return ", ".join(parts)


def worker_asks(job: Any) -> str:
    """What each worker asks beyond a whole GPU: ``MIG 3g.20gb`` or ``per worker: share 0.5,
    8 CPUs`` ("" for none); the dashboard's job page showed a half-GPU job as "GPUs 1"."""
    parts = [f"MIG {job.mig_profile}"] if getattr(job, "mig_profile", None) else []
    asks = [f"{value:g} {what}" if what != "share" else f"share {value:g}"
            for name, what, default in _PER_WORKER
            if (value := getattr(job, name, default)) != default
            and not (name == "gpu_share" and getattr(job, "mig_profile", None))]
    if asks:
        parts.append("per worker: " + ", ".join(asks))
    return ", ".join(parts)


def clock(timestamp: float) -> str:
    """Local date and time to the second, e.g. ``2026-12-03 09:41:07``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def run_time(seconds: float | None) -> str:
    """A run time or age to the second, in two units at most: ``12 s``, ``3 min 5 s``,
    ``2 h 10 min``, ``1 d 4 h`` ("" for none); the dashboard's and ``dlsched jobs ID``'s."""
    if seconds is None:
        return ""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def attempt_line(attempt: Any) -> str:
    """One attempt of ``dlsched jobs ID``: ``1  2026-12-07 21:48:45  ran 12 s  failed  rank 0
    exited with code 3``, or ``... running`` while it runs."""
    if attempt.ended_at is None:
        return f"{attempt.number:>3}  {clock(attempt.started_at)}  running"
    ran = run_time(max(0.0, attempt.ended_at - attempt.started_at))
    parts = [f"{attempt.number:>3}", clock(attempt.started_at), f"ran {ran}",
             attempt.outcome or "ended", attempt.message]
    return "  ".join(part for part in parts if part)


def progress_text(progress: dict[str, Any], now: float | None = None) -> str:
    """A progress report in words: ``step 120, 35.2 samples/s on 2 workers, loss=0.31
    (4 s ago)``."""
    parts = []
    if progress.get("step") is not None:
        parts.append(f"step {progress['step']}")
    speed = progress.get("samples_per_second")
    if speed is not None:
        workers = progress.get("world_size")
        on = f" on {count_of(workers, 'worker')}" if workers else ""
        parts.append(f"{speed:.4g} samples/s{on}")
    metrics = progress.get("metrics") or {}
    parts += [f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in
              sorted(metrics.items())]
    text = ", ".join(parts) or "(empty report)"
    reported = progress.get("time")
    if isinstance(reported, int | float):
        ago = max(0.0, (time.time() if now is None else now) - reported)
        text += f" ({ago:.0f} s ago, {clock(reported)})"
    return text


def command_text(command: list[str]) -> str:
    """A job's argv as a shell line that runs it again: joined by spaces, ``python -c 'import
    sys; sys.exit(3)'`` read ``python -c import sys; sys.exit(3)``, three commands."""
    return shlex.join(command)


def print_job(out: Console, job: Any, events: list[Any], last: int = 10) -> None:
    out.print(f"[bold]{escape(job.id)}[/] {escape(job.name or '')}  status "
              f"[bold]{shown_status(job)}[/]  queue {escape(job.queue)}  GPUs "
              f"{escape(asked_text(job))}  attempts {job.attempts}")
    out.print(escape(f"submitted: {clock(job.submitted_at)}"
                     + (f", finished: {clock(job.finished_at)}" if job.finished_at else "")))
    out.print(escape(f"command: {command_text(job.command)}"))
    if job.queue_position is not None:
        out.print(f"position in queue: {job.queue_position}")
    if reason_shown(job):
        out.print(escape(f"why: {reason_shown(job)}"))
    if job.allocation:
        out.print("GPUs: " + ", ".join(f"{escape(s.node)}:{s.index}" for s in job.allocation))
    if job.last_progress:
        out.print(escape(f"last progress: {progress_text(job.last_progress)}"))
    history = getattr(job, "attempt_history", None) or []
    if history:
        shown = "" if len(history) <= last else f"last {last} of "
        out.print(f"attempts ({shown}{len(history)}):")
    for attempt in history[-last:]:
        out.print(escape(f"  {attempt_line(attempt)}"))
    if events:
        out.print(f"events (last {min(last, len(events))} of {len(events)}):")
    for event in events[-last:]:
        out.print(escape(f"  {clock(event.time)}  {event.kind:>10}  {event.message}"))


def shared_use(cluster: Any) -> str:
    """GPUs in use beside the allocation where they differ: a GPU partly used (a fraction, a
    MIG instance) is in use with less than one GPU allocated."""
    if not cluster.gpus_partly_used and not cluster.mig_slices_used:
        return ""
    mig = (f", MIG slices {cluster.mig_slices_used}/{cluster.mig_slices}"
           if cluster.mig_slices else "")
    return f" ({cluster.gpus_in_use} in use, {cluster.gpus_partly_used} partly{mig})"
