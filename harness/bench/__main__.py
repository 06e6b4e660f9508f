"""/usr/bin/python3 -m harness.bench: make bench."""
from harness.bench.main import main
from harness.procs import guarded

guarded(main)
