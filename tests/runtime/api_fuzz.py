"""Schema-driven fuzzing of the REST API (schemathesis), shared by the test suite's short run
(``test_api_schema.py``) and the long one (``benchmarks/api_schemathesis.py``).

The service runs in process behind its ASGI app with an executor that starts nothing: the fuzzer
submits jobs with random commands, which must never be executed on this machine.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.runtime.api import create_app
from dlsched.runtime.executors.base import AttemptEnd, AttemptLaunch, RuntimeExecutor
from dlsched.runtime.server import local_cluster
from dlsched.runtime.service import Service, ServiceConfig
from dlsched.workload.job import Job

TOKEN = "fuzz-token-0123456789"


class NullExecutor:
    """Accepts every start and stop and never runs anything."""

    def start(self, job: Job, now: float) -> None:
        pass

    def stop(self, job: Job, now: float) -> None:
        pass

    def poll(self) -> list[AttemptEnd]:
        return []

    def take_launched(self) -> list[AttemptLaunch]:
        return []

    def take_stops(self) -> list[tuple[str, int]]:
        return []

    def signal_stops(self) -> None:
        pass

    def drain(self, timeout: float) -> list[AttemptEnd]:
        return []

    def down_nodes(self) -> frozenset[int]:
        return frozenset()


class FuzzService(Service):
    def _executor(self) -> RuntimeExecutor:
        return NullExecutor()


def fuzz_service(data_dir: Path, token: str | None = None) -> Service:
    service = FuzzService(ServiceConfig(local_cluster(4, "T4"), data_dir, token=token,
                                        poll_seconds=0.05, retry_backoff=0.0))
    service.start()
    return service


def fuzz_schema(service: Service) -> Any:
    import schemathesis

    return schemathesis.openapi.from_asgi("/openapi.json", create_app(service))


def fuzz_checks() -> list[Any]:
    """What must hold for every response: no 5xx, and a status code the schema documents."""
    from schemathesis.checks import not_a_server_error, status_code_conformance

    return [not_a_server_error, status_code_conformance]


@dataclass
class FuzzReport:
    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # operation, status, what failed


def fuzz(schema: Any, examples: int, headers: dict[str, str] | None = None,
         seed: int = 42) -> FuzzReport:
    """Valid and invalid cases (schemathesis' positive and negative modes) for every operation;
    each response checked with ``fuzz_checks``. Failures are collected, not raised."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st
    from schemathesis import GenerationMode

    report = FuzzReport()
    for result in schema.get_all_operations():
        operation = result.ok()
        strategy = st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                             operation.as_strategy(GenerationMode.NEGATIVE))

        @hypothesis_seed(seed)
        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def run(case: Any) -> None:
            _check(case, headers, report)

        run()
    return report


def _check(case: Any, headers: dict[str, str] | None, report: FuzzReport) -> None:
    response = case.call(headers=headers)
    report.cases += 1
    report.statuses[response.status_code] += 1
    try:
        case.validate_response(response, checks=fuzz_checks())
    except (Exception, BaseExceptionGroup) as failure:  # a group of failed checks
        text = str(failure).strip()
        first = text.splitlines()[0] if text else type(failure).__name__
        report.failures.append(f"{case.operation.label}: {response.status_code}: {first}")
