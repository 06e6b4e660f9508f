"""One PyTorch reference per mixer of the C library's registry, one file
each, found by the mixer's name: harness/mixers/NAME.py for the mixer NAME
of src/mixers/mixer.c. harness/torch_ref.py builds the model around them,
tests/parity/parity.py checks every registered mixer that has one against the C
code's gradients (and names those that have none).

A reference exposes

    def forward(W, prefix, h, cfg, layer):

W a dict of the model's tensors by their full names (prefix + the mixer's
own, as bin/info --mixers --json lists them), prefix "h.{layer}.", h the
block's normalised input (B, T, C), cfg the model's config as the
checkpoint's config JSON holds it (a dict), layer the layer's index; it
returns the mixer's output (B, T, C), causally, as the C forward computes
it. Its tensors' names and shapes are the C code's (init_weights takes
them from the registry): a reference writes no layout of its own.

Optionally, for make bench: chunked(cfg, layer), None or (a function like
forward, one line saying what it is), a form of the layer written to be fast
in PyTorch (harness/bench/torch_mixers.py times it); and Cache(W, prefix,
cfg, layer), whose step(h, t0) takes h (n, C) at positions t0 .. t0 + n - 1
and returns their outputs, keeping what later positions need (a decoding
loop's cache: harness/bench/torch_generate.py)."""
