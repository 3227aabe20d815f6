"""A one-shot command's exit without the interpreter's teardown.

Once ``dlsched simulate`` has written every file, a normal exit still frees the run's ~10^6
objects one by one and collects garbage over all of them: 0.35-0.5 CPU s of a whole Philly
run (5-7% of the command) that no user waits for. A command that finished cleanly calls
``arm``; the app's entry point (``dlsched.cli._App``, which ``enable``s this: the console
script, not an in-process test runner) then runs the exit handlers (``atexit``: logging's
flush), flushes the standard streams and ends the process with ``os._exit``. Only with exit
code 0 and no other non-daemon thread alive (one could still be writing, and the interpreter
would wait for it); otherwise the interpreter exits as usual. Daemon threads do not count: the
interpreter's own exit does not wait for them either, and one may still be winding down when
the command returns (rich's progress bar stops its refresh thread without joining it).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading


class _State:
    enabled = False  # the process runs the console script (set by its entry point)
    armed = False  # the command finished and closed its outputs


def enable() -> None:
    _State.enabled = True


def arm() -> None:
    """The command is done: no garbage collection will scan its objects again (frozen, so
    that none runs between here and the exit) and ``leave`` may end the process."""
    if _State.enabled:
        gc.freeze()
        _State.armed = True


def others_alive() -> bool:
    """Whether a thread the interpreter's exit would wait for (alive, not daemon, not this
    one) is running."""
    me = threading.current_thread()
    return any(t is not me and not t.daemon and t.is_alive() for t in threading.enumerate())


def leave(code: object) -> None:
    """End the process now with ``code`` if armed, the code is success and no other
    non-daemon thread is alive; return otherwise."""
    if not _State.armed or code not in (0, None) or others_alive():
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to deliver
            stream.flush()
    os._exit(0)
