"""Schemathesis over the whole OpenAPI schema, briefly (the long run is
``benchmarks/api_schemathesis.py``): valid and invalid requests to every operation, without
and with a token: no response is a 5xx, and every status code answered is in the schema."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("schemathesis")

from api_fuzz import TOKEN, fuzz, fuzz_schema, fuzz_service  # noqa: E402


@pytest.mark.parametrize("token", [None, TOKEN], ids=["open", "token"])
def test_no_server_error_and_every_status_documented(tmp_path: Path, token: str | None) -> None:
    service = fuzz_service(tmp_path / "data", token)
    try:
        report = fuzz(fuzz_schema(service), examples=12,
                      headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        service.shutdown()
    assert report.cases >= 12 * 9
    assert report.failures == []
    assert not [status for status in report.statuses if status >= 500]
