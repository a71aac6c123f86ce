"""``python -m cutctx_adapters``: the ``cutctx`` command line."""

import sys

from .cli import main

sys.exit(main())
