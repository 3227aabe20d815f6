"""Schemathesis over the whole REST API at length (issue 12 item 3): valid and invalid cases for
every operation, without and with a token, and the time to refuse ``gpus=10**8``.

Run on demand from the repository root: ``python benchmarks/api_schemathesis.py
[--examples 300] [--seed 42]`` (the test suite's brief run is
``tests/runtime/test_api_schema.py``). The service runs in process with an executor that starts
nothing (the fuzzer's commands are never executed). Prints one JSON line: cases, responses by
status, failures (5xx or a status code the schema does not document), and the median and
worst time of 50 ``gpus=10**8`` submissions (after one warm-up request). Exit status 1 on
any failure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

from api_fuzz import TOKEN, fuzz, fuzz_schema, fuzz_service  # noqa: E402


def huge_gpus(service_dir: Path, tries: int = 50) -> dict[str, float]:
    """Seconds to answer ``gpus=10**8`` (400), through the ASGI app (no network)."""
    from starlette.testclient import TestClient

    from dlsched.runtime.api import create_app

    service = fuzz_service(service_dir)
    seconds = []
    try:
        with TestClient(create_app(service)) as client:
            client.post("/v1/jobs", json={"command": ["true"], "gpus": 1})  # warm-up
            for _ in range(tries):
                started = time.perf_counter()
                response = client.post("/v1/jobs", json={"command": ["true"], "gpus": 10**8})
                seconds.append(time.perf_counter() - started)
                assert response.status_code == 400, response.text
    finally:
        service.shutdown()
    return {"median_ms": round(statistics.median(seconds) * 1000, 2),
            "max_ms": round(max(seconds) * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300, help="per operation and mode")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    result: dict[str, object] = {"examples_per_operation": args.examples, "seed": args.seed}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="apifuzz-") as tmp:
        for name, token in (("open", None), ("token", TOKEN)):
            service = fuzz_service(Path(tmp) / name, token)
            started = time.monotonic()
            try:
                report = fuzz(fuzz_schema(service), args.examples,
                              {"Authorization": f"Bearer {TOKEN}"}, args.seed)
            finally:
                service.shutdown()
            failures += report.failures
            result[name] = {"cases": report.cases,
                            "statuses": dict(sorted(report.statuses.items())),
                            "server_errors": sum(n for s, n in report.statuses.items()
                                                 if s >= 500),
                            "failures": len(report.failures),
                            "seconds": round(time.monotonic() - started, 1)}
        result["gpus_1e8"] = huge_gpus(Path(tmp) / "huge")
    result["failure_examples"] = sorted(set(failures))[:20]
    print(json.dumps(result))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
