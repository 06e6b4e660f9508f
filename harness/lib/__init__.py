"""The library the harness programs share (compare, paper, probe and its
Zoology protocol): everything they do but parse their options, call it and
print. No program lives here, and no program imports another (tests/house/house.py
checks).

  summary.py         how the reports say their numbers: means with t intervals, ratios, p-values and verdicts
                     from 3 seeds on, the architectures' table
  trained.py         whether a run trained: diverged, or stuck at the loss of token frequencies alone; whether
                     its loss falls with context
  runfolders.py      sweeps of run folders: each run's scores.json, the sweep's sweep.json, --resume's checks
  evals.py           --evals NAME=FILE: the kind of each task file, bin/eval's scores of it, their columns
  compare/           make compare's runs, report, page, plots and --ablate
  paper/             make paper's configuration, runs read back, report, controls and per-window ablation
  recall.py          what make probe and its Zoology protocol share: positions, sizes, a run's bin/train command,
                     training and scoring it in its run folder
  probe_report.py    probe.json's schema, probe.md and the plot
  zoology_report.py  zoology.json's schema, --resume's checks, zoology.md, the plot and the page

The foundations beside it in harness/ (common, procs, files, config,
registry, results, archs, experiments, stats, report_page) are what every
harness, this library and the tests use."""
