"""The C programs against independent references: parity.py (the model's loss and every gradient
against PyTorch autograd; run as python3 -m tests.parity), muon_test.py (the Muon step against a
PyTorch Muon), gpt2_convert.py (bin/convert against GPT-2 as Hugging Face defines it)."""
