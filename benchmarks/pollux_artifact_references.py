"""Print the Pollux artifact's results as ``published.csv`` rows (how those rows were made).

Run: ``python benchmarks/pollux_artifact_references.py /path/to/adaptdl/simulator``, a
checkout of petuum/adaptdl branch ``osdi21-artifact``. For each policy and job load, reads
``results-jobload/POLICY-LOAD/summary.json`` (each job's JCT per workload) and the workload's
CSV (submit times); prints, per workload, the mean JCT and the makespan (latest submit + JCT,
as the artifact's ``results-jobload/plot.py`` computes it), and the mean JCT over workloads.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

POLICIES = ("tiresias", "optimus", "pollux")
LOADS = ("0.5", "1.0", "1.5", "2.0")


def rows(simulator: Path) -> list[tuple[str, ...]]:
    out = []
    for policy in POLICIES:
        for load in LOADS:
            name = f"results-jobload/{policy}-{load}/summary.json"
            jcts = json.loads((simulator / name).read_text())["jcts"]
            source = f"petuum/adaptdl@osdi21-artifact simulator/{name}"
            means = []
            for workload in sorted(jcts):
                folder = "workloads" if load == "1.0" else f"workloads-{load}"
                with (simulator / folder / f"{workload}.csv").open() as handle:
                    submits = {r["name"]: float(r["time"]) for r in csv.DictReader(handle)}
                mean = statistics.mean(jcts[workload].values())
                makespan = max(submits[j] + t for j, t in jcts[workload].items())
                means.append(mean)
                case = f"{workload}@{load}"
                out.append(("pollux-osdi21", case, policy, "jct_mean_s", f"{mean:.6g}", source))
                out.append(("pollux-osdi21", case, policy, "makespan_s", f"{makespan:.6g}",
                            source))
            out.append(("pollux-osdi21", f"mean@{load}", policy, "jct_mean_s",
                        f"{statistics.mean(means):.6g}", source + " (mean of the 8 workloads)"))
    return out


if __name__ == "__main__":
    csv.writer(sys.stdout, lineterminator="\n").writerows(rows(Path(sys.argv[1])))
