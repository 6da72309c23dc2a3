"""``python -m blurapp`` does what the ``blurapp`` command does."""

import sys

from blurapp.cli import main

sys.exit(main())
