"""When a Gandiva cycle would change nothing, told without running it (``hooks.SettledAllocator``).

With no job waiting, a cycle between quanta keeps every running job where it is. At a quantum
boundary (Xiao et al., OSDI'18 §3.1, §3.3, §4) it does too when every running job:

- runs alone at its own share (no packed pair to introspect or re-decide, §3.2), on all the
  GPUs it asks for (no MIG worker, counted whole in the room; no host share of its own), so
  ``Assignment.keeps`` holds for the target the round gives it;
- with migration on, sits on one node (a spread gang may move, §3.3);
- is taken by the rotation's greedy: the same sums, in the same order (every running job last
  ran now: by arrival), against the same room (every GPU of the nodes that are up).

A long trace of few, long jobs on a large cluster (the Alibaba openb pods: 3,465 hours of
60 s rounds) is then a chain of such cycles: the core skips them (``Scheduler._settled``).
"""

from __future__ import annotations

from collections.abc import Iterable

from dlsched.cluster.cluster import Cluster
from dlsched.policies.gandiva_room import GandivaRoom
from dlsched.scheduling.state import EPS
from dlsched.workload.job import Job


def settled_ids(running: Iterable[Job], cluster: Cluster, down_nodes: frozenset[int],
                migrate: bool) -> tuple[str, ...] | None:
    """The running jobs' ids when a cycle with no job waiting would keep each on its GPUs,
    else None."""
    gpu_node = cluster.gpu_node_list
    jobs = sorted(running, key=lambda j: (j.spec.submit_time, j.job_id))
    if not all(_alone_and_whole(job, gpu_node, migrate) for job in jobs):
        return None
    left = GandivaRoom.empty(cluster, sorted(down_nodes)).total
    for job in jobs:  # ``GandivaSlices.allocate``'s greedy, the same sums in the same order
        asked = job.spec.num_gpus * job.spec.gpu_share
        if not asked <= left + EPS:
            return None
        left -= asked
    return tuple(job.job_id for job in jobs)


def _alone_and_whole(job: Job, gpu_node: list[int], migrate: bool) -> bool:
    """Whether the round keeps the job as it runs: alone at its share on every GPU it asks
    for, no MIG worker or host share, and (migrating) on one node."""
    spec = job.spec
    if spec.mig_profile is not None or job.host is not None:
        return False
    if len(job.allocation) != spec.num_gpus:
        return False
    if not all(abs(share - spec.gpu_share) < EPS for share in job.shares):
        return False
    return not migrate or len({gpu_node[gpu] for gpu in job.allocation}) == 1
