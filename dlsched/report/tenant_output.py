"""The run's audit files, beside ``jobs.csv`` (issue 19). Every run: ``segments.csv``, one row
per run of a job (start, end, nodes, GPUs, and with tenants its cluster queue, flavor and quota
request). With ``--tenants`` also:

- ``evictions.csv``: time, victim, its queue and flavor, preemptor, its queue, and the reason
  in Kueue's words (``InClusterQueue``, ``InCohortReclamation``,
  ``InCohortReclaimWhileBorrowing``, ``InCohortFairSharing``), and who decided it
  (``decided_by``: ``tenants``, the tenant layer's victim search, or ``policy``, the wrapped
  policy's own preemption inside the queue, logged ``InClusterQueue``);
- ``queue_usage.csv``: each cluster queue's usage per (flavor, resource) over time, a row
  whenever it changes, with its nominal quota and limits (rebuilt from the segments);
- ``pending_reasons.csv``: each waiting job's reason per flavor, a row whenever it changes,
  ``NO_NODE_FITS`` and ``POLICY_HOLDS`` counting as one (the row names the one met first:
  the walk by groups passes over such jobs without telling which; docs/tenancy.md) (job id
  empty: the rest of a cluster queue was closed for that cycle with that reason);
- ``tenant_quotas.csv``: the quota tree (queues and cohorts, parent, per flavor and resource:
  nominal, borrowing and lending limits), so the files alone can be checked
  (``benchmarks/check_tenancy_invariants.py``);
- ``never_admitted.csv``: jobs that can never be admitted (beyond their queue's limits).

Tables end with the run's identity columns, as ``jobs.csv`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.report.output import _write_columns, _write_csv
from dlsched.scheduling.scheduler import Scheduler
from dlsched.scheduling.segments import Segment
from dlsched.workload.job import JobSpec

if TYPE_CHECKING:  # the tenant layer is imported by runs with tenants only
    from dlsched.tenancy.config import TenantConfig
    from dlsched.tenancy.plugins import TenantAdmission

SEGMENT_COLUMNS = ("job_id", "queue", "cluster_queue", "flavor", "start", "end", "nodes",
                   "num_gpus", "gpu_ids", "gpu_share", "gpu", "cpu", "memory", "gpu_memory")
EVICTION_COLUMNS = ("time", "victim", "victim_cluster_queue", "victim_flavor", "preemptor",
                    "preemptor_cluster_queue", "reason", "decided_by")
USAGE_COLUMNS = ("time", "cluster_queue", "flavor", "resource", "used", "nominal",
                 "borrowing_limit", "lending_limit", "borrowed")
PENDING_COLUMNS = ("time", "job_id", "cluster_queue", "flavor", "reason", "detail")
QUOTA_COLUMNS = ("node", "kind", "parent", "flavor", "resource", "nominal", "borrowing_limit",
                 "lending_limit", "weight")
NEVER_COLUMNS = ("job_id", "cluster_queue", "reason")
# the files only a run with tenants writes
TENANT_FILES = ("evictions.csv", "queue_usage.csv", "pending_reasons.csv", "tenant_quotas.csv",
                "never_admitted.csv")


def write_audit(core: Scheduler, admission: TenantAdmission | None, out_dir: Path,
                identity: Mapping[str, Any], specs: Mapping[str, JobSpec] | None = None
                ) -> list[tuple[str, str, str]]:
    """Write the audit files; returns the jobs that can never be admitted
    (job id, cluster queue, reason), for the caller's warning. ``specs``: each job's spec by
    id, for the jobs that left the core's table during the run (``SimConfig.keep_finished=
    False``; the trace's, ``spec_index``); without it every job must still be in the core."""
    if admission is None:
        _write_columns(out_dir / "segments.csv", SEGMENT_COLUMNS,
                       plain_segment_columns(core, specs), identity)
        for name in TENANT_FILES:  # an earlier run's with --tenants in the same folder
            (out_dir / name).unlink(missing_ok=True)
        return []
    from dlsched.tenancy.audit import never_admitted

    rows = segment_rows(core, admission, specs)
    _write(out_dir / "segments.csv", SEGMENT_COLUMNS, rows, identity)
    audit, config = admission.audit, admission.config
    _write(out_dir / "evictions.csv", EVICTION_COLUMNS,
           [(e.time, e.victim, e.victim_queue, e.victim_flavor, e.preemptor, e.preemptor_queue,
             e.reason, e.decided_by) for e in audit.evictions], identity)
    _write(out_dir / "queue_usage.csv", USAGE_COLUMNS, usage_rows(rows, config), identity)
    _write(out_dir / "pending_reasons.csv", PENDING_COLUMNS,
           [(p.time, p.job_id, p.cluster_queue, p.flavor, p.reason.name, p.detail)
            for p in audit.pending], identity)
    _write(out_dir / "tenant_quotas.csv", QUOTA_COLUMNS, quota_rows(config), identity)
    waiting = [j for j in core.jobs.values() if j.status.is_waiting]
    queues = config.cluster_queues
    found = never_admitted(audit.never, ((j.job_id, admission.queue_of(j), admission.request(j))
                                         for j in waiting),
                           lambda cq: cq in queues and len(queues[cq].flavors) == 1)
    ids = {j.job_id for j in waiting}
    never = sorted((job_id, cq, reason.name) for job_id, (cq, reason) in found.items()
                   if job_id in ids)
    _write(out_dir / "never_admitted.csv", NEVER_COLUMNS, never, identity)
    return never


def spec_index(specs: Iterable[JobSpec]) -> dict[str, JobSpec]:
    """Each spec by job id (a trace's jobs), for ``write_audit``."""
    return {spec.job_id: spec for spec in specs}


def _spec_of(core: Scheduler, specs: Mapping[str, JobSpec] | None
             ) -> Callable[[str], JobSpec]:
    """A job's spec by id: the core's job when it is still there, else ``specs``'."""
    jobs = core.jobs
    if specs is None:
        return lambda job_id: jobs[job_id].spec

    def spec_of(job_id: str) -> JobSpec:
        job = jobs.get(job_id)
        return job.spec if job is not None else specs[job_id]

    return spec_of


def segment_rows(core: Scheduler, admission: TenantAdmission | None,
                 specs: Mapping[str, JobSpec] | None = None) -> list[tuple]:
    """One row per segment (``SEGMENT_COLUMNS``); ``specs`` as for ``write_audit``."""
    cluster, out = core.cluster, []
    flavors = admission.audit.flavors if admission is not None else {}
    node_name = [node.name for node in cluster.nodes]
    gpu_node_name = [node_name[n] for n in cluster.gpu_node.tolist()]  # read per GPU below
    from dlsched.tenancy.config import RESOURCES
    from dlsched.tenancy.quota import request_of

    spec_of, no_request = _spec_of(core, specs), (None,) * len(RESOURCES)
    for seg in core.segments.all():
        spec = spec_of(seg.job_id)
        cq, flavor = flavors.get((seg.job_id, seg.start), ("", ""))
        if admission is not None and not cq:
            cq = admission.queue_named(spec.queue)
        gpus = seg.gpus
        if len(gpus) == 1:
            nodes, gpu_ids = gpu_node_name[gpus[0]], str(gpus[0])
        else:
            nodes = ";".join(sorted({gpu_node_name[g] for g in gpus}))
            gpu_ids = ";".join(map(str, gpus))
        if admission is not None:
            asked = request_of(spec)
            request = tuple(asked.get(r) for r in RESOURCES)
        else:
            request = no_request
        out.append((seg.job_id, spec.queue, cq, flavor, seg.start, seg.end, nodes,
                    len(gpus), gpu_ids, _share(seg), *request))
    return out


def plain_segment_columns(core: Scheduler, specs: Mapping[str, JobSpec] | None = None
                          ) -> list[list[Any]]:
    """``segment_rows`` without tenants, as columns (``SEGMENT_COLUMNS`` order), read from
    the run segments' columns; ``specs`` as for ``write_audit``."""
    node_name = [node.name for node in core.cluster.nodes]
    gpu_node_name = [node_name[n] for n in core.cluster.gpu_node.tolist()]
    ids, starts, ends, gpus, shares = core.segments.columns()
    jobs, known = core.jobs, specs if specs is not None else {}
    queues = [jobs[job_id].spec.queue if job_id in jobs else known[job_id].queue
              for job_id in ids]  # (``_spec_of`` inline: one call less per segment)
    nodes = [gpu_node_name[g[0]] if len(g) == 1 else ";".join(sorted({gpu_node_name[x]
                                                                       for x in g}))
             for g in gpus]
    gpu_ids = [str(g[0]) if len(g) == 1 else ";".join(map(str, g)) for g in gpus]
    blank, none = [""] * len(ids), [None] * len(ids)
    requests = [none] * (len(SEGMENT_COLUMNS) - 10)  # gpu .. gpu_memory: no tenants, empty
    return [ids, queues, blank, blank, starts, ends, nodes,
            [len(g) for g in gpus], gpu_ids, shares, *requests]


def _share(seg: Segment) -> float:
    return float(seg.shares[0]) if seg.shares else 1.0


def usage_rows(segments: Sequence[tuple], config: TenantConfig) -> list[tuple]:
    """Each (queue, flavor, resource)'s usage after every time it changes (ends before
    starts at the same time)."""
    from dlsched.tenancy.config import RESOURCES, Quota

    events: list[tuple[float, int, str, str, str, float]] = []
    for row in segments:
        cq, flavor, start, end = row[2], row[3], row[4], row[5]
        if not flavor:
            continue
        for resource, amount in zip(RESOURCES, row[10:10 + len(RESOURCES)], strict=True):
            if amount:
                events.append((start, 1, cq, flavor, resource, amount))
                if end is not None:
                    events.append((end, 0, cq, flavor, resource, -amount))
    events.sort(key=lambda e: (e[0], e[1]))
    used: dict[tuple[str, str, str], float] = {}
    out: list[tuple] = []
    index = 0
    while index < len(events):
        time, changed = events[index][0], []
        while index < len(events) and events[index][0] == time:
            _, _, cq, flavor, resource, delta = events[index]
            key = (cq, flavor, resource)
            used[key] = used.get(key, 0.0) + delta
            changed.append(key)
            index += 1
        for key in dict.fromkeys(changed):
            quota = config.cluster_queues[key[0]].quotas.get((key[1], key[2]), Quota(0.0))
            value = round(used[key], 9)
            out.append((time, *key, value, quota.nominal, quota.borrowing_limit,
                        quota.lending_limit, max(0.0, value - quota.nominal)))
    return out


def quota_rows(config: TenantConfig) -> list[tuple]:
    out: list[tuple] = []
    for cq in config.cluster_queues.values():
        out += _quota_rows(cq.name, "cluster_queue", cq.cohort, cq.quotas, cq.weight)
        if not cq.quotas:
            out.append((cq.name, "cluster_queue", cq.cohort, "", "", 0.0, None, None, cq.weight))
    for cohort in config.cohorts.values():
        rows = _quota_rows(cohort.name, "cohort", cohort.parent, cohort.quotas, cohort.weight)
        out += rows or [(cohort.name, "cohort", cohort.parent, "", "", 0.0, None, None,
                         cohort.weight)]
    cohorts = set(config.cohorts)
    for cq in config.cluster_queues.values():  # cohorts named only by a queue
        if cq.cohort and cq.cohort not in cohorts:
            cohorts.add(cq.cohort)
            out.append((cq.cohort, "cohort", None, "", "", 0.0, None, None, 1.0))
    return out


def _quota_rows(name: str, kind: str, parent: str | None, quotas: Mapping, weight: float
                ) -> list[tuple]:
    return [(name, kind, parent, flavor, resource, q.nominal, q.borrowing_limit,
             q.lending_limit, weight) for (flavor, resource), q in quotas.items()]


def _write(path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]],
           identity: Mapping[str, Any]) -> None:
    """The same bytes as ``csv.writer`` with each value as ``output._cell`` formats it (None
    empty, floats ``%.6f``), written column by column (``output._write_csv``)."""
    _write_csv(path, columns, [tuple(row) for row in rows], identity)
