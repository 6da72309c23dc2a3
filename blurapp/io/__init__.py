"""File I/O beside the numpy-only core: image decoders and encoders, kernel files, and the one
atomic writer that every output of blurapp goes through (DESIGN.md, "Layers").

``blurapp.io.images`` reads and writes images through the codec registry ``blurapp.io.codecs``
(one module per format, camera raw read only);
``blurapp.io.kernels`` writes kernel JSON files; ``blurapp.io.atomic`` holds the writer and the
never-overwrite rule (:func:`check_output` before any work, :func:`atomic_output` to write);
``blurapp.io.tiffstream`` reads and writes large TIFFs a region at a time.
"""

from __future__ import annotations

from blurapp.io.atomic import (
    TEMP_SUFFIX,
    atomic_output,
    check_name_length,
    check_output,
    check_writable,
    file_identity,
    remove_stale_temporaries,
    same_file,
    write_bytes,
    write_text,
)
from blurapp.io.images import (
    DEFAULT_MAX_PIXELS,
    FORMATS,
    Animation,
    ImageData,
    ImageInfo,
    check_pixel_limit,
    default_output_format,
    format_from_path,
    output_dtype,
    probe_image,
    read_image,
    with_frames,
    with_pixels,
    write_image,
)
from blurapp.io.kernels import kernel_json_text, save_kernel

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "FORMATS",
    "TEMP_SUFFIX",
    "Animation",
    "ImageData",
    "ImageInfo",
    "atomic_output",
    "check_name_length",
    "check_output",
    "check_pixel_limit",
    "check_writable",
    "default_output_format",
    "file_identity",
    "format_from_path",
    "kernel_json_text",
    "output_dtype",
    "probe_image",
    "read_image",
    "remove_stale_temporaries",
    "same_file",
    "save_kernel",
    "with_frames",
    "with_pixels",
    "write_bytes",
    "write_image",
    "write_text",
]
