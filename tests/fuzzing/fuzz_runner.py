"""Load one mutated file in-process and judge the outcome (shared by the CI property test and
``benchmarks/fuzz_inputs.py``)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

from fuzz_mutators import Mutator
from fuzz_seeds import Target

from dlsched.errors import DlschedError

PROBLEMS = ("traceback", "garbage accepted", "valid input refused", "meaning changed",
            "error without file and line")


@dataclass(frozen=True)
class Outcome:
    target: str
    mutator: str
    status: str  # "ok" | "error" | "traceback"
    message: str = ""
    field_named: bool = False
    problems: tuple[str, ...] = ()


def file_name(target: Target, index: int = 0) -> str:
    # a Gavel-Philly file is named after its virtual cluster
    return f"in{index}{target.suffix}" if target.name != "gavel-philly" else f"vc{index}.trace"


def canonical(result: Any) -> Any:
    """What two loads must agree on: a trace's jobs, a config without its source path."""
    if hasattr(result, "jobs"):
        return result.jobs
    if hasattr(result, "tenants") and hasattr(result, "secret"):
        return result.tenants
    if dataclasses.is_dataclass(result) and any(f.name == "source"
                                                for f in dataclasses.fields(result)):
        return dataclasses.replace(result, source="")
    return result


def load(target: Target, path: Path, detect: bool) -> tuple[str, Any]:
    """``("ok", result)``, ``("error", message)`` or ``("traceback", description)``."""
    try:
        return "ok", target.load(path, detect)
    except DlschedError as exc:
        return "error", str(exc)
    except Exception as exc:  # noqa: BLE001 (what the fuzzer looks for)
        return "traceback", f"{type(exc).__name__}: {str(exc)[:300]}"


def located(message: str, path: Path) -> tuple[bool, bool]:
    """(names file and line, also names a field) for an error message."""
    match = re.match(re.escape(str(path)) + r":(\d+)(:\S.*?)?: ", message)
    return match is not None, bool(match and match.group(2))


def judge(target: Target, mutator: Mutator, path: Path, detect: bool,
          seed_result: Any) -> Outcome:
    status, value = load(target, path, detect)
    problems = []
    if status == "traceback":
        problems.append("traceback")
    if status == "ok" and mutator.expect == "error":
        problems.append("garbage accepted")
    if status != "ok" and mutator.expect == "same":
        problems.append("valid input refused")
    if status == "ok" and mutator.expect == "same" and canonical(value) != seed_result:
        problems.append("meaning changed")
    named_line = named_field = False
    if status == "error":
        named_line, named_field = located(value, path)
        if not named_line:
            problems.append("error without file and line")
    message = value if status != "ok" else ""
    return Outcome(target.name, mutator.name, status, message, named_field, tuple(problems))


def mutate_and_judge(target: Target, mutator: Mutator, rng: Random, folder: Path,
                     index: int = 0) -> Outcome:
    seed = target.seed.encode()
    seed_path = folder / file_name(target, index)
    seed_path.write_bytes(seed)
    seed_result = canonical(target.load(seed_path))
    data = mutator.apply(seed, target, rng)
    path = folder / file_name(target, index)
    path.write_bytes(data)
    detect = target.kind == "trace" and mutator.expect != "same" and rng.random() < 0.3
    return judge(target, mutator, path, detect, seed_result)
