"""``benchmarks/bench_contended.py`` digests a run's records one at a time: the digest of the
joined text it printed before (equal digests still mean identical schedules, against every
digest recorded in benchmarks/RESULTS.md), without holding that text (it set the peak RSS the
script reports: ~70 MiB over the run at the whole Philly table)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from builders import make_cluster, random_preemptive_jobs, simulator

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_contended.py"


def test_the_digest_is_that_of_the_joined_records() -> None:
    spec = importlib.util.spec_from_file_location("bench_contended", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = simulator("tiresias", make_cluster(nodes=2, gpus=4), random_preemptive_jobs(1),
                       keep_finished=False).run()
    joined = "".join(f"{r!r}\n" for r in sorted(result.jobs, key=lambda r: r.job_id))
    assert bench.records_digest(result.jobs) == hashlib.sha256(joined.encode()).hexdigest()[:16]
