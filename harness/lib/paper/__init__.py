"""make paper's library (harness/paper.py parses its options and calls it):
the Grassmann paper's own experiment (arXiv 2512.19428), so its
architectures (the Transformer, the Grassmann model, the hybrid, the
controls) are named here, as tests/house/house.py records.

  setup.py     the paper's tables and numbers, the recipes, the architectures and controls, the data, and
               harness.compare's command for one recipe's column
  runs.py      the runs read back from each recipe's compare report, and the ratios and p-values of them
  controls.py  paper.md's tables of the controls: pair kinds, sliding window, hybrids
  ablation.py  the per-window ablation of the Grassmann model
  report.py    paper.md, paper.json, paper.html and the plot"""
