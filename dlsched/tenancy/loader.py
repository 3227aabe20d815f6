"""Tenant configuration from one YAML file (schema in docs/tenancy.md).

Every mistake raises ``InputError`` naming the file, line and key path
(``cluster_queues[1].quotas.a100.gpu.lending_limit``), with the parsing helpers of the cluster
loader. Consistency rules (Kueue's ClusterQueue validation): a queue with a borrowing or lending
limit must be in a cohort; a lending limit may not exceed the nominal quota; flavors, cohorts
and cluster queues referred to must exist; cohorts may not form a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlsched.cluster.loader import (
    YamlSource,
    name_check,
    number_check,
    parse_yaml,
    unknown_key_message,
)
from dlsched.errors import InputError, InputLocation
from dlsched.tenancy import config as c
from dlsched.textinput import read_text

_NONNEG = number_check(0, False)
_POSITIVE = number_check(0, False, above=True)
# Kueue's own objects (ClusterQueue, ResourceFlavor, ... manifests) given as a tenant file
_MANIFEST = re.compile(r"^apiVersion:", re.MULTILINE)
_KUEUE_OBJECTS = ("Kubernetes manifests are not read as tenants: write their quotas in "
                  "dlsched's tenant file (flavors, cluster_queues, cohorts, local_queues; "
                  "docs/tenancy.md, 'From Kueue's objects')")


def load_tenants(path: str | Path) -> c.TenantConfig:
    return parse_tenants(read_text(path), str(path))


def parse_tenants(text: str, source: str = "<string>") -> c.TenantConfig:
    try:
        doc, src = parse_yaml(text, source)
    except InputError:
        if _MANIFEST.search(text):
            raise InputError(InputLocation(source, 1, None), _KUEUE_OBJECTS) from None
        raise
    if isinstance(doc, dict) and "apiVersion" in doc:
        raise src.error("apiVersion", f"a Kubernetes object (kind {doc.get('kind')}): "
                        + _KUEUE_OBJECTS)
    top = _mapping(doc if doc is not None else {}, "", src, (
        "flavors", "cluster_queues", "cohorts", "local_queues", "fair_sharing", "requeue"))
    flavors = _named(top.get("flavors", []), "flavors", src,
                     lambda raw, at: _flavor(raw, at, src))
    if not flavors:
        raise src.error("flavors" if "flavors" in top else "", "give at least one flavor")
    cohorts = _named(top.get("cohorts", []), "cohorts", src,
                     lambda raw, at: _cohort(raw, at, src, flavors))
    queues = _named(top.get("cluster_queues", []), "cluster_queues", src,
                    lambda raw, at: _cluster_queue(raw, at, src, flavors))
    local = _named(top.get("local_queues", []), "local_queues", src,
                   lambda raw, at: _local_queue(raw, at, src))
    for cq in queues.values():  # Kueue creates a cohort a queue names implicitly
        if cq.cohort is not None and cq.cohort not in cohorts:
            cohorts[cq.cohort] = c.Cohort(cq.cohort)
    config = c.TenantConfig(flavors, queues, cohorts, local,
                            _fair_sharing(top.get("fair_sharing", {}), src),
                            _requeue(top.get("requeue", {}), src), source)
    _check_references(config, src)
    return config


def _mapping(raw: Any, at: str, src: YamlSource, known: tuple[str, ...],
             required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise src.error(at, f"must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in known:
            raise src.error(_join(at, key), unknown_key_message(key, dict.fromkeys(known)))
    for key in required:
        if key not in raw:
            raise src.error(at, f"missing required key '{key}'")
    return raw


def _join(at: str, key: object) -> str:
    if key == "":
        return at
    return f"{at}.{key}" if at else str(key)


def _named(raw: Any, at: str, src: YamlSource, build: Callable[[Any, str], Any]) -> dict[str, Any]:
    if not isinstance(raw, list):
        raise src.error(at, "must be a list")
    out: dict[str, Any] = {}
    for i, item in enumerate(raw):
        value = build(item, f"{at}[{i}]")
        if value.name in out:
            raise src.error(f"{at}[{i}].name", f"'{value.name}' is defined twice")
        out[value.name] = value
    return out


def _value(raw: dict[str, Any], key: str, at: str, src: YamlSource, check: Callable[[Any], Any],
           default: Any = None) -> Any:
    if key not in raw:
        return default
    try:
        return check(raw[key])
    except ValueError as exc:
        raise src.error(_join(at, key), str(exc)) from None


def _name(value: Any) -> str:
    return name_check(value)


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError("must be a list of names")
    return tuple(_name(v) for v in value)


def _enum(kind: type) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        try:
            return kind(value)
        except ValueError:
            known = ", ".join(str(m.value) for m in kind)  # type: ignore[attr-defined]
            raise ValueError(f"unknown value {value!r}; known: {known}") from None
    return check


def _flavor(raw: Any, at: str, src: YamlSource) -> c.ResourceFlavor:
    raw = _mapping(raw, at, src, ("name", "gpu_types", "pools"), ("name",))
    return c.ResourceFlavor(_value(raw, "name", at, src, _name),
                            _value(raw, "gpu_types", at, src, _names, ()),
                            _value(raw, "pools", at, src, _names, ()))


def _quotas(raw: Any, at: str, src: YamlSource, flavors: dict[str, c.ResourceFlavor],
            in_cohort: bool) -> dict[c.FlavorResource, c.Quota]:
    out: dict[c.FlavorResource, c.Quota] = {}
    if not isinstance(raw, dict):
        raise src.error(at, f"must be a mapping, got {type(raw).__name__}")
    for flavor, resources in raw.items():
        where = _join(at, flavor)
        if flavor not in flavors:
            raise src.error(where, f"unknown flavor '{flavor}'; flavors: {', '.join(flavors)}")
        for resource, value in _mapping(resources, where, src, c.RESOURCES).items():
            out[(flavor, resource)] = _quota(value, _join(where, resource), src, in_cohort)
    return out


def _quota(raw: Any, at: str, src: YamlSource, in_cohort: bool) -> c.Quota:
    if not isinstance(raw, dict):  # a bare number is the nominal quota
        return c.Quota(_value({"": raw}, "", at, src, _NONNEG))
    raw = _mapping(raw, at, src, ("nominal", "borrowing_limit", "lending_limit"), ("nominal",))
    quota = c.Quota(_value(raw, "nominal", at, src, _NONNEG),
                    _value(raw, "borrowing_limit", at, src, _NONNEG),
                    _value(raw, "lending_limit", at, src, _NONNEG))
    for key in ("borrowing_limit", "lending_limit"):
        if key in raw and not in_cohort:
            needs = ("a parent: the cohort has none" if at.startswith("cohorts")
                     else "a cohort: the queue is in none")
            raise src.error(_join(at, key), f"a {key.replace('_', ' ')} needs {needs} "
                            "(Kueue rejects it)")
    if quota.lending_limit is not None and quota.lending_limit > quota.nominal:
        raise src.error(_join(at, "lending_limit"), f"{quota.lending_limit} is above the "
                        f"nominal quota {quota.nominal}")
    return quota


def _cluster_queue(raw: Any, at: str, src: YamlSource,
                   flavors: dict[str, c.ResourceFlavor]) -> c.ClusterQueue:
    raw = _mapping(raw, at, src, ("name", "cohort", "quotas", "queueing_strategy",
                                  "preemption", "flavor_fungibility", "weight"),
                   ("name", "quotas"))
    cohort = _value(raw, "cohort", at, src, _name)
    quotas = _quotas(raw["quotas"], _join(at, "quotas"), src, flavors, cohort is not None)
    order = tuple(dict.fromkeys(flavor for flavor, _ in quotas))
    return c.ClusterQueue(
        _value(raw, "name", at, src, _name), order, quotas, cohort,
        _value(raw, "queueing_strategy", at, src, _enum(c.QueueingStrategy),
               c.QueueingStrategy.BEST_EFFORT_FIFO),
        _preemption(raw.get("preemption", {}), _join(at, "preemption"), src),
        _fungibility(raw.get("flavor_fungibility", {}), _join(at, "flavor_fungibility"), src),
        _value(raw, "weight", at, src, _NONNEG, 1.0))


def _preemption(raw: Any, at: str, src: YamlSource) -> c.Preemption:
    raw = _mapping(raw, at, src, ("within_cluster_queue", "reclaim_within_cohort",
                                  "borrow_within_cohort", "min_runtime"))
    borrow = c.BorrowWithinCohort()
    if "borrow_within_cohort" in raw:
        where = _join(at, "borrow_within_cohort")
        inner = _mapping(raw["borrow_within_cohort"], where, src,
                         ("policy", "max_priority_threshold"))
        policy = _value(inner, "policy", where, src, _enum(c.Reclaim), c.Reclaim.NEVER)
        if policy is c.Reclaim.ANY:
            raise src.error(_join(where, "policy"), "must be never or lower-priority")
        borrow = c.BorrowWithinCohort(policy is c.Reclaim.LOWER_PRIORITY,
                                      _value(inner, "max_priority_threshold", where, src,
                                             number_check(-(1 << 31), True)))
    return c.Preemption(
        _value(raw, "within_cluster_queue", at, src, _enum(c.WithinQueue), c.WithinQueue.NEVER),
        _value(raw, "reclaim_within_cohort", at, src, _enum(c.Reclaim), c.Reclaim.NEVER),
        borrow, _value(raw, "min_runtime", at, src, _NONNEG, 0.0))


def _fungibility(raw: Any, at: str, src: YamlSource) -> c.FlavorFungibility:
    raw = _mapping(raw, at, src, ("when_can_borrow", "when_can_preempt"))
    return c.FlavorFungibility(
        _value(raw, "when_can_borrow", at, src, _enum(c.WhenCanBorrow), c.WhenCanBorrow.BORROW),
        _value(raw, "when_can_preempt", at, src, _enum(c.WhenCanPreempt),
               c.WhenCanPreempt.TRY_NEXT_FLAVOR))


def _cohort(raw: Any, at: str, src: YamlSource, flavors: dict[str, c.ResourceFlavor]) -> c.Cohort:
    raw = _mapping(raw, at, src, ("name", "parent", "quotas", "weight"), ("name",))
    parent = _value(raw, "parent", at, src, _name)
    quotas = _quotas(raw.get("quotas", {}), _join(at, "quotas"), src, flavors,
                     parent is not None)
    return c.Cohort(_value(raw, "name", at, src, _name), parent, quotas,
                    _value(raw, "weight", at, src, _NONNEG, 1.0))


def _local_queue(raw: Any, at: str, src: YamlSource) -> c.LocalQueue:
    raw = _mapping(raw, at, src, ("name", "cluster_queue"), ("name", "cluster_queue"))
    return c.LocalQueue(_value(raw, "name", at, src, _name),
                        _value(raw, "cluster_queue", at, src, _name))


SLURM_HALF_LIFE = 7 * 86400.0  # Slurm's default PriorityDecayHalfLife (7-00:00:00)


def _fair_sharing(raw: Any, src: YamlSource) -> c.FairSharing:
    at = "fair_sharing"
    raw = _mapping(raw, at, src, ("enabled", "strategies", "usage_half_life",
                                  "admission_order"))
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        raise src.error(_join(at, "enabled"), f"must be true or false, got {enabled!r}")
    strategies = _value(raw, "strategies", at, src, _strategies, c.FairSharing().strategies)
    order = _value(raw, "admission_order", at, src, _enum(c.AdmissionOrder),
                   c.AdmissionOrder.KUEUE)
    half_life = _value(raw, "usage_half_life", at, src, _NONNEG, 0.0)
    if order in (c.AdmissionOrder.SLURM_CLASSIC, c.AdmissionOrder.SLURM_FAIR_TREE) and (
            not half_life):
        half_life = SLURM_HALF_LIFE
    return c.FairSharing(enabled, strategies, half_life, order)


_FINAL, _INITIAL = (c.ShareStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
                    c.ShareStrategy.LESS_THAN_INITIAL_SHARE)
# Kueue's configuration validation accepts these preemption strategy lists only
_STRATEGY_LISTS = ((_FINAL,), (_INITIAL,), (_FINAL, _INITIAL))


def _strategies(value: Any) -> tuple[c.ShareStrategy, ...]:
    found = tuple(_enum(c.ShareStrategy)(s) for s in _names(value))
    if found not in _STRATEGY_LISTS:
        allowed = "; ".join(f"[{', '.join(s.value for s in one)}]" for one in _STRATEGY_LISTS)
        raise ValueError(f"must be one of {allowed} (as Kueue's validation), got "
                         f"[{', '.join(s.value for s in found)}]")
    return found


def _requeue(raw: Any, src: YamlSource) -> c.Requeue:
    raw = _mapping(raw, "requeue", src, ("base_seconds", "max_seconds"))
    return c.Requeue(_value(raw, "base_seconds", "requeue", src, _NONNEG, 0.0),
                     _value(raw, "max_seconds", "requeue", src, _POSITIVE, 3600.0))


def _check_references(config: c.TenantConfig, src: YamlSource) -> None:
    """Names that must exist, and no cohort cycle (Kueue KEP-79: the cohort graph is a tree)."""
    for i, cq in enumerate(config.cluster_queues.values()):
        if cq.name in config.cohorts:
            raise src.error(f"cluster_queues[{i}].name", f"'{cq.name}' is also a cohort name")
    for i, cohort in enumerate(config.cohorts.values()):
        if cohort.parent is not None and cohort.parent not in config.cohorts:
            raise src.error(f"cohorts[{i}].parent", f"unknown cohort '{cohort.parent}'")
        seen, at = {cohort.name}, cohort.parent
        while at is not None:
            if at in seen:
                raise src.error(f"cohorts[{i}].parent", f"cohort cycle through '{at}'")
            seen.add(at)
            at = config.cohorts[at].parent
    for i, lq in enumerate(config.local_queues.values()):
        if lq.cluster_queue not in config.cluster_queues:
            raise src.error(f"local_queues[{i}].cluster_queue",
                            f"unknown cluster queue '{lq.cluster_queue}'")
        if lq.name in config.cluster_queues and lq.name != lq.cluster_queue:
            raise src.error(f"local_queues[{i}].name",
                            f"'{lq.name}' is also a cluster queue: jobs naming it would go to "
                            f"'{lq.cluster_queue}', not to cluster queue '{lq.name}' (rename "
                            "the local queue)")
