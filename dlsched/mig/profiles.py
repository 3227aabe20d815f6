"""MIG profiles and their placement rules on A100 and H100 (NVIDIA MIG user guide,
"Supported MIG Profiles" and "A100 MIG placements").

A MIG-capable GPU has 7 compute slices and 8 memory slices. A GPU instance of profile ``Ng``
takes ``N`` compute slices and a contiguous range of memory slices that must start at one of the
profile's allowed start slices:

| profile (A100 40 GB / 80 GB, H100 80 GB) | compute | memory slices | allowed starts |
|---|---|---|---|
| 1g.5gb / 1g.10gb / 1g.10gb | 1 | 1 | 0, 1, 2, 3, 4, 5, 6 |
| 2g.10gb / 2g.20gb / 2g.20gb | 2 | 2 | 0, 2, 4 |
| 3g.20gb / 3g.40gb / 3g.40gb | 3 | 4 | 0, 4 |
| 4g.20gb / 4g.40gb / 4g.40gb | 4 | 4 | 0 |
| 7g.40gb / 7g.80gb / 7g.80gb | 7 | 8 | 0 |

Instances on one GPU never overlap in memory slices and use at most 7 compute slices together
(so 3g at 0 and 3g at 4 fit, 4g at 0 and 3g at 4 fit, seven 1g fit, but 4g and 4g do not).
A profile is named in full (``3g.20gb``) or by its compute size (``3g``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.errors import DlschedError

COMPUTE_SLICES = 7
MEMORY_SLICES = 8


class UnknownMigProfile(DlschedError):
    """A MIG profile that the GPU type does not offer."""


@dataclass(frozen=True, slots=True)
class MigProfile:
    name: str
    compute: int
    memory_slices: int
    starts: tuple[int, ...]

    @property
    def size(self) -> str:
        return f"{self.compute}g"


_SHAPES = ((1, 1, (0, 1, 2, 3, 4, 5, 6)), (2, 2, (0, 2, 4)), (3, 4, (0, 4)), (4, 4, (0,)),
           (7, 8, (0,)))
# Memory per memory slice (GB) in the profile names of each MIG-capable GPU type.
_SLICE_GB = {"a100": 5, "a100-40gb": 5, "a100-80gb": 10, "h100": 10, "h100-80gb": 10}


def profiles_of(gpu_type: str = "a100") -> tuple[MigProfile, ...]:
    """The MIG profiles of a GPU type (a MIG family, ``a100-80gb``, or a cluster's type name,
    ``A100-80G``: ``dlsched mig --gpu-type A100-80G`` was "has no MIG profiles"), smallest
    first."""
    kind = mig_gpu_type(gpu_type)
    if kind is None:
        raise UnknownMigProfile(f"GPU type {gpu_type!r} has no MIG profiles "
                                f"(known: {', '.join(sorted(_SLICE_GB))}, or a cluster's "
                                "A100, A100-80G, H100)")
    gb = _SLICE_GB[kind]
    return tuple(MigProfile(f"{c}g.{m * gb}gb", c, m, s) for c, m, s in _SHAPES)


def mig_profile(name: str, gpu_type: str = "a100") -> MigProfile:
    """The profile called ``name`` (``3g.20gb`` or ``3g``) on ``gpu_type``."""
    wanted = name.strip().casefold()
    for profile in profiles_of(gpu_type):
        if wanted in (profile.name, profile.size):
            return profile
    known = ", ".join(p.name for p in profiles_of(gpu_type))
    raise UnknownMigProfile(f"unknown MIG profile {name!r} on {gpu_type} (known: {known}, "
                            f"or 1g, 2g, 3g, 4g, 7g)")


def mig_gpu_type(gpu_type: str) -> str | None:
    """The MIG profile family of a cluster GPU type (``A100``, ``A100-80G``, ``H100`` ...), or
    None for a GPU without MIG."""
    kind = gpu_type.casefold().replace("_", "-")
    if kind in _SLICE_GB:
        return kind
    for family in ("a100", "h100"):
        if kind.startswith(family):
            return f"{family}-80gb" if "80" in kind[len(family):] else family
    return None


def profile_share(name: str) -> float:
    """A MIG profile's share of its GPU's compute (slices / 7), from any family's name."""
    for family in ("a100", "a100-80gb", "h100"):
        try:
            return mig_profile(name, family).compute / COMPUTE_SLICES
        except UnknownMigProfile:
            continue
    raise UnknownMigProfile(f"unknown MIG profile {name!r} (known: 1g.5gb ... 7g.40gb on "
                            "A100 40GB, 1g.10gb ... 7g.80gb on A100 80GB and H100, or 1g, 2g, "
                            "3g, 4g, 7g)")
