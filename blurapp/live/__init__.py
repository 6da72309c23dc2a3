"""The live preview without Qt: what runs next and what is cancelled (:mod:`.scheduler`), how
much a change's first picture is reduced and how large a tile is (:mod:`.plan`, from measured
rates), and the image and kernel scaling the reduced pictures use (:mod:`.scaling`).

The window's widgets (blurapp/ui/worker.py, ui/jobs.py, ui/main_window.py) observe this
package; nothing here imports Qt (an import-linter contract in pyproject.toml).
"""

from blurapp.live.plan import FIRST_BUDGET_MS, RATES, TILE_BUDGET_MS, FirstPicture, Rates
from blurapp.live.scaling import downscale, reduced_kernel
from blurapp.live.scheduler import BACKGROUND, REFINE, USER, Preempted, Scheduler, Superseded

__all__ = [
    "BACKGROUND",
    "FIRST_BUDGET_MS",
    "RATES",
    "REFINE",
    "TILE_BUDGET_MS",
    "USER",
    "FirstPicture",
    "Preempted",
    "Rates",
    "Scheduler",
    "Superseded",
    "downscale",
    "reduced_kernel",
]
