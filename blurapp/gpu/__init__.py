"""WebGPU compute: device, strategies, engine, calibration.

Importing the package registers every strategy's cost model with the planner
(:mod:`blurapp.gpu.strategies`), so that whoever asks the GPU for its limits plans with them.
Nothing here touches the GPU at import time.
"""

from blurapp.gpu import strategies as strategies
