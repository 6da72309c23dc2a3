"""benchmarks/ndimage_vs_scipy.py runs as its docstring says: any HxW shape through --sizes,
a row per case in the JSON with both libraries' samples (issue 23 item 7's figures come from
this script, so it must not break silently)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ndimage_vs_scipy.py"


def test_the_benchmark_runs_a_shape_given_as_hxw(tmp_path) -> None:
    out = tmp_path / "b.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "67x131", "--cases", "uniform,sobel",
         "--rounds", "2", "--repeat", "1", "--no-extras", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert [(r["shape"], r["case"]) for r in rows] == [
        ("67x131", "uniform_filter 5"),
        ("67x131", "sobel axis 0"),
    ]
    for r in rows:
        assert len(r["blurapp_samples_ms"]) == len(r["scipy_samples_ms"]) == 2
        assert r["speedup"] > 0 and r["lowest_round"] > 0
    assert "67x131" in run.stdout and "uniform_filter 5" in run.stdout
    # The two-CPU probe, at the start and the end: a slow hour of a shared machine shows there.
    for key in ("cpus_together", "cpus_together_end"):
        probe = data[key]
        assert probe["one_thread_ms"] > 0 and probe["together_ms"] > 0
        assert abs(probe["ratio"] - probe["together_ms"] / probe["one_thread_ms"]) < 0.01
    assert run.stdout.count("two CPUs at once") == 2
