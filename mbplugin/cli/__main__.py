"""``python -m mbplugin.cli``: the same as the ``mbplugin`` console script."""

import sys

from mbplugin.cli import main

sys.exit(main())
