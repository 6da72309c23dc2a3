"""A zoomable, pannable image view (fit, 1:1, wheel), optionally a before/after split, and a
link that keeps several views' zoom and position together."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QGraphicsPixmapItem, QGraphicsScene, QGraphicsView, QWidget

ZOOM_STEP = 1.25
MIN_SCALE = 1 / 64
MAX_SCALE = 64.0
DIVIDER_GRAB_PX = 8  # how close (in screen pixels) a press must be to grab the split divider


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
        self._before: QPixmap | None = None
        self._split = False
        self._divider = 0.5
        self._dragging_divider = False
        self._fit = True
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setBackgroundBrush(QColor(48, 48, 48))
        self.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, smooth)
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        self.horizontalScrollBar().valueChanged.connect(self.view_changed)
        self.verticalScrollBar().valueChanged.connect(self.view_changed)

    # ---- content -------------------------------------------------------------------------
    def set_image(self, image: QImage | QPixmap | None, *, before: QImage | None = None) -> None:
        """Show ``image`` (``None`` clears); the zoom is kept unless the size changed."""
        pixmap = (
            QPixmap()
            if image is None
            else (image if isinstance(image, QPixmap) else QPixmap.fromImage(image))
        )
        size_changed = pixmap.size() != self._item.pixmap().size()
        self._item.setPixmap(pixmap)
        self.scene().setSceneRect(QRectF(pixmap.rect()))
        if before is not None:
            self._before = QPixmap.fromImage(before)
        if size_changed and self._fit:
            self.fit()
        self.viewport().update()

    def set_before(self, image: QImage | None) -> None:
        """The image painted left of the divider in split mode."""
        self._before = None if image is None else QPixmap.fromImage(image)
        self.viewport().update()

    def has_image(self) -> bool:
        return not self._item.pixmap().isNull()

    def image_size(self) -> tuple[int, int]:
        """(width, height) of the shown image."""
        size = self._item.pixmap().size()
        return size.width(), size.height()

    # ---- zoom ----------------------------------------------------------------------------
    def scale_factor(self) -> float:
        return float(self.transform().m11())

    def fit(self) -> None:
        """Fit the whole image into the view (and keep fitting when the window resizes)."""
        self._fit = True
        if self.has_image():
            self.fitInView(self._item, Qt.AspectRatioMode.KeepAspectRatio)
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
