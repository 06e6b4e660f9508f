"""make compare's library (harness/compare.py parses its options and calls it):

  runs.py      the runs: budgets, file names, compare.csv's columns, and the Harness that trains one run
               (bin/train) and scores it (bin/eval)
  report.py    compare.md, compare.csv and compare.html of the runs
  plots.py     the plots, through gnuplot
  ablation.py  --ablate: the modern recipe's switches one at a time, and ablation.md"""
