"""blurapp: filter images with convolution kernels on the GPU through WebGPU compute shaders.

The public Python API is :func:`filter_image`; nothing here touches the GPU at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from blurapp.pipeline import FilterResult


def filter_image(image: Any, kernel: Any, **kwargs: Any) -> FilterResult:
    """Filter ``image`` with ``kernel``; see :func:`blurapp.pipeline.filter_image`."""
    from blurapp.pipeline import filter_image as _filter_image

    return _filter_image(image, kernel, **kwargs)


__all__ = ["__version__", "filter_image"]
