"""make compare's library (harness/compare.py parses its options and calls it):

  runs.py      the runs: budgets, folder names, compare.csv's columns, the Harness that trains one run into
               its run folder (bin/train), continues it (--resume) and scores it (bin/eval), and the sweep
  report.py    compare.md and compare.csv of the runs: the reading, the tables, the evaluations
  page.py      compare.html: the report and every run's curves in one page
  plots.py     the plots, through gnuplot
  ablation.py  --ablate: the modern recipe's switches one at a time, and ablation.md"""
