"""Kubernetes jobs and Kueue workloads exported as JSON (format ``kubernetes-json``), for
what-if replay (docs/what-if.md).

Write the file with ``kubectl get jobs -A -o json > jobs.json`` (batch/v1 ``Job``s) or
``kubectl get workloads.kueue.x-k8s.io -A -o json > workloads.json`` (Kueue ``Workload``s);
a ``List`` (``{"items": [...]}``) or a JSON array of such objects, mixed kinds allowed.

- id: ``namespace/name``; submission: ``metadata.creationTimestamp`` (RFC 3339).
- GPUs: per pod the sum of its containers' ``resources.limits`` (else ``requests``)
  ``nvidia.com/gpu``, times the pods: a Job's ``spec.parallelism`` (default 1), a Workload's
  podSets' ``count``. Type: the pod template's ``nodeSelector`` ``nvidia.com/gpu.product``.
  A job whose one pod asks for one MIG instance instead (``nvidia.com/mig-3g.20gb: 1``) is a
  MIG job of that profile; several instances are left out and counted.
- run time: a Job from ``status.startTime`` to ``status.completionTime`` (or to its
  ``Failed`` condition); a Workload from its ``Admitted`` (else ``QuotaReserved``) condition
  to its ``Finished`` condition (``lastTransitionTime``).
- queue: the Job's ``kueue.x-k8s.io/queue-name`` label (else its namespace); a Workload's
  ``spec.queueName``.
- anti-affinity: a Job whose pod template requires (``podAntiAffinity.
  requiredDuringSchedulingIgnoredDuringExecution``) no two pods of its own labels on one node
  (``topologyKey: kubernetes.io/hostname``, a ``labelSelector`` of ``matchLabels`` its pods
  carry) gets ``max_per_node`` = its GPUs per pod (one pod per node) in the group named by that
  selector (``k8s:app=x``), shared with every Job selecting the same labels. Other terms
  (expressions, other topology keys, preferences, spread constraints) are not modelled.

Unfinished, never started and GPU-less objects are left out and counted. A bad value is an
error naming the file, the line and the field (``items[3].status.startTime``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dlsched.errors import InputError, InputLocation
from dlsched.mig.profiles import UnknownMigProfile, profile_share
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    JSON_EMPTY,
    DropRow,
    ReaderOptions,
    RowContext,
    collect,
    first_line,
    register_reader,
)
from dlsched.workload.readers.recorded import Recorded
from dlsched.workload.trace import Trace

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-"  # the device plugin's "mixed" strategy: nvidia.com/mig-3g.20gb
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRODUCT = "nvidia.com/gpu.product"
HOSTNAME = "kubernetes.io/hostname"  # the topology key of "one per node"
KINDS = ("Job", "Workload")


@dataclass
class ItemContext(RowContext):
    """One object of the list: ``row`` holds its fields by key path (``status.startTime``),
    ``lines`` each one's line; errors name ``items[i].FIELD``."""

    prefix: str = ""
    item: Mapping[str, Any] = field(default_factory=dict)
    lines: Mapping[str, int] = field(default_factory=dict)

    def where(self, name: str | None = None) -> InputLocation:
        path = f"{self.prefix}.{name}" if name else self.prefix
        return InputLocation(self.path, self._line(path), path)

    def _line(self, path: str) -> int:
        while path and path not in self.lines:
            path = path[:max(path.rfind("."), path.rfind("["), 0)]
        return self.lines.get(path, self.line)

    def get(self, dotted: str) -> Any:
        value: Any = self.item
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def time(self, dotted: str, value: Any = None) -> float:
        raw = self.get(dotted) if value is None else value
        if not isinstance(raw, str):
            raise self.fail(dotted, "missing time" if raw is None else f"not a time: {raw!r}")
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise self.fail(dotted, f"not an RFC 3339 time: {raw!r}") from None
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _gpus_per_pod(ctx: ItemContext, pod_spec: Any, where: str) -> int:
    """The GPUs one pod of ``pod_spec`` (a pod template's ``spec``, at ``where``) asks for."""
    containers = pod_spec.get("containers") if isinstance(pod_spec, Mapping) else None
    if not isinstance(containers, list):
        raise ctx.fail(f"{where}.containers", "expected a list of containers")
    total = 0
    for index, container in enumerate(containers):
        resources = (container.get("resources") or {}) if isinstance(container, dict) else {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        which = "limits" if GPU in limits else "requests"
        amount = (limits if which == "limits" else requests).get(GPU, 0)
        total += _count(ctx, f"{where}.containers[{index}].resources.{which}.{GPU}", amount)
    return total


def _migs_per_pod(ctx: ItemContext, pod_spec: Any, where: str) -> dict[str, int]:
    """The MIG instances one pod asks for, by profile (``nvidia.com/mig-3g.20gb: 1`` in a
    container's limits, else requests)."""
    containers = pod_spec.get("containers") if isinstance(pod_spec, Mapping) else None
    found: dict[str, int] = {}
    for index, container in enumerate(containers if isinstance(containers, list) else ()):
        resources = (container.get("resources") or {}) if isinstance(container, dict) else {}
        for which in ("limits", "requests"):
            asked = resources.get(which) or {}
            migs = {k: v for k, v in asked.items() if isinstance(k, str) and k.startswith(MIG)}
            for key, amount in migs.items():
                profile = key[len(MIG):]
                path = f"{where}.containers[{index}].resources.{which}.{key}"
                try:
                    profile_share(profile)
                except UnknownMigProfile as exc:
                    raise ctx.fail(path, str(exc)) from None
                found[profile] = found.get(profile, 0) + _count(ctx, path, amount)
            if migs:
                break
    return found


def _mig_spec(migs: dict[str, int]) -> dict[str, Any]:
    """A job that asks for MIG instances only: one worker on one instance is replayed as a
    MIG job (docs/mig.md); more are left out and counted."""
    if sum(migs.values()) != 1:
        raise DropRow("MIG instances for several workers (one per job is modelled)")
    (profile,) = (p for p, n in migs.items() if n)
    return {"mig_profile": profile, "gpu_share": profile_share(profile)}


def _anti_affinity(template: Any, gpus_per_pod: int) -> tuple[str | None, int]:
    """(group, max_per_node) for a pod template that keeps its own pods one per node (the
    module's docstring); (None, 0) otherwise."""
    pod = template.get("spec") if isinstance(template, Mapping) else None
    affinity = pod.get("affinity") if isinstance(pod, Mapping) else None
    anti = affinity.get("podAntiAffinity") if isinstance(affinity, Mapping) else None
    terms = (anti.get("requiredDuringSchedulingIgnoredDuringExecution")
             if isinstance(anti, Mapping) else None)
    metadata = template.get("metadata") if isinstance(template, Mapping) else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    if not isinstance(terms, list) or not isinstance(labels, Mapping) or gpus_per_pod < 1:
        return None, 0
    for term in terms:
        if not isinstance(term, Mapping) or term.get("topologyKey") != HOSTNAME:
            continue
        selector = term.get("labelSelector")
        match = selector.get("matchLabels") if isinstance(selector, Mapping) else None
        if (isinstance(match, Mapping) and match and not selector.get("matchExpressions")
                and all(labels.get(key) == value for key, value in match.items())):
            pairs = ",".join(f"{key}={value}" for key, value in sorted(match.items()))
            return f"k8s:{pairs}", gpus_per_pod
    return None, 0


def _product(pod_spec: Any) -> Any:
    """The GPU product a pod template selects (``nodeSelector``), if any."""
    selector = pod_spec.get("nodeSelector") if isinstance(pod_spec, Mapping) else None
    return selector.get(PRODUCT) if isinstance(selector, Mapping) else None


def _count(ctx: ItemContext, where: str, amount: Any) -> int:
    if isinstance(amount, bool):  # float(True) is 1.0: JSON's true is no count
        raise ctx.fail(where, f"not a GPU count: {amount!r}")
    try:
        value = float(amount)
    except (TypeError, ValueError):
        raise ctx.fail(where, f"not a GPU count: {amount!r}") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ctx.fail(where, f"not a GPU count: {amount!r}")
    return int(value)


def _condition(ctx: ItemContext, *kinds: str) -> tuple[float, str] | None:
    """The time of the first true condition of these kinds, and the field it was read from."""
    conditions = ctx.get("status.conditions") or []
    for kind in kinds:
        for index, condition in enumerate(conditions):
            if isinstance(condition, dict) and condition.get("type") == kind and str(
                    condition.get("status", "True")) == "True":
                where = f"status.conditions[{index}].lastTransitionTime"
                return ctx.time(where, condition.get("lastTransitionTime")), where
    return None


def _check_order(ctx: ItemContext, start: tuple[float, str], end: tuple[float, str]) -> None:
    """An end before the start is a bad value, not a job that ran 0 seconds."""
    if end[0] < start[0]:
        raise ctx.fail(end[1], f"before {start[1]}")


def _job(ctx: ItemContext, recorded: Recorded) -> JobSpec:
    spec = "spec.template.spec"
    pods = ctx.get("spec.parallelism")
    pods = 1 if pods is None else _count(ctx, "spec.parallelism", pods)
    start = ctx.get("status.startTime")
    if start is None:
        raise DropRow("never started")
    end = ctx.get("status.completionTime")
    if end is not None:
        ended = ctx.time("status.completionTime"), "status.completionTime"
    else:
        failed = _condition(ctx, "Failed")
        if failed is None:
            raise DropRow("not finished")
        ended = failed
    started = ctx.time("status.startTime"), "status.startTime"
    _check_order(ctx, started, ended)
    labels = ctx.get("metadata.labels") or {}
    queue = labels.get(QUEUE_LABEL) or ctx.get("metadata.namespace") or "default"
    pod = ctx.get(spec)
    per_pod = _gpus_per_pod(ctx, pod, spec)
    migs = {} if per_pod else {k: v * pods for k, v in _migs_per_pod(ctx, pod, spec).items()}
    job = _spec(ctx, pods * per_pod, started[0], ended[0], str(queue), _product(pod),
                recorded, migs)
    group, per_node = _anti_affinity(ctx.get("spec.template"), per_pod)
    return replace(job, group=group, max_per_node=per_node) if per_node else job


def _workload(ctx: ItemContext, recorded: Recorded) -> JobSpec:
    pod_sets = ctx.get("spec.podSets") or []
    gpus = 0
    kind = None
    migs: dict[str, int] = {}
    if not isinstance(pod_sets, list):
        raise ctx.fail("spec.podSets", "expected a list")
    for index, pod_set in enumerate(pod_sets):
        where = f"spec.podSets[{index}]"
        if not isinstance(pod_set, dict):
            raise ctx.fail(where, "expected an object")
        pod = (pod_set.get("template") or {}).get("spec") or {}
        count = _count(ctx, f"{where}.count", pod_set.get("count", 1))
        gpus += count * _gpus_per_pod(ctx, pod, f"{where}.template.spec")
        for profile, n in _migs_per_pod(ctx, pod, f"{where}.template.spec").items():
            migs[profile] = migs.get(profile, 0) + count * n
        kind = kind or _product(pod)
    finished = _condition(ctx, "Finished")
    if finished is None:
        raise DropRow("not finished")
    admitted = _condition(ctx, "Admitted", "QuotaReserved")
    if admitted is None:
        raise DropRow("never started")
    _check_order(ctx, admitted, finished)
    return _spec(ctx, gpus, admitted[0], finished[0], str(ctx.get("spec.queueName") or
                                                          "default"), kind, recorded,
                 {} if gpus else migs)


def _spec(ctx: ItemContext, gpus: int, start: float, end: float, queue: str,
          kind: Any, recorded: Recorded, migs: dict[str, int]) -> JobSpec:
    if gpus == 0 and not any(migs.values()):
        raise DropRow("no GPUs")
    mig = _mig_spec(migs) if gpus == 0 else {}
    submit = ctx.time("metadata.creationTimestamp")
    if end <= start:
        raise DropRow("ran 0 seconds")
    name = ctx.get("metadata.name")
    if not isinstance(name, str) or not name:
        raise ctx.fail("metadata.name", "missing name")
    namespace = ctx.get("metadata.namespace") or "default"
    recorded.add(f"{namespace}/{name}", min(submit, start), start, end)
    return JobSpec(job_id=f"{namespace}/{name}", submit_time=min(submit, start),
                   num_gpus=gpus or 1, work=end - start, queue=queue,
                   gpu_types=(str(kind),) if kind else (), **mig)


def _build(ctx: RowContext, recorded: Recorded) -> JobSpec:
    assert isinstance(ctx, ItemContext)
    kind = ctx.get("kind")
    if kind == "Job":
        return _job(ctx, recorded)
    if kind == "Workload":
        return _workload(ctx, recorded)
    raise DropRow(f"not a Job or Workload (kind {kind!r})")


class KubernetesReader:
    name = "kubernetes-json"
    columns: frozenset[str] = frozenset()

    @staticmethod
    def sniff(path: Path) -> bool:
        return first_line(path).lstrip().startswith(("{", "["))

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        recorded = Recorded()
        collector = collect(path, options, self._items(path),
                            functools.partial(_build, recorded=recorded), gpu_field="",
                            id_field="metadata.name", empty=JSON_EMPTY)
        return recorded.noted(collector.trace(path.stem, self.name), path)

    @staticmethod
    def _items(path: Path) -> Iterator[ItemContext]:
        from dlsched.yamlinput import load_yaml_file

        data, src = load_yaml_file(path)  # JSON is YAML: this gives each key's line
        prefix, items = ("items", data.get("items")) if isinstance(data, dict) else ("", data)
        if not isinstance(items, list):
            raise InputError(InputLocation(str(path), 1), "expected a Kubernetes List "
                             "({\"items\": [...]}) or a JSON array of Jobs or Workloads")
        for index, item in enumerate(items):
            where = f"{prefix}[{index}]"
            if not isinstance(item, dict):
                yield ItemContext(str(path), src.line(where), {}, "expected an object", None,
                                  prefix=where)
                continue
            yield ItemContext(str(path), src.line(where), {}, prefix=where, item=item,
                              lines=src.lines)


register_reader(KubernetesReader())
