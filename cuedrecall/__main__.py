"""``python -m cuedrecall``: the same command line as the ``cuedrecall`` script."""

import sys

from cuedrecall.cli import main

sys.exit(main())
