"""``python -m kernelcast`` runs the command line."""

import sys

from kernelcast.cli import main

sys.exit(main())
