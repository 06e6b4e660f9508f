"""The Python harnesses' tests (harness/: make compare, paper, probe, bench), each run from the
repository root as python3 -m tests.harness.NAME. Every import of the harness here is absolute
(from harness import ...), so this package's name shadows nothing."""
