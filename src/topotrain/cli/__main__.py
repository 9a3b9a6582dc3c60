"""``python -m topotrain.cli``: the ``topotrain`` command."""

import sys

from topotrain.cli import main

sys.exit(main())
