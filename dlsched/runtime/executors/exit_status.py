"""Exit statuses that outlive the service: each local worker runs under a small POSIX shell
wrapper (as Slurm's ``slurmstepd`` or containerd's shim keep a container's status apart from
the daemon) that waits for the job's command and writes its exit code to a file beside the
attempt's log. A service killed with ``kill -9`` cannot collect its workers' exit statuses (they
are no longer its children); the restarted service reads these files instead, so a job whose
workers completed while no service ran is recorded as finished and never started again.

The wrapper runs the job's argv as given (``"$@"``: no shell parsing of the job's words). It
traps SIGTERM, SIGINT and SIGHUP only to note that a stop was asked for before the command
ended (the command itself gets the default handlers back, as POSIX shells reset trapped
signals in children); the file then reads ``CODE 1``, else ``CODE 0``. A worker killed by a
signal has the shell's code 128 + the signal's number. The file is made 0600 (the command's
own umask is left as it was). SIGKILL of the process group kills the
wrapper too: no file, so the attempt did not complete.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SHELL = "/bin/sh"
WRAPPER = ('f=$1; shift; s=0; trap "s=1" TERM INT HUP; "$@"; c=$?; umask 077; '
           'printf "%s %s\\n" "$c" "$s" > "$f"; exit "$c"')


@dataclass(frozen=True)
class ExitStatus:
    code: int  # the command's exit code (128 + N: killed by signal N)
    asked_to_stop: bool  # a stop signal reached the wrapper before the command ended

    @property
    def completed(self) -> bool:
        """Exited 0 on its own: the work is done (exit 0 after a stop is a checkpoint)."""
        return self.code == 0 and not self.asked_to_stop


def status_path(log_path: Path, rank: int) -> Path:
    """``DATA_DIR/jobs/ID/attempt-N.log`` -> ``attempt-N.rank-R.exit``."""
    return log_path.with_name(f"{log_path.stem}.rank-{rank}.exit")


def wrapped(command: tuple[str, ...] | list[str], status: Path) -> list[str]:
    """The argv that runs ``command`` under the wrapper, writing its status to ``status``."""
    return [SHELL, "-c", WRAPPER, "dlsched-worker", str(status), *command]


def read_status(path: Path) -> ExitStatus | None:
    """The status a wrapper wrote, or None (still running, killed, or never started)."""
    try:
        words = path.read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(words) != 2 or not words[0].isdigit() or words[1] not in ("0", "1"):
        return None  # not yet written in full
    return ExitStatus(int(words[0]), words[1] == "1")
