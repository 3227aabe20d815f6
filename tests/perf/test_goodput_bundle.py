"""Where the goodput model finds Sia's (unbundled) profiles."""

from __future__ import annotations

from dlsched.perf.goodput.bundle import SIA_PROFILES


def test_sia_profiles_do_not_depend_on_the_working_directory() -> None:
    # A relative default made `dlsched compare --throughput goodput-sia` silently fall back to
    # T4's fits whenever it ran outside the repository root.
    assert SIA_PROFILES.is_absolute()
