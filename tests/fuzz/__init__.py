"""The Hypothesis fuzzers (harness_fuzz.py: the harnesses' readers of results files;
info_fuzz.py: bin/info's reader of run folders), run as python3 -m tests.fuzz.NAME; the
libFuzzer harnesses (fuzz_*.c) are C, built by make fuzz."""
