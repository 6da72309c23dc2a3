"""``python -m blurapp`` does what the ``blurapp`` command does."""

import sys

try:
    from blurapp.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python starts: as interrupted as later
    print("blurapp: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
