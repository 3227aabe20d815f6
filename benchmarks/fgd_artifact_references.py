"""Print the FGD artifact's results as ``published.csv`` rows (how those rows were made).

Run: ``python benchmarks/fgd_artifact_references.py /path/to/analysis_allo_discrete.csv``,
the file ``experiments/analysis/expected_results/analysis_allo_discrete.csv`` of
hkust-adsl/kubernetes-scheduler-simulator (the FGD paper's artifact, Weng et al., ATC'23): per
workload, policy and seed (42-51, tune ratio 1.3), the GPU allocation ratio (%) at each
arrived share 0..130%. Prints, per workload and policy, the mean over seeds at the arrived
shares ``fgd-atc23`` reports, and the unallocated GPUs that ratio leaves of 6,212.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ARRIVED = ("50", "80", "90", "100", "110", "120", "130")
POLICIES = {"01-Random": "random", "02-DotProd": "dot-product", "03-GpuClustering":
            "gpu-clustering", "04-GpuPacking": "gpu-packing", "05-BestFit": "cpu-gpu-best-fit",
            "06-FGD": "fgd"}
SOURCE = ("hkust-adsl/kubernetes-scheduler-simulator experiments/analysis/expected_results/"
          "analysis_allo_discrete.csv (mean of seeds 42-51)")


def rows(path: Path) -> list[tuple[str, ...]]:
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    gpus: dict[str, float] = {}
    with path.open() as handle:
        for row in csv.DictReader(handle):
            if row["tune"] != "1.3" or row["sc_policy"] not in POLICIES:
                continue
            variant = row["workload"].removeprefix("openb_pod_list_")
            gpus[variant] = float(row["total_gpus"])
            for share in ARRIVED:
                if row.get(share):
                    values[(variant, POLICIES[row["sc_policy"]], share)].append(float(row[share]))
    out = []
    for (variant, policy, share), ratios in sorted(values.items()):
        mean = statistics.fmean(ratios)
        case = f"{variant}@{share}"
        out.append(("fgd-atc23", case, policy, "gpu_alloc_ratio_pct", f"{mean:.4g}", SOURCE))
        out.append(("fgd-atc23", case, policy, "unallocated_gpus",
                    f"{gpus[variant] * (1 - mean / 100):.4g}", SOURCE))
    return out


if __name__ == "__main__":
    print("# FGD (Weng et al., ATC'23): the artifact's own results "
          "(benchmarks/fgd_artifact_references.py)")
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerows(rows(Path(sys.argv[1])))
