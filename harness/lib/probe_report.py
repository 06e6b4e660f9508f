"""make probe's results: probe.json's schema as --report-only reads it
back, and the report of its rows (probe.md and probe_accuracy.png)."""
import os

from harness import registry
from harness.common import command_line, die, gnuplot, gnuplot_series, gnuplot_string
from harness.files import output_text
from harness.results import Int, ListOf, Name, Num, Obj, Text, arch_option_fields, load_json


def runs_schema():
    """probe.json as --report-only reads it back: a list of runs as train_and_score writes them, MQAR
    runs with their pairs, copy runs with their gap and distance, no run twice; an architecture's
    options by their JSON keys (the registry's; older files have none)."""
    return ListOf(Obj({"arch": Name(), "task": Text(choices=("mqar", "copy")), "seq_len": Int(1),
                       "pairs": Int(1, optional=True), "gap": Int(0, optional=True), "n_embd": Int(1), "seed": Int(0),
                       "accuracy": Num(0, 1), "answer_loss": Num(0), "answers": Int(0), "params": Int(1),
                       "pos": Text(choices=("learned", "sinusoidal", "rope"), optional=True),
                       "distance": Int(1, optional=True), "steps": Int(1), "train_seconds": Num(0),
                       "curriculum": Obj({"pairs": Int(1), "steps": Int(1)}, optional=True), **arch_option_fields()},
                      rule=lambda r: ("an MQAR run must give its pairs" if r["task"] == "mqar" and r["pairs"] is None else
                                      "a copy run must give its gap and distance"
                                      if r["task"] == "copy" and (r["gap"] is None or r["distance"] is None) else None)),
                  unique=("arch", "task", "seq_len", "pairs", "gap", "n_embd", "seed"))


def read_rows(out):
    """The runs of OUT/probe.json, checked (runs_schema); dies with one line if they are not."""
    return load_json(os.path.join(out, "probe.json"), runs_schema())



def write_report(a, rows, tasks, archs, total):
    """probe.md (a row per run, the model and training) and probe_accuracy.png (accuracy against
    sequence length for MQAR, against distance for copy, a line per architecture) of a sweep's rows, one
    that took `total` seconds (--report-only: rebuilt from probe.json); returns probe.md's lines."""
    cmd = command_line("harness.probe")
    md = ["# Recall probes", "",
          "| task | seq_len | pairs / gap | distance | architecture | positions | n_embd | parameters | seed | accuracy | answer loss |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pg = r.get("pairs", r.get("gap"))
        dist = r["distance"] if r["distance"] is not None else f"up to {r['seq_len'] - 2}"
        name = registry.label(r["arch"], r)
        md.append(f"| {r['task']} | {r['seq_len']} | {pg} | {dist} | {name} | {r.get('pos', a.pos)} | {r['n_embd']} | {r['params']:,} "
                  f"| {r['seed']} | {r['accuracy']:.3f} | {r['answer_loss']:.3f} |")
    stages = [r["curriculum"] for r in rows if r.get("curriculum")]
    stage_list = sorted({c["steps"] for c in stages})
    md += ["", f"Model: {a.n_layer} layers, {a.n_head} heads, positions {a.pos}; {a.mqar_iters} steps (MQAR, by "
               f"length) and {a.copy_max_iters} (copy) of "
               f"{a.batch_tokens} tokens (batch-tokens / seq_len sequences), lr {a.lr} -> {a.min_lr}"
               + (f"; MQAR staged: the first {' / '.join(str(n) for n in stage_list)} steps (by length) on "
                  f"{stages[0]['pairs']} pairs, the rest on the row's pairs" if stages else "") + f"; {a.train_seqs} training sequences, "
               f"{a.val_seqs} scored; {a.symbols} symbols (chance 1/{a.symbols}); MQAR queries {a.queries}. "
               + (f"Rebuilt from probe.json ({len(rows)} runs, {sum(r['train_seconds'] for r in rows) / 60:.1f} minutes "
                  "of training)." if a.report_only else f"Took {total / 60:.1f} minutes."), f"Command: `{cmd.strip()}`", "", "![probe accuracy](probe_accuracy.png)"]
    with output_text(os.path.join(a.out, "probe.md")) as f:
        f.write("\n".join(md) + "\n")
    # Accuracy against sequence length (MQAR) and against distance (copy), one line per architecture.
    parts, plots = [], []
    for ti, task in enumerate(t for t in ("mqar", "copy") if t in tasks and any(r["task"] == t for r in rows)):
        for ai, name in enumerate(dict.fromkeys([x.name for x in archs] + [r["arch"] for r in rows])):
            points = [(r["seq_len"] if task == "mqar" else r["distance"], r["accuracy"])
                      for r in rows if r["task"] == task and r["arch"] == name]
            if not points:
                continue
            parts.append(gnuplot_series(os.path.join(a.out, f"acc_{task}_{ai}.dat"), points, ai, name))
        xl = "sequence length (MQAR, queries up to L-2 tokens after their key)" if task == "mqar" else \
             "distance from the segment to its copy (tokens)"
        plots.append(f"set title {gnuplot_string(task)}\nset xlabel {gnuplot_string(xl)}\nplot " + ", ".join(parts) + "\n")
        parts = []
    if not plots:
        die("no runs to report")
    script = (f"set terminal pngcairo size 1000,450 font ',10'\n"
              f"set output {gnuplot_string(os.path.join(a.out, 'probe_accuracy.png'))}\n"
              f"set multiplot layout 1,{len(plots)}\nset grid\nset yrange [0:1.05]\nset ylabel 'answer accuracy'\n"
              "set key bottom left\n" + "".join(plots) + "unset multiplot\n")
    gnuplot(script, output=os.path.join(a.out, "probe_accuracy.png"))
    return md
