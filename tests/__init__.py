"""The Python of the tests, run from the repository root as modules
(/usr/bin/python3 -m tests.parity, -m tests.harness.compare_test): parity/
(the C programs against PyTorch and other references), harness/ (the
harnesses' tests), tools/ (forged checkpoints, GPT-2-sized models, what the
shell suites read back), house/ (the house's rules, the docs' links and
options), fuzz/ (the Hypothesis fuzzers). This file makes tests/ a regular
package, so that `-m tests.x` finds these even where some installed package
is also called `tests`."""
