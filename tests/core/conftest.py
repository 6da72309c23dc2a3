"""The core tests see the GPU strategies' cost models, as any process with an adapter does:
importing blurapp.gpu.strategies registers them with the planner (it creates no device)."""

from __future__ import annotations

import blurapp.gpu.strategies  # noqa: F401  (registers the cost models)
