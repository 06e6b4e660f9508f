"""python3 -m tests.parity [--kernel-paths]: the C model against PyTorch autograd (parity.py)."""
import sys

from tests.parity.parity import main

sys.exit(main())
