"""Which GPU types of a cluster offer a MIG profile, and what to tell a user whose jobs ask for
one that none offers (``3g.20gb``, an A100 40 GB profile, on H100 nodes whose 3g is
``3g.40gb``): a warning before the run, and the reason such a job fails at submission."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from dlsched.mig.profiles import UnknownMigProfile, mig_gpu_type, mig_profile, profiles_of
from dlsched.wording import jobs_ask, named_counts
from dlsched.workload.trace import Trace


def offering_types(type_names: Iterable[str], profile: str,
                   pins: tuple[str, ...] = ()) -> list[str]:
    """The types among ``type_names`` (and among ``pins``, when the job names types) whose
    MIG family has ``profile``."""
    offering = []
    for name in type_names:
        family = mig_gpu_type(name)
        if family is None or (pins and name not in pins):
            continue
        try:
            mig_profile(profile, family)
        except UnknownMigProfile:
            continue
        offering.append(name)
    return offering


def what_is_offered(type_names: Iterable[str]) -> str:
    """The MIG profiles each MIG-capable type offers (``H100 offers 1g.10gb, ...``), or that
    none is MIG-capable."""
    families = {name: family for name in type_names
                if (family := mig_gpu_type(name)) is not None}
    if not families:
        return "none of its GPUs is MIG-capable (A100, A100-80G and H100 are)"
    return "; ".join(f"{name} offers {', '.join(p.name for p in profiles_of(family))}"
                     for name, family in sorted(families.items()))


def unoffered_reason(type_names: tuple[str, ...], profile: str) -> str:
    """Why a job of ``profile`` can never run on a cluster of ``type_names`` none of which
    offers it."""
    return f"no GPU of the cluster offers MIG profile {profile!r}: {what_is_offered(type_names)}"


def unoffered_profiles(trace: Trace, type_names: tuple[str, ...],
                       cluster_name: str) -> list[str]:
    """One warning for the trace's MIG jobs whose profile no GPU type of the cluster (among
    those each job names) offers: they fail at submission."""
    missing: Counter[str] = Counter()
    for spec in trace.jobs:
        if spec.mig_profile is not None and not offering_types(type_names, spec.mig_profile,
                                                                spec.gpu_types):
            missing[spec.mig_profile] += 1
    if not missing:
        return []
    return [f"{trace.name}: {jobs_ask(sum(missing.values()))} for MIG profiles that no GPU "
            f"of cluster {cluster_name} offers: {named_counts(missing)}; "
            f"{what_is_offered(type_names)}. They can never run (name the profile of the "
            f"cluster's GPUs, e.g. 3g alone)"]
