"""Batch latency of a (non-LLM) DNN model: a measured table ``batch size -> seconds``,
interpolated linearly in the batch size (Clockwork, Gujarati et al., OSDI'20, §4: DNN inference
latency is predictable and close to affine in the batch size)."""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.perf.inference.curve import Curve


@dataclass(frozen=True)
class BatchLatency:
    curve: Curve
    max_batch: int

    @classmethod
    def from_table(cls, table: dict[int, float]) -> BatchLatency:
        """``table``: batch size -> seconds, two or more entries."""
        xs = sorted(table)
        if len(xs) == 1:  # one measurement: latency independent of batch
            xs = [xs[0], xs[0] + 1]
            table = {**table, xs[1]: table[xs[0]]}
        return cls(Curve(tuple(float(x) for x in xs), tuple(table[x] for x in xs)), max(xs))

    def seconds(self, batch: int) -> float:
        return self.curve(batch)
