"""make bench: speed and memory of this project's C programs on this machine,
against PyTorch running the same model, and against the machine's own sgemm.
Run from the repository root: /usr/bin/python3 -m harness.bench [options].
What it knows of a run of bin/train it reads from bin/train --json (the
model's FLOPs, weight matrices, memory, BLAS kernel, --profile) and its --log
CSV (the step times); bin/eval and bin/gemm-rate are read through --json too.

--threads N is one count for every section; a comma list gives scaling and
layouts their counts (the largest serving the other sections) and, without
--sections, adds those two sections to the default six. --no-torch skips
PyTorch; --torch-python PATH runs it with another interpreter (where the
PyTorch to compare against is installed). --quick runs fewer steps and one
round (about two minutes on 2 cores for the default sections; the full run
about fifteen). Every number printed is measured by this run; what could not
be measured is said so. Progress goes to stderr; --json prints one JSON object
instead of the tables (scaling: {threads, rows, default_threads}, layouts:
{rows, fastest}, rows with named fields; train: one row per config, mixer and
precision, with bf16_over_fp32 and torch_bf16_over_fp32 on bf16 rows, the
row's GEMM rate under sgemm, and eval and sample null on all but the first
precision's). --plot FILE draws the generate section's decode tokens/s against
context length into FILE (PNG, gnuplot; refused without that section in
--sections) and says "wrote FILE" after the report.

One module per section (train, mixers, kernel, blas, load, mpi, scaling,
layouts, generate), each with its printer; shared.py holds what they share,
main.py the options and the report, torch_mixers.py the PyTorch side of the
mixers section (the chunked forms the mixers' references offer),
torch_generate.py that of the generate section (their decoding caches).
--mixers: of experiments/defaults.json's bench.mixers (registered mixers, and
architectures of one with options of their own) and every registered mixer;
by default the mixers section runs all of bench.mixers, the others
bench.default_mixers."""
