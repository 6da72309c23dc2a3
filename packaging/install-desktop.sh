#!/bin/sh
# Install blurapp's desktop entry, AppStream metainfo and icon for the current user (Linux,
# freedesktop.org menus), from the assets shipped inside the installed package.
# Usage: packaging/install-desktop.sh [PYTHON]   (default: python3 with blurapp installed)
set -eu
PYTHON=${1:-python3}
ASSETS=$("$PYTHON" -c 'import importlib.resources as r; print(r.files("blurapp.assets"))')
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
install -Dm644 "$ASSETS/blurapp.desktop" "$DATA/applications/blurapp.desktop"
install -Dm644 "$ASSETS/blurapp.metainfo.xml" "$DATA/metainfo/blurapp.metainfo.xml"
install -Dm644 "$ASSETS/blurapp.svg" "$DATA/icons/hicolor/scalable/apps/blurapp.svg"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$DATA/applications" || true
echo "installed blurapp.desktop, metainfo and icon under $DATA"
