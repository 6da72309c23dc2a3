"""Bundled sample images (see samples/LICENSES.md) and the application icon (blurapp.svg and
icons/blurapp-<n>.png, rendered from it by packaging/render-icons.py)."""
