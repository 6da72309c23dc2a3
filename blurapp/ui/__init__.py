"""PySide6 desktop application. Nothing below this package imports it."""
