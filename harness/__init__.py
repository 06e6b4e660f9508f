"""The Python around the C programs: harnesses that run bin/* and report on
them, and the PyTorch reference model. Everything runs from the repository
root as a module, e.g. `python3 -m harness.compare`.

Programs, each run as `python3 -m harness.NAME`: it parses its options,
calls the library and prints; none imports another (tests/house/house.py checks).

  compare.py      make compare: architectures of matched size, seeds, token and time budgets
  probe.py        make probe: MQAR and copy recall probes per architecture
  zoology.py      make probe PROBE_ARGS=--zoology: MQAR under the Zoology protocol, accuracy against state size
  paper.py        make paper: the paper's configuration (arXiv 2512.19428), per recipe, with statistics and ablation
  runs_page.py    a run folder's page, or several runs' curves on one page
  bench/          make bench: speed and memory against PyTorch and sgemm (reads bin/train --json),
                  one module per section (train, mixers, kernel, blas, load, mpi, scaling, layouts, generate);
                  torch_mixers.py and torch_generate.py: the PyTorch sides of the mixers and generate sections
  bench_torch.py  one PyTorch training run, for make bench
  bench_bpe.py    BPE training and encoding speed against SentencePiece, HF tokenizers, tiktoken
  torch_train.py  trains the PyTorch reference as bin/train would, for comparing losses

The library:

  lib/            what compare, paper, probe and zoology are made of: their runs, reports, plots and pages
                  (lib/__init__.py: the map)
  archs.py        the architectures they compare: [NAME=]MIXERS[:KEY=VALUE]..., parsed and size-matched
                  (bin/train --count-params)
  registry.py     the mixers as the C library's registry describes them (bin/info --mixers --json): the
                  harnesses read every name, option, size and state there and keep none of their own
  experiments.py  the defaults that name mixers (experiments/defaults.json, outside harness/)
  mixers/         one PyTorch reference per mixer, found by its name (mixers/__init__.py: the interface)
  stats.py        Welch's t-test (Student's t through the incomplete beta), standard library only
  report_page.py  the self-contained HTML page of a report (report_page.html), and the colours runs are drawn in
  results.py      the results files and training logs read back as untrusted data, each through a schema
  torch_ref.py    the PyTorch reference model around the mixers' references (also used by tests/parity/parity.py)
  torch_muon.py   a PyTorch Muon written from the algorithm
  safetensors_np.py  reads checkpoints and gradient dumps into numpy (also used by tests/)
  base.py         the bottom, importing nothing of the harness: paths, the harness's name, dying with one line
  common.py       what the programs share: those, running a program, reading its output
  procs.py        the programs a harness runs: each in a process group of its own, stopped with it
                  (SIGINT, SIGTERM, SIGHUP forwarded, waited for, partial files removed)
  files.py        what a harness writes (the C programs' output rule: a temporary, then a rename;
                  never through a link, never a FIFO, device or folder) and how it opens what it reads
  config.py       --config: bin/train's experiment file through the options' own type and choice checks

Nothing here is imported by the C build; tests/ imports the library as
`from harness.x import ...`. No mixer is named
here but in its own reference and make paper's own experiment (harness/paper.py,
harness/lib/paper/), every file stays under 450 lines (tests/house/house.py checks)."""
