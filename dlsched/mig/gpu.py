"""One MIG GPU's instances, and the rule for changing them.

Instances that run a job never move. A new instance may be created in free slices at any time
(the others are untouched); an instance is destroyed when its job ends. A layout that would
need slices held by running instances is a **repartition**: allowed only while the GPU is
idle, so the scheduler first **drains** the GPU (no new job starts on it; it is repartitioned
when its last job ends). ``MigGpu`` counts every instance created or destroyed
(``reconfigurations``) and every drain.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlsched.mig.profiles import COMPUTE_SLICES, MEMORY_SLICES, MigProfile


@dataclass(frozen=True, slots=True)
class Instance:
    """A GPU instance: its profile, first memory slice and the job it runs."""

    profile: MigProfile
    start: int
    job_id: str

    @property
    def memory_range(self) -> range:
        return range(self.start, self.start + self.profile.memory_slices)


@dataclass
class MigGpu:
    index: int
    instances: list[Instance] = field(default_factory=list)
    draining: bool = False
    reconfigurations: int = 0
    drains: int = 0

    @property
    def compute_used(self) -> int:
        return sum(i.profile.compute for i in self.instances)

    @property
    def memory_used(self) -> int:
        return sum(i.profile.memory_slices for i in self.instances)

    @property
    def idle(self) -> bool:
        return not self.instances

    def fits(self, profile: MigProfile, start: int, restore: bool = False) -> bool:
        """Whether an instance of ``profile`` can be created at ``start`` now (``restore``:
        an instance a cycle took away for a moment comes back, which a drain allows)."""
        if start not in profile.starts or (self.draining and not restore):
            return False
        if self.compute_used + profile.compute > COMPUTE_SLICES:
            return False
        wanted = range(start, start + profile.memory_slices)
        if wanted.stop > MEMORY_SLICES:
            return False
        return all(not _overlap(wanted, i.memory_range) for i in self.instances)

    def starts_for(self, profile: MigProfile) -> list[int]:
        """The allowed starts where ``profile`` fits now."""
        return [s for s in profile.starts if self.fits(profile, s)]

    def create(self, profile: MigProfile, start: int, job_id: str,
               restore: bool = False) -> Instance:
        if not self.fits(profile, start, restore):
            raise ValueError(f"GPU {self.index}: {profile.name} does not fit at slice {start}")
        instance = Instance(profile, start, job_id)
        self.instances.append(instance)
        self.reconfigurations += 1
        return instance

    def destroy(self, job_id: str) -> None:
        """The job's instance goes; a drained GPU that becomes idle is ready again."""
        self.instances = [i for i in self.instances if i.job_id != job_id]
        self.reconfigurations += 1
        if self.draining and self.idle:
            self.draining = False

    def drain(self) -> None:
        if not self.draining and not self.idle:
            self.draining = True
            self.drains += 1


def _overlap(a: range, b: range) -> bool:
    return a.start < b.stop and b.start < a.stop
