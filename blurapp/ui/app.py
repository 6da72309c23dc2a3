"""Start the desktop application: ``run_gui`` is what ``blurapp``, ``blurapp IMAGE`` and
``blurapp gui`` call."""

from __future__ import annotations

import gc
import importlib.resources
import os
import sys
from collections.abc import Mapping

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication

from blurapp import __version__
from blurapp.core.errors import BlurappError
from blurapp.process import prepare_process
from blurapp.ui.theme import apply_theme

ORGANIZATION = "blurapp"
APPLICATION = "blurapp"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)  # assets/icons/blurapp-<n>.png


def app_icon() -> QIcon:
    """The application icon, from the PNG sizes shipped in ``blurapp.assets``.

    The PNGs are read as bytes, so the icon needs neither Qt's SVG plugin nor files on disk.

    Returns:
        A QIcon with every size in ICON_SIZES.

    Raises:
        FileNotFoundError: when a size did not ship (a packaging bug that the tests catch).
    """
    icons = importlib.resources.files("blurapp.assets").joinpath("icons")
    icon = QIcon()
    for size in ICON_SIZES:
        pixmap = QPixmap()
        if pixmap.loadFromData(icons.joinpath(f"blurapp-{size}.png").read_bytes(), "PNG"):
            icon.addPixmap(pixmap)
    return icon


#: BLAS threads of the window's process (``BLURAPP_BLAS_THREADS``: a number, or ``off`` to
#: leave OpenBLAS's own choice).
BLAS_THREADS_ENV = "BLURAPP_BLAS_THREADS"


def limit_blas_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """One BLAS thread for the window (threadpoolctl), unless ``BLURAPP_BLAS_THREADS`` says
    otherwise. The window's BLAS calls are small (a kernel's SVD per change, a preview kernel's
    resampling) and come from several threads at once: with OpenBLAS's threads (one per core)
    each call waits for the others' on a loaded machine. Measured here, load average 11 on
    2 cores: a 91x91 SVD took 500-530 ms with OpenBLAS's threads, 1.5-5 ms with one (it runs
    on the UI thread for every kernel typed).

    Returns:
        The limit set, or ``None`` when left alone.
    """
    text = (environ if environ is not None else os.environ).get(BLAS_THREADS_ENV, "1").strip()
    if text.lower() in ("off", "0", ""):
        return None
    try:
        threads = max(1, int(text))
    except ValueError:
        threads = 1
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")
    return threads


#: How often CPython makes a thread that holds the GIL hand it over to one that waits for it,
#: in seconds, in the window's process (``BLURAPP_SWITCH_INTERVAL``; Python's default 0.005).
SWITCH_INTERVAL_ENV = "BLURAPP_SWITCH_INTERVAL"
SWITCH_INTERVAL_S = 0.001


def shorten_gil_switch(environ: Mapping[str, str] | None = None) -> float:
    """The GIL handed over every :data:`SWITCH_INTERVAL_S` instead of Python's 5 ms.

    The UI thread takes the GIL back each time Qt calls into Python (a slot, an event
    handler, a paint) and after each call that let it go; while the window's workers run
    Python (numpy calls, wgpu submissions, the scheduler's bookkeeping) each of those waits
    up to the switch interval. A frame of the UI is dozens of them: with 5 ms, the UI thread
    of a 12 MP session sat in ``take_gil`` for 40-100 ms at a time (perf sched_switch stacks),
    neither running nor waiting for a core. The workers pay a few more switches a second.
    """
    text = (environ if environ is not None else os.environ).get(SWITCH_INTERVAL_ENV, "")
    try:
        seconds = float(text) if text.strip() else SWITCH_INTERVAL_S
    except ValueError:
        seconds = SWITCH_INTERVAL_S
    if not 1e-6 <= seconds <= 1.0:
        seconds = SWITCH_INTERVAL_S
    sys.setswitchinterval(seconds)
    return seconds


#: What the window's first seconds import on its worker threads, imported before the window
#: exists instead (:func:`preload_modules`).
PRELOADED = (
    "wgpu.backends.wgpu_native",  # wgpu-native, and cffi reading its header
    "blurapp.gpu.engine",  # the device's code, the shader templates (jinja2, markupsafe)
    "blurapp.gpu.calibration",
    "numpy.random",  # the calibration's inputs
    "PIL.Image",  # the first open's decoder, and its format plugins (Image.preinit)
)


def preload_modules() -> list[str]:
    """Import :data:`PRELOADED` now, before the window exists, instead of on the worker
    threads in the window's first seconds.

    Two stalls of the UI thread came from those imports (perf, py-spy dumps taken while the
    heartbeat was late):

    - wgpu's backend: cffi reads wgpu's header, 0.35 s of pure Python with a cold cache
      (0.06 s from :mod:`blurapp.gpu.cffi_speedup`'s cache), which the adapter probe's thread
      ran while the photo opened, handing the GIL back and forth with the UI thread every
      millisecond (50-140 ms stalls at 0.2-0.4 s after the open).
    - an extension module's import (``dlopen``) holds the GIL and waits for the dynamic
      loader's lock, which the probe holds while the Vulkan driver loads LLVM: the files lane
      importing Pillow's ``_imaging`` for the first open froze every Python thread for
      440 ms (a cold page cache; the whole load, seconds from a busy disk).

    The window comes later by the imports, once (about 0.15 s here with warm caches). A
    module that fails to import is left for its user to report (the probe says what is
    wrong with the GPU, in the window).

    Returns:
        The modules that did not import.
    """
    failed = []
    for name in PRELOADED:
        try:
            module = importlib.import_module(name)
        except Exception:  # reported where it is used
            failed.append(name)
            continue
        if name == "PIL.Image":
            module.preinit()  # BMP, GIF, JPEG, PPM and PNG plugins, as the first open loads
    return failed


_frozen: set[str] = set()


def freeze_heap(moment: str) -> bool:
    """Move every object alive now out of the garbage collector's reach (``gc.freeze``), once
    per process for each ``moment`` of the start-up (``"start"``, ``"adapter"``).

    What the window's start-up made (Qt's wrappers, wgpu's and cffi's declarations, numpy,
    the modules) lives as long as the process; a full collection walks all of it, on
    whichever thread allocates: 25-50 ms with the GIL held, one of the window's stalls
    (gc.callbacks in the live benchmark, 48.6 ms at 15.9 s). Frozen, a full collection walks
    only what came later. Called once the window's start-up is done, and after the adapter
    probe (the device's objects), each after one collection so that no garbage is frozen;
    objects freed by their reference counts are freed as before.
    Once per moment, so that a process that makes many windows (the tests) does not keep
    the cycles of each one it closed.

    Returns:
        Whether it froze now.
    """
    if moment in _frozen:
        return False
    _frozen.add(moment)
    gc.collect()  # garbage is collected, not frozen (1.6 ms at the probe, after the start's)
    gc.freeze()
    return True


def make_app(argv: list[str] | None = None) -> QApplication:
    """The process's QApplication (created once), named so QSettings finds its file.

    Creating it is starting the GUI, an entry point (``python -m blurapp.ui.screenshot`` comes
    here without the command line): the process-wide set-up is made first.
    """
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QCoreApplication.setApplicationVersion(__version__)
    app = QApplication.instance()
    if app is None:
        prepare_process()  # XDG_RUNTIME_DIR before Qt and the Vulkan driver look for one
        limit_blas_threads()
        shorten_gil_switch()
        preload_modules()
        freeze_heap("start")
        app = QApplication(argv if argv is not None else sys.argv[:1])
    apply_theme(app)  # the system's light or dark scheme, or BLURAPP_THEME
    app.setDesktopFileName("blurapp")  # packaging/blurapp.desktop; Wayland's icon comes from it
    app.setWindowIcon(app_icon())  # X11 and the window's title bar use this one
    return app  # type: ignore[return-value]


def check_screen(environ: Mapping[str, str] | None = None) -> None:
    """Fail with one line, not Qt's abort, when a Linux session has no display server."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        raise BlurappError(
            "no screen to open the window on (DISPLAY and WAYLAND_DISPLAY are unset): run it "
            "in a desktop session, or filter headlessly with "
            "'blurapp apply IN -o OUT --kernel SPEC'"
        )
    display = env.get("DISPLAY")
    if display and not env.get("WAYLAND_DISPLAY") and _x_display_answers(display) is False:
        raise BlurappError(
            f"cannot open the display {display!r}: no X server answers there (is DISPLAY "
            "right?); filter headlessly with 'blurapp apply IN -o OUT --kernel SPEC'"
        )


def _x_display_answers(display: str) -> bool | None:
    """Whether an X server accepts a connection on ``display`` (through libxcb, as Qt's xcb
    platform would connect); ``None`` when libxcb cannot be loaded to ask. Qt itself aborts
    the process (a core dump) when the connection fails."""
    import ctypes
    import ctypes.util

    try:
        xcb = ctypes.CDLL(ctypes.util.find_library("xcb") or "libxcb.so.1")
    except OSError:
        return None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)
    try:
        return connection is not None and xcb.xcb_connection_has_error(connection) == 0
    finally:
        if connection is not None:
            xcb.xcb_disconnect(connection)


def run_gui(image_path: str | None) -> int:
    """Open the main window on ``image_path`` (the bundled sample when ``None``) and run it.

    Arguments:
        image_path: an image file to open, or ``None`` for the bundled sample photo.

    Returns:
        The event loop's exit code (0 on a normal quit).

    Raises:
        BlurappError: on Linux with no screen to open a window on (Qt would abort instead).
    """
    check_screen()
    app = make_app()
    from blurapp.ui.main_window import MainWindow

    window = MainWindow()
    window.show()
    if image_path is None or not window.open_path(image_path):
        # A file that cannot be opened was explained in a dialog; show the sample meanwhile.
        window.open_sample()
    code = app.exec()
    window.runner.wait_idle()  # let a job in flight finish before its window goes away
    return code
