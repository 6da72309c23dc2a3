"""Timing of one filter run: per-pass GPU (or wall-clock) milliseconds and modelled traffic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Timer = Literal["gpu", "wall"]


@dataclass(frozen=True)
class PassTiming:
    """One pass (one dispatch) of a strategy.

    Arguments:
        name: the pass, e.g. ``"rows"``, ``"cols"``, ``"transpose"``, ``"direct"``.
        ms: its duration in milliseconds, from GPU timestamps or the wall clock.
        bytes_modelled: global-memory bytes the pass reads and writes, halo included.
    """

    name: str
    ms: float
    bytes_modelled: int = 0


@dataclass(frozen=True)
class Timing:
    """The timing of one run.

    ``timer`` says where the pass figures come from: ``"gpu"`` (timestamp queries) or
    ``"wall"`` (the clock around submit-and-wait). ``wall_ms`` is the whole call as the caller
    saw it, upload and readback included; ``compile_ms`` the part of it spent compiling
    shaders and pipelines. ``first_run``: the run used a pipeline for the first time, so its
    figures are not a warm run's (drivers such as lavapipe also finish compiling at the first
    dispatch, inside the first pass's time); rankings use warm runs.
    """

    passes: tuple[PassTiming, ...]
    timer: Timer
    pixels: int
    wall_ms: float
    compile_ms: float = 0.0
    first_run: bool = False

    @property
    def total_ms(self) -> float:
        return float(sum(p.ms for p in self.passes))

    @property
    def bytes_modelled(self) -> int:
        return int(sum(p.bytes_modelled for p in self.passes))

    @property
    def mpix_per_s(self) -> float:
        return self.pixels / (self.total_ms * 1e3) if self.total_ms > 0 else float("inf")

    @property
    def gbps_effective(self) -> float:
        return self.bytes_modelled / (self.total_ms * 1e6) if self.total_ms > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "timer": self.timer,
            "passes": [
                {"name": p.name, "ms": p.ms, "bytes_modelled": p.bytes_modelled}
                for p in self.passes
            ],
            "total_ms": self.total_ms,
            "wall_ms": self.wall_ms,
            "compile_ms": self.compile_ms,
            "first_run": self.first_run,
            "pixels": self.pixels,
            "mpix_per_s": self.mpix_per_s,
            "bytes_modelled": self.bytes_modelled,
            "gbps_effective": self.gbps_effective,
        }
