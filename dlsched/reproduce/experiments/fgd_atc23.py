"""FGD (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC'23) §6: GPU allocation ratio of FGD and its five
baselines as the arrived workload grows to 130% of the cluster's GPUs (Fig. 7, 9, 11-14).

Each openb pod list (the paper's ``default`` and the ``cpu*``, ``gpushare*``, ``gpuspec*``,
``multigpu*`` variants of its sensitivity studies) is shuffled with a seed and resampled to
130% of the GPU capacity of the 1,213 openb GPU nodes; pods arrive one by one, never leave,
and each placement places them (``dlsched/fragmentation/replay.py``). Cases are
``<variant>@<arrived %>``; metrics ``gpu_alloc_ratio_pct`` and ``unallocated_gpus`` (mean over
the seeds) and their standard deviations (``*_std``).

References: the artifact's own results (hkust-adsl/kubernetes-scheduler-simulator,
experiments/analysis/expected_results/analysis_allo_discrete.csv: 10 seeds, 42-51, per
workload and policy), averaged by ``benchmarks/fgd_artifact_references.py``; the paper's
figures give no table. Variants the artifact did not run have no reference.
"""

from __future__ import annotations

import csv
import functools
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path

from dlsched.cluster import Cluster
from dlsched.data_location import require_data
from dlsched.errors import ConfigError
from dlsched.fragmentation import SHARING_PLACEMENTS, TaskMix
from dlsched.fragmentation.base import SharingScore
from dlsched.fragmentation.openb import PodList, read_nodes, read_pods
from dlsched.fragmentation.replay import Replay, replay, tie_order, tuned_workload
from dlsched.reproduce.registry import (
    ExperimentOptions,
    chosen_policies,
    register_experiment,
    whole_list_option,
    whole_option,
)
from dlsched.reproduce.rows import Measured

VARIANTS = ("default", "cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235",
            "cpu250", "cpu300", "gpushare20", "gpushare40", "gpushare60", "gpushare80",
            "gpushare100", "gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
            "multigpu20", "multigpu30", "multigpu40", "multigpu50")
POLICIES = tuple(SHARING_PLACEMENTS)
ARRIVED = (50, 80, 90, 100, 110, 120, 130)
RATIO = 1.3  # arrived GPU requests / capacity at the end (the artifact's ``-tune 1.3``)
FIRST_SEED, SEEDS = 42, 10  # the artifact's seeds 42..51
NODES = "openb_node_list_gpu_node.csv"
DATA = "traces/alibaba-gpu-2023"  # under the data directory ($DLSCHED_DATA; not bundled)


@register_experiment(
    "fgd-atc23", "FGD ATC'23 Fig. 7/9/11-14: GPU allocation ratio of FGD, Random, DotProd, "
    "GpuClustering, GpuPacking and BestFit as openb pods arrive up to 130% of 6,212 GPUs",
    variants=VARIANTS, default_variants=VARIANTS,
    options={"policies": f"comma-separated subset of {','.join(POLICIES)}",
             "repeats": f"seeds {FIRST_SEED}..{FIRST_SEED}+N-1 (default {SEEDS}; or --seeds)",
             "arrived": "comma-separated arrived shares in % (default "
                        f"{','.join(map(str, ARRIVED))})",
             "workers": "local processes to run the seeds in (default 1; results identical)",
             "data": f"folder of the openb node and pod lists (default: {DATA} in the data "
                     "directory, $DLSCHED_DATA)"}, seeded=True)
def fgd_atc23(options: ExperimentOptions) -> Iterator[Measured]:
    opts = options.options
    policies = chosen_policies(opts.get("policies"), POLICIES)
    repeats = whole_option(opts, "repeats", SEEDS)
    seeds = options.seeds or tuple(range(FIRST_SEED, FIRST_SEED + (repeats or SEEDS)))
    arrived = whole_list_option(opts, "arrived", ARRIVED)
    beyond = [share for share in arrived if not 0 < share <= round(RATIO * 100)]
    if beyond:  # no arrival is near it: the whole run would give no cell for it
        raise ConfigError(f"--opt arrived: {beyond[0]} is outside 1..{round(RATIO * 100)} "
                          f"(pods arrive up to {round(RATIO * 100)}% of the GPUs)")
    data = (Path(opts["data"]) if "data" in opts
            else require_data(f"{DATA}/{NODES}", "fgd-atc23").parent)
    if not (data / NODES).is_file():
        raise ConfigError(f"--opt data={data}: no {NODES} there (the openb lists of the "
                          "Alibaba 2023 trace, see docs/sharing.md)")
    workers = _workers(opts.get("workers"))
    with _pool(workers) as pool:
        for variant in options.variants:
            _pods(data, variant)  # a bad list fails here, named by file, line and field
            units = [pool.submit(_replay_seed, data, variant, seed, policies) for seed in seeds]
            runs: dict[str, list[Replay]] = {p: [] for p in policies}
            raw: list[tuple[object, ...]] = []
            for seed, unit in zip(seeds, units, strict=True):
                for policy, result, tasks, cpu_seconds in unit.result():
                    runs[policy].append(result)
                    raw.append((seed, policy, tasks, cpu_seconds,
                                *(_round(result.allocation_at(a)) for a in arrived),
                                round(result.unallocated_gpus, 1)))
                options.log(f"fgd-atc23 {variant} seed {seed}: done")
            if options.out is not None:
                _write_raw(options.out / "fgd-atc23" / f"{variant}.csv", arrived, raw)
            for policy, replays in runs.items():
                yield from _rows(variant, policy, replays, arrived)


def _workers(text: str | None) -> int:
    if text is None:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"--opt workers: {text!r} is not a whole number >= 1")
    return int(text)


def _pool(workers: int) -> Executor:
    """Seeds run in ``workers`` local processes (1: in this process); each seed's replays are
    the same wherever they run, and rows keep the seed order."""
    return _InProcess() if workers == 1 else ProcessPoolExecutor(max_workers=workers)


class _InProcess(Executor):
    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@functools.lru_cache(maxsize=2)
def _cluster(data: Path) -> Cluster:
    return read_nodes(data / NODES)


@functools.lru_cache(maxsize=2)
def _pods(data: Path, variant: str) -> tuple[PodList, TaskMix]:
    pods = read_pods(data / f"openb_pod_list_{variant}.csv", _cluster(data))
    return pods, TaskMix.of(pods.demands)


def _replay_seed(data: Path, variant: str, seed: int,
                 policies: tuple[str, ...]) -> list[tuple[str, Replay, int, float]]:
    """Every policy on one seed of one variant: (policy, replay, tasks, CPU seconds)."""
    cluster = _cluster(data)
    pods, mix = _pods(data, variant)
    tasks = tuned_workload(pods.demands, cluster.num_gpus, RATIO, seed)
    done = []
    for policy in policies:
        started = time.process_time()
        result = replay(cluster, tasks, _plugin(policy, mix, seed),
                        tie_order(cluster.num_nodes, seed))
        done.append((policy, result, len(tasks), round(time.process_time() - started, 3)))
    return done


def _plugin(policy: str, mix: TaskMix, seed: int) -> SharingScore:
    kind = SHARING_PLACEMENTS[policy]
    if policy == "fgd":
        return kind(mix)  # type: ignore[call-arg]
    if policy == "random":
        return kind(seed)  # type: ignore[call-arg]
    return kind()


def _rows(variant: str, policy: str, replays: list[Replay],
          arrived: tuple[int, ...]) -> Iterator[Measured]:
    for share in arrived:
        pairs = [(r, a) for r in replays if (a := r.allocation_at(share)) is not None]
        if not pairs:
            continue
        alloc = [a for _, a in pairs]
        unallocated = [r.capacity_gpus * (1 - a / 100) for r, a in pairs]
        case = f"{variant}@{share}"
        yield Measured(case, policy, "gpu_alloc_ratio_pct", round(statistics.fmean(alloc), 3))
        yield Measured(case, policy, "unallocated_gpus", round(statistics.fmean(unallocated), 1))
        yield Measured(case, policy, "gpu_alloc_ratio_pct_std", _round(_std(alloc)))
        yield Measured(case, policy, "unallocated_gpus_std", _round(_std(unallocated), 1))


def _write_raw(path: Path, arrived: tuple[int, ...], raw: list[tuple[object, ...]]) -> None:
    """Each run: seed, policy, tasks, CPU seconds, the allocation at each arrived share and
    the unallocated GPUs at the end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seed", "policy", "tasks", "cpu_seconds",
                         *(f"alloc_pct@{a}" for a in arrived), "unallocated_gpus_end"])
        writer.writerows(raw)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _std(values: list[float]) -> float | None:
    """The sample standard deviation over the seeds; None (an empty cell) for one seed, whose
    spread is unknown, not 0 (`--seeds 42` printed 0 beside a mean over the artifact's ten)."""
    return statistics.stdev(values) if len(values) > 1 else None
