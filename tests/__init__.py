"""The Python of the tests, run from the repository root as modules
(/usr/bin/python3 -m tests.parity): parity.py (the C model against PyTorch
autograd), mpi_compare.py (two bin/train runs), ckpt_forge.py and
ckpt_poison.py (hostile checkpoints), bench_test.py (make bench's scaling
section). This file makes tests/ a regular
package, so that `-m tests.x` finds these even where some installed package
is also called `tests`."""
