"""Bundled sample images (see samples/LICENSES.md) and desktop-integration sources."""
