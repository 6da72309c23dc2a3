"""A zoomable, pannable image view (fit, 1:1, wheel), optionally a before/after split, and a
link that keeps several views' zoom and position together.

A view shows an image of a *logical* size (the image's pixels: the scene's coordinates) from a
picture that may be smaller (a display-resolution copy, or a reduced preview), and patches over
it (a region rendered apart, e.g. the exact visible pixels before the whole image is done).

Pictures are colour-managed: given the image's ICC profile (:meth:`ImageView.set_colour_profile`:
a phone's Display P3, a camera's Adobe RGB), every picture, patch and "before" image is
converted from that space to the screen's (:class:`DisplayColour`) as it is painted; the pixels
the app filters and saves stay in the file's own space."""

from __future__ import annotations

import hashlib
import io
import math
import os
import threading

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QColorSpace, QImage, QPainter, QPen, QPixmap, QTransform
from PySide6.QtWidgets import (
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QLabel,
    QWidget,
)

from blurapp.ui.convert import CONVERTED_KEY

ZOOM_STEP = 1.25
MIN_SCALE = 1 / 64
MAX_SCALE = 64.0
DIVIDER_GRAB_PX = 8  # how close (in screen pixels) a press must be to grab the split divider


#: An ICC profile file describing the screen (a calibrated monitor's); unset: sRGB, which is what
#: X11 and most desktops hand an application that asks nothing of the compositor.
DISPLAY_PROFILE_ENV = "BLURAPP_DISPLAY_ICC"


def screen_colour_space() -> QColorSpace:
    """The colour space pictures are converted to: :data:`DISPLAY_PROFILE_ENV`'s profile when it
    names one Qt reads, else sRGB."""
    path = os.environ.get(DISPLAY_PROFILE_ENV)
    if path:
        try:
            with open(path, "rb") as fh:
                space = QColorSpace.fromIccProfile(fh.read())
        except OSError:
            space = QColorSpace()
        if space.isValid():
            return space
    return QColorSpace(QColorSpace.NamedColorSpace.SRgb)


class DisplayColour:
    """Converts pictures from an image's ICC profile to the screen's colour space.

    Qt's own colour management (:class:`QColorSpace`) converts matrix/TRC profiles, which is
    what photos carry (sRGB, Display P3, Adobe RGB, ProPhoto); a profile Qt does not read
    (lookup-table profiles) is converted by littlecms through Pillow's ImageCms instead. No
    profile, or one equal to the screen's, leaves pictures as they are. ``managed`` says
    whether pictures are converted, ``description`` names the source space.
    """

    def __init__(self, icc_profile: bytes | None = None) -> None:
        self.target = screen_colour_space()
        self.source = QColorSpace()
        self.description = ""
        self._lcms = None  # an ImageCms transform where Qt cannot read the profile
        self._workers: tuple[bytes, bytes] | None = None  # (profile, screen's): convert_array
        #: Names the conversion (profile and screen): a picture a worker converted already
        #: carries it (QImage text :data:`CONVERTED_KEY`) and is not converted again.
        self.key = ""
        if not icc_profile:
            self.managed = False
            return
        self.source = QColorSpace.fromIccProfile(icc_profile)
        screen = bytes(self.target.iccProfile())
        self.key = hashlib.sha256(icc_profile + b"\0" + screen).hexdigest()[:16]
        if self.source.isValid():
            self.description = self.source.description()
            self.managed = self.source != self.target
        else:
            self._lcms = _lcms_transform(icc_profile, self.target)
            self.managed = self._lcms is not None
            if self._lcms is not None:
                self.description = self._lcms[2]
        if self.managed:
            self._workers = (icc_profile, screen)  # transforms made by the first worker

    def convert_array(self, pixels: np.ndarray) -> np.ndarray | None:
        """8-bit RGB or RGBA pixels (H×W×3 or ×4) converted for the screen by littlecms, off
        the UI thread: Pillow's ImageCms lets the GIL go while it converts (Qt's converter
        held it 110 ms for a 12 MP Display P3 picture, and took the UI thread 140 ms when the
        view converted it there). ``None`` when this conversion cannot be made so (not
        managed, or a profile littlecms reads as not RGB): the view then converts."""
        if self._workers is None or pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
            return None
        transforms = _shared_transforms(self.key, *self._workers)
        if transforms is None:
            return None
        from PIL import Image, ImageCms

        alpha = pixels.shape[2] == 4
        picture = Image.fromarray(np.ascontiguousarray(pixels), "RGBA" if alpha else "RGB")
        out = ImageCms.applyTransform(picture, transforms[1] if alpha else transforms[0])
        return None if out is None else np.asarray(out)

    def convert(self, image: QImage) -> QImage:
        """``image`` (whose pixels are in the source space) as the screen should show it."""
        if not self.managed or image.isNull():
            return image
        if self._lcms is not None:
            return _lcms_convert(image, self._lcms)
        if image.format() in (QImage.Format.Format_Grayscale8, QImage.Format.Format_Grayscale16):
            if self.source.colorModel() != QColorSpace.ColorModel.Gray:
                # An RGB profile on grey pixels: convert them as the RGB pixels they stand for.
                image = image.convertToFormat(QImage.Format.Format_RGB888)
        tagged = QImage(image)
        tagged.setColorSpace(self.source)
        converted = tagged.convertedToColorSpace(self.target)
        return image if converted.isNull() else converted


_transforms: dict[str, tuple[object, object, str] | None] = {}
_transforms_lock = threading.Lock()


def _shared_transforms(key: str, icc_profile: bytes, screen: bytes) -> tuple | None:
    """The littlecms transforms of one conversion, made once by the first worker that needs
    them (tens of ms each: not on the UI thread, where every view of the window gets its
    own DisplayColour when an image opens) and shared by every view and thread after."""
    with _transforms_lock:
        if key not in _transforms:
            if len(_transforms) > 8:
                _transforms.clear()
            _transforms[key] = _lcms_transform(icc_profile, screen, shared=True)
        return _transforms[key]


def _lcms_transform(
    icc_profile: bytes, target: QColorSpace | bytes, *, shared: bool = False
) -> tuple[object, object, str] | None:
    """(RGB transform, RGBA transform, description) from the profile to ``target`` through
    littlecms, or ``None`` when it cannot read the profile either (the picture is then shown
    as it is). ``shared``: used by several threads at once (littlecms's one-pixel cache off)."""
    try:
        from PIL import ImageCms

        source = ImageCms.ImageCmsProfile(io.BytesIO(icc_profile))
        screen = target if isinstance(target, bytes) else bytes(target.iccProfile())
        dest = (
            ImageCms.ImageCmsProfile(io.BytesIO(screen))
            if screen
            else ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
        )
        if source.profile.xcolor_space.strip() != "RGB":
            return None
        intent = ImageCms.Intent.RELATIVE_COLORIMETRIC
        flags = ImageCms.Flags.NOCACHE if shared else ImageCms.Flags.NONE
        rgb = ImageCms.buildTransform(source, dest, "RGB", "RGB", intent, flags=flags)
        rgba = ImageCms.buildTransform(source, dest, "RGBA", "RGBA", intent, flags=flags)
        return rgb, rgba, ImageCms.getProfileDescription(source).strip()
    except Exception:  # an unreadable profile: no management rather than no picture
        return None


def _lcms_convert(image: QImage, transforms: tuple[object, object, str]) -> QImage:
    from PIL import Image, ImageCms

    alpha = image.hasAlphaChannel()
    fmt = QImage.Format.Format_RGBA8888 if alpha else QImage.Format.Format_RGB888
    image = image.convertToFormat(fmt)
    mode, channels = ("RGBA", 4) if alpha else ("RGB", 3)
    width, height = image.width(), image.height()
    rows = image.constBits().tobytes()
    stride = image.bytesPerLine()
    packed = b"".join(rows[y * stride : y * stride + width * channels] for y in range(height))
    picture = Image.frombytes(mode, (width, height), packed)
    out = ImageCms.applyTransform(picture, transforms[1] if alpha else transforms[0])
    data = out.tobytes()
    return QImage(data, width, height, width * channels, fmt).copy()


class ImageView(QGraphicsView):
    """Shows one image; the wheel zooms under the cursor, dragging pans.

    In split mode a second ("before") image is painted left of a vertical divider that the
    user drags; the divider's position is a fraction of the image width so it survives zooming.
    """

    view_changed = Signal()  # zoom or scroll position changed by the user or by code
    zoom_changed = Signal(float)

    def __init__(self, parent: QWidget | None = None, *, smooth: bool = True) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self._item = QGraphicsPixmapItem()
        self._item.setTransformationMode(
            Qt.TransformationMode.SmoothTransformation
            if smooth
            else Qt.TransformationMode.FastTransformation
        )
        self.scene().addItem(self._item)
        self._smooth = smooth
        self._logical = (0, 0)  # (width, height) of the image shown, in image pixels
        self._patches: list[QGraphicsPixmapItem] = []
        self._note = QLabel(self.viewport())
        self._note.setObjectName("viewNote")
        self._note.setStyleSheet(
            "background: rgba(20, 20, 20, 190); color: #ffd27f; padding: 3px 6px;"
            " border-radius: 3px;"
        )
        self._note.move(8, 8)
        self._note.hide()
        self._before: QPixmap | None = None
        self._split = False
        self._divider = 0.5
        self._dragging_divider = False
        self._fit = True
        self._colour = DisplayColour()
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setBackgroundBrush(QColor(48, 48, 48))
        self.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, smooth)
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        self.horizontalScrollBar().valueChanged.connect(self.view_changed)
        self.verticalScrollBar().valueChanged.connect(self.view_changed)

    # ---- content -------------------------------------------------------------------------
    def set_colour_profile(self, icc_profile: bytes | None) -> None:
        """The ICC profile of the image shown (``None``: sRGB): the pictures given from now on
        are converted from it to the screen's colour space (:class:`DisplayColour`)."""
        self._colour = DisplayColour(icc_profile)

    def colour(self) -> DisplayColour:
        """How pictures are converted for the screen."""
        return self._colour

    def _pixmap(self, image: QImage | QPixmap) -> QPixmap:
        if not self._colour.managed:
            return image if isinstance(image, QPixmap) else QPixmap.fromImage(image)
        picture = image.toImage() if isinstance(image, QPixmap) else image
        if picture.text(CONVERTED_KEY) == self._colour.key:
            return QPixmap.fromImage(picture)  # a worker converted it already
        return QPixmap.fromImage(self._colour.convert(picture))

    def set_image(
        self,
        image: QImage | QPixmap | None,
        *,
        before: QImage | None = None,
        logical_size: tuple[int, int] | None = None,
    ) -> None:
        """Show ``image`` (``None`` clears) as an image of ``logical_size`` (width, height;
        default: the picture's own size): a smaller picture is stretched over it. Patches are
        dropped; the zoom is kept unless the logical size changed."""
        pixmap = QPixmap() if image is None else self._pixmap(image)
        size = logical_size or (pixmap.width(), pixmap.height())
        size_changed = size != self._logical
        self._logical = (int(size[0]), int(size[1]))
        self._item.setPixmap(pixmap)
        if pixmap.isNull() or (pixmap.width(), pixmap.height()) == self._logical:
            self._item.setTransform(QTransform())
        else:
            self._item.setTransform(
                QTransform.fromScale(
                    self._logical[0] / pixmap.width(), self._logical[1] / pixmap.height()
                )
            )
        self.clear_patches()
        self.scene().setSceneRect(QRectF(0, 0, *self._logical))
        if before is not None:
            self._before = self._pixmap(before)
        if size_changed and self._fit:
            self.fit()
        self.viewport().update()

    def set_patch(self, image: QImage, x: float, y: float, scale: float = 1.0) -> None:
        """Paint ``image`` over the picture with its top-left at image pixel (x, y), one
        picture pixel per ``scale`` image pixels; it replaces the patches already shown."""
        self.clear_patches()
        item = QGraphicsPixmapItem(self._pixmap(image))
        item.setTransformationMode(self._item.transformationMode())
        item.setTransform(QTransform.fromScale(scale, scale))
        item.setPos(x, y)
        item.setZValue(1)
        self.scene().addItem(item)
        self._patches.append(item)
        self.viewport().update()

    def clear_patches(self) -> None:
        for item in self._patches:
            self.scene().removeItem(item)
        self._patches.clear()

    def set_before(self, image: QImage | None) -> None:
        """The image painted left of the divider in split mode (stretched over the image)."""
        self._before = None if image is None else self._pixmap(image)
        self.viewport().update()

    def set_note(self, text: str) -> None:
        """A line over the view's top-left corner (e.g. "preview at 25 %…"); "" hides it."""
        if text == self._note.text() and self._note.isVisibleTo(self) == bool(text):
            return  # each change lays the label out and repaints the picture under it
        self._note.setText(text)
        self._note.adjustSize()
        self._note.setVisible(bool(text))

    def note(self) -> str:
        return self._note.text() if self._note.isVisible() else ""

    def has_image(self) -> bool:
        return self._logical[0] > 0 and self._logical[1] > 0

    def has_picture(self) -> bool:
        """Something is painted: the picture or a patch."""
        return not self._item.pixmap().isNull() or bool(self._patches)

    def image_size(self) -> tuple[int, int]:
        """(width, height) of the shown image, in image pixels."""
        return self._logical

    def picture_size(self) -> tuple[int, int]:
        """(width, height) of the picture painted for it (smaller when reduced)."""
        size = self._item.pixmap().size()
        return size.width(), size.height()

    def visible_window(self) -> tuple[int, int, int, int]:
        """``(y0, y1, x0, x1)``: the image pixels the view shows now."""
        width, height = self._logical
        rect = self.mapToScene(self.viewport().rect()).boundingRect()
        x0 = max(0, min(width, math.floor(rect.left())))
        x1 = max(x0, min(width, math.ceil(rect.right())))
        y0 = max(0, min(height, math.floor(rect.top())))
        y1 = max(y0, min(height, math.ceil(rect.bottom())))
        if x1 == x0 or y1 == y0:
            return 0, height, 0, width
        return y0, y1, x0, x1

    def display_factor(self) -> int:
        """Image pixels per screen pixel, rounded down (1 at 50 % zoom and above)."""
        scale = self.scale_factor() * max(1.0, self.devicePixelRatioF())
        if scale <= 0:
            return 1
        return max(1, math.floor(1.0 / scale + 1e-6))

    # ---- zoom ----------------------------------------------------------------------------
    def scale_factor(self) -> float:
        return float(self.transform().m11())

    def is_fitting(self) -> bool:
        """Whether the view keeps the whole image in sight (Fit), rather than a zoom of its own."""
        return self._fit

    def fit(self) -> None:
        """Fit the whole image into the view (and keep fitting when the window resizes)."""
        self._fit = True
        if self.has_image():
            self.fitInView(QRectF(0, 0, *self._logical), Qt.AspectRatioMode.KeepAspectRatio)
        self._changed()

    def actual_size(self) -> None:
        """One image pixel per screen pixel (1:1)."""
        self.set_scale(1.0)

    def zoom_by(self, factor: float) -> None:
        self.set_scale(self.scale_factor() * factor)

    def set_scale(self, scale: float) -> None:
        self._fit = False
        scale = max(MIN_SCALE, min(MAX_SCALE, scale))
        self.setTransform(self.transform().fromScale(scale, scale))
        self._changed()

    def _changed(self) -> None:
        self.zoom_changed.emit(self.scale_factor())
        self.view_changed.emit()

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt override)
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(ZOOM_STEP**steps)
        event.accept()

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802 (Qt override)
        super().scrollContentsBy(dx, dy)
        # The viewport scrolls its child widgets with the picture: the note ("preview at
        # 17 %…") stays in the corner (fitting a 12 MP photo had moved it to (-3353, -2523)).
        self._note.move(8, 8)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if self._fit:
            self.fit()

    # ---- split (before/after) ------------------------------------------------------------
    def set_split(self, enabled: bool) -> None:
        self._split = enabled
        self.viewport().update()

    def divider(self) -> float:
        """The divider's position as a fraction of the image width (0 = all after)."""
        return self._divider

    def set_divider(self, fraction: float) -> None:
        self._divider = max(0.0, min(1.0, fraction))
        self.viewport().update()

    def _divider_view_x(self) -> float:
        width, _ = self.image_size()
        return float(self.mapFromScene(QPointF(width * self._divider, 0)).x())

    def drawForeground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802
        if not (self._split and self._before is not None and self.has_image()):
            return
        width, height = self.image_size()
        x = width * self._divider
        painter.save()
        painter.setClipRect(QRectF(0, 0, x, height).intersected(rect))
        painter.drawPixmap(QRectF(0, 0, width, height), self._before, QRectF(self._before.rect()))
        painter.restore()
        pen = QPen(QColor(255, 255, 255, 220))
        pen.setCosmetic(True)
        pen.setWidth(2)
        painter.setPen(pen)
        painter.drawLine(QPointF(x, 0), QPointF(x, height))

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if (
            self._split
            and event.button() == Qt.MouseButton.LeftButton
            and abs(event.position().x() - self._divider_view_x()) <= DIVIDER_GRAB_PX
        ):
            self._dragging_divider = True
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if self._dragging_divider:
            width, _ = self.image_size()
            if width:
                scene_x = self.mapToScene(event.position().toPoint()).x()
                self.set_divider(scene_x / width)
            event.accept()
            return
        if self._split:
            near = abs(event.position().x() - self._divider_view_x()) <= DIVIDER_GRAB_PX
            self.viewport().setCursor(
                Qt.CursorShape.SplitHCursor if near else Qt.CursorShape.OpenHandCursor
            )
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if self._dragging_divider:
            self._dragging_divider = False
            event.accept()
            return
        super().mouseReleaseEvent(event)


class ViewLink:
    """Keeps the zoom and the scroll position of several :class:`ImageView` s together."""

    def __init__(self) -> None:
        self._views: list[ImageView] = []
        self._busy = False

    def add(self, view: ImageView) -> None:
        self._views.append(view)
        view.view_changed.connect(lambda v=view: self._follow(v))

    def views(self) -> list[ImageView]:
        return list(self._views)

    def _follow(self, source: ImageView) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            transform = source.transform()
            h = source.horizontalScrollBar().value()
            v = source.verticalScrollBar().value()
            for view in self._views:
                if view is source:
                    continue
                view._fit = source._fit
                view.setTransform(transform)
                view.horizontalScrollBar().setValue(h)
                view.verticalScrollBar().setValue(v)
        finally:
            self._busy = False
