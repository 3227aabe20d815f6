"""The request ``dlsched submit`` sends: a job file's fields with the flags over them, and the
service's refusal of a field located at the file's line when the file gave it."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.errors import DlschedError
from dlsched.yamlinput import YamlSource, load_yaml_file


@dataclass(frozen=True)
class JobRequest:
    """The body to submit, the job file it was read from (None: flags only), and the
    fields the flags gave (None: not given)."""

    body: dict[str, Any]
    source: YamlSource | None
    flags: dict[str, Any]

    def located(self, exc: DlschedError) -> DlschedError:
        """The service's refusal, located in the job file when the field it names came from
        there (``job.yaml:4:command[0]: 422: ...``); as it was otherwise (a flag gave it)."""
        field = getattr(exc, "field", None)
        if self.source is None or field is None or getattr(exc, "status", 0) not in (400, 422):
            return exc
        top = re.split(r"[.\[]", field, maxsplit=1)[0]
        if self.flags.get(top) is not None or top not in self.source.lines:
            return exc
        return self.source.error(field, f"{exc}{_closest_field(field, str(exc))}")


def _closest_field(field: str, message: str) -> str:
    """A misspelt key's likely field (``prioirty``: did you mean 'priority'?): the service
    says only "Extra inputs are not permitted"."""
    if "." in field or "[" in field or "Extra inputs" not in message:
        return ""
    from dlsched.runtime.models import SubmitRequest

    close = difflib.get_close_matches(field, sorted(SubmitRequest.model_fields), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def job_request(file: Path | None, flags: dict[str, Any], env: list[str] | None,
                job_dir: bool) -> JobRequest:
    """The job ``--file``'s fields with the ``flags`` given over them (``--gpus`` and
    ``--gpu-share`` read as workers and a share: ``workers_and_share``), ``--env`` over the
    file's env, and the working directory unless ``--job-dir``; a required field given
    neither way is refused (``_missing``)."""
    body, source = _load_job_file(file) if file is not None else ({}, None)
    flags = dict(flags)
    flags["gpus"], flags["gpu_share"] = workers_and_share(flags["gpus"], flags["gpu_share"])
    body.update({k: v for k, v in flags.items() if v is not None})
    if env:
        given = body.get("env")
        body["env"] = {**(given if isinstance(given, dict) else {}), **_env_pairs(env)}
    asked = body.get("gpus")
    if flags["gpus"] is None and isinstance(asked, float) and 0 < asked < 1:  # file's gpus: 0.5
        body["gpus"], body["gpu_share"] = workers_and_share(
            asked, body.get("gpu_share"), (f"{file}: gpus:", "gpu_share:"))
    for key, flag in (("gpus", "--gpus N"), ("command", "the command after --")):
        if key not in body:
            raise _missing(key, flag, file, source)
    if job_dir:
        body["working_dir"] = None  # the service chooses the job's own
    else:
        body.setdefault("working_dir", os.getcwd())
    return JobRequest(body, source, flags)


def _missing(key: str, flag: str, file: Path | None, source: YamlSource | None
             ) -> DlschedError:
    """A required field neither a flag nor the job file gave; a file key that looks like it
    (``gpu: 1``) is named at its line, not left for the reader to find."""
    if file is None or source is None:
        return DlschedError(f"give {flag} (or a --file that has it)")
    top = [k for k in source.lines if k and "." not in k and "[" not in k]
    close = difflib.get_close_matches(key, top, n=1)
    if close:
        return source.error(close[0], f"not a job field (did you mean {key!r}?); the job "
                                      f"needs {key} here or {flag}")
    return DlschedError(f"give {flag} ({file} has none)")


def workers_and_share(gpus: float | None, gpu_share: float | None,
                      names: tuple[str, str] = ("--gpus", "--gpu-share")
                      ) -> tuple[int | float | None, float | None]:
    """``--gpus`` as workers, and a fraction of one GPU (``--gpus 0.5``, what an Alibaba
    pod's ``gpu_milli`` 500 asks) as one worker on that share: "Input should be a valid
    integer" answered the fraction. A share given both ways must agree; more than one GPU
    but not whole (1.5) is refused: each worker holds one GPU or one share of one."""
    if gpus is None or gpus == int(gpus):
        return (None if gpus is None else int(gpus)), gpu_share
    if not 0 < gpus < 1:
        raise DlschedError(f"--gpus {gpus:g}: workers are whole (a gang of N GPUs) or one "
                           "fraction of a GPU below 1 (--gpus 0.5); for several fractional "
                           "workers give --gpus N --gpu-share S")
    if gpu_share is not None and gpu_share != gpus:
        raise DlschedError(f"{names[0]} {gpus:g} asks for a share of {gpus:g}, {names[1]} "
                           f"{gpu_share:g} for another: give one of them")
    return 1, gpus


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` flags as a mapping (the value may hold ``=``; a later key wins)."""
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise DlschedError(f"--env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def _load_job_file(path: Path) -> tuple[dict[str, Any], YamlSource]:
    """The job file's fields and where each is; a file that cannot be read or parsed is one
    located line (``job.yaml:2: not valid YAML: ...``), as every YAML input's errors are;
    its ``env`` values are strings (``STEPS: 4`` is ``"4"``: ``job_env``)."""
    from dlsched.runtime.job_env import file_env

    doc, source = load_yaml_file(path, keep_texts=True)
    if not isinstance(doc, dict):
        raise DlschedError(f"{path}: expected a mapping of job fields")
    if "env" in doc:
        doc["env"] = file_env(doc["env"], source)
    return doc, source
