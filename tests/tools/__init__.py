"""Helpers the tests and measurements run, not tests themselves: hostile checkpoints (ckpt_forge.py,
ckpt_poison.py), GPT-2-sized models (gpt2_forge.py, gpt2_scale.py), and what the shell suites read
back (bpe_files.py, mpi_compare.py); run as python3 -m tests.tools.NAME."""
