"""``python -m meshopt_batch_app``: the ``meshopt-batch`` command line."""

import sys

from .cli import main

sys.exit(main())
