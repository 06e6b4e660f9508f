"""make probe --zoology's results: the state size on the axis, the best
learning rate per architecture, cell and width, zoology.json's schema as
--report-only and --resume read it back (and --resume's checks that its runs
are this sweep's), and the report: zoology.md, zoology_accuracy.png and
zoology.html."""
import os

from harness import registry
from harness.common import command_line, die, gnuplot, gnuplot_series, gnuplot_string
from harness.files import output_text
from harness.lib.summary import MIN_SEEDS, estimate_cell, p_cell, paired
from harness.report_page import COLORS, chart, markdown_sections, write_page
from harness.results import Int, ListOf, Name, Num, Obj, Text, arch_option_fields, family_field, load_json

# What the sequences hold outside the pairs and the queries (bin/probegen --fill), as the report says it.
FILLS = ("random", "zero")
FILL_TEXT = {"random": "a random token of the whole vocabulary (Zoology's random_non_queries, its default: "
                       "distractors among the queries)",
             "zero": "id 0 (--fill zero: no distractors, an easier task than Zoology's)"}


def state_floats(shape, arch):
    """The floats the model keeps per sequence when it generates (see the module's comment): the
    registry's state of each of its layers (bin/info --mixers at bin/train's model options `shape`, the
    architecture's layers, own options and size), summed."""
    size = ["--" + arch["knob"]["name"], str(arch["size"])] if arch["size"] else []
    return registry.state_floats(shape + ["--mixer", ",".join(arch["mixers"])] + arch["args"] + size)


def best_rows(rows):
    """The best learning rate of each (arch, seq_len, n_embd): the highest mean
    accuracy over seeds, ties to the lower mean answer loss."""
    groups = {}
    for r in rows:
        groups.setdefault((r["arch"], r["seq_len"], r["n_embd"]), {}).setdefault(r["lr"], []).append(r)
    best = []
    for key, by_lr in groups.items():
        mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)
        lr, rs = max(by_lr.items(), key=lambda kv: (mean(kv[1], "accuracy"), -mean(kv[1], "answer_loss")))
        best.append(dict(rs[0], accuracy=mean(rs, "accuracy"), answer_loss=mean(rs, "answer_loss"), seeds=len(rs),
                         accuracies=[r["accuracy"] for r in rs], by_seed=[{"seed": r["seed"], "acc": r["accuracy"]} for r in rs],
                         lr_accuracy={f"{l:g}": round(mean(v, "accuracy"), 4) for l, v in sorted(by_lr.items())}))
    return sorted(best, key=lambda r: (r["seq_len"], r["arch"], r["n_embd"]))


def run_key(row):
    """What names one run of a sweep whose settings are fixed."""
    return row["arch"], row["seq_len"], row["pairs"], row["n_embd"], row["lr"], row["seed"]


def runs_schema():
    """zoology.json as read back (--report-only, --resume): a list of runs as train_and_score writes
    them, each with the settings of its sweep (the mixers' options given among them, by their bin/train
    names), no run twice; an architecture's options by their JSON keys and its family (the registry's;
    older files have none)."""
    settings = Obj({"vocab": Int(1), "fill": Text(choices=FILLS, optional=True), "steps": Int(1), "batch_tokens": Int(1), "warmup_iters": Int(0),
                    "train_seqs": Int(1), "val_seqs": Int(1), "n_layer": Int(1), "n_head": Int(1), "data_seed": Int(0),
                    **{o["json_key"]: Text(optional=True) for o in registry.options()}}, optional=True)
    return ListOf(Obj({"arch": Name(), "seq_len": Int(1), "pairs": Int(1), "n_embd": Int(1),
                       "lr": Num(0, lo_open=True), "seed": Int(0), "accuracy": Num(0, 1), "answer_loss": Num(0),
                       "answers": Int(0), "params": Int(1), "state_floats": Int(1),
                       "pos": Text(choices=("learned", "sinusoidal", "rope"), optional=True), "steps": Int(1),
                       "train_seconds": Num(0), "settings": settings, "family": family_field(),
                       **arch_option_fields()}),
                  unique=("arch", "seq_len", "pairs", "n_embd", "lr", "seed"))


def fill_of(row):
    """What a run's sequences held outside the pairs and the queries: its settings' fill, and id 0 for a
    run recorded before the random fill was (the generator's only filler then)."""
    return (row.get("settings") or {}).get("fill") or "zero"


def read_rows(out):
    """The runs of OUT/zoology.json, checked (runs_schema); dies with one line if they are not."""
    return load_json(os.path.join(out, "zoology.json"), runs_schema())


def check_settings(rows, settings, out):
    """--resume adds runs to a sweep only under the settings its runs were
    trained with: a best learning rate chosen across settings would compare
    unlike runs. A mixer option that either does not record is at its
    default."""
    for r in rows:
        old = r.get("settings")
        if old is None:
            die(f"{os.path.join(out, 'zoology.json')} records no settings for its runs, so they cannot be resumed: "
                "give another --out")
        old = dict(old, fill=fill_of(r))
        differs = [(k, old.get(k), v) for k, v in settings.items() if k not in mixer_keys() and old.get(k) != v]
        differs += [(o["json_key"], old.get(o["json_key"]), settings.get(o["json_key"])) for o in registry.options()
                    if not registry.same_value(o, old.get(o["json_key"]), settings.get(o["json_key"]))]
        for k, had, want in differs[:1]:
            die(f"{os.path.join(out, 'zoology.json')} was trained with {k} {had}, and this run asks for "
                f"{want}: give the same settings to --resume, or another --out")


def mixer_keys():
    """The settings' keys that are mixer options (their JSON keys)."""
    return {o["json_key"] for o in registry.options()}


def check_archs(rows, archs, out):
    """--resume adds runs of an architecture only where the runs of its name had its options: the same
    name with another window or pair kind is another model (a value not recorded: the default)."""
    for x in archs:
        want = x.columns()
        for r in rows:
            if r["arch"] != x.name:
                continue
            for o in registry.arch_options(x.mixers):
                k = o["json_key"]
                if not o["size_knob"] and not registry.same_value(o, r.get(k), want[k]):
                    die(f"{os.path.join(out, 'zoology.json')} has runs of '{x.name}' with {k} "
                        f"{o['default'] if r.get(k) is None else r[k]}, and --archs gives it {want[k]}: name it "
                        "otherwise, or give another --out")


def plotted(archs, best):
    """[(name, family)] of the architectures that have runs: --archs' order, then any other the runs have
    (a --report-only of a sweep trained with other --archs); the family as the runs recorded it, else as
    --archs gives it, else None (a zoology.json from before families)."""
    names = [x.name for x in archs] + sorted({r["arch"] for r in best} - {x.name for x in archs})
    given = {x.name: x.family() for x in archs}
    family = {}
    for r in best:
        family.setdefault(r["arch"], r.get("family") or given.get(r["arch"]))
    return [(n, family[n]) for n in names if n in family]


def write_report(a, archs, rows, minutes, kept=0):
    best = best_rows(rows)
    names = plotted(archs, best)
    first = names[0][0]
    md = ["# MQAR, the Zoology protocol", "",
          "Best learning rate per architecture, cell and width; accuracy = the share of answers that are the "
          f"model's most likely next token (chance {2 / a.vocab:.2g} for a value guessed from the vocabulary's second "
          f"half, 1/pairs for one guessed among the sequence's own), the mean over the seeds at that rate ± the "
          f"half-width of its 95% interval from Student's t (seeds - 1 degrees of freedom); p: the paired t-test "
          f"(the same seed draws the same batches) of equal mean accuracy against {first} in the same cell and width, "
          f"from {MIN_SEEDS} seeds on. State: the floats the layers keep per sequence when the model generates "
          "(bin/info --mixers: each layer's state at the cell's length, its step's scratch included).", "",
          "| seq_len | pairs | architecture | n_embd | parameters | state (floats) | best lr | accuracy | "
          f"accuracy at each lr | family | seeds | p vs {first} |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in best:
        name = registry.label(r["arch"], r)
        each = ", ".join(f"{lr}: {acc:.3f}" for lr, acc in r["lr_accuracy"].items())
        base = next((x for x in best if x["arch"] == first and x["seq_len"] == r["seq_len"] and
                     x["n_embd"] == r["n_embd"]), None)
        p = "-" if r["arch"] == first or base is None else p_cell(paired(r["by_seed"], base["by_seed"], "acc"))
        md.append(f"| {r['seq_len']} | {r['pairs']} | {name} | {r['n_embd']} | {r['params']:,} | {r['state_floats']:,} "
                  f"| {r['lr']:g} | {estimate_cell(r['accuracies'], 3)} | {each} | {dict(names).get(r['arch']) or '-'} | {r['seeds']} "
                  f"| {p} |")
    steps = sorted({r["steps"] for r in rows})
    fills = sorted({fill_of(r) for r in rows})
    md += ["", f"Model: {a.n_layer} layers, {a.n_head} head(s), an MLP in every block (the paper's sweep has none), "
               f"positions {a.pos}; {'/'.join(map(str, steps))} steps of {a.batch_tokens} tokens, cosine to a tenth "
               f"of each lr after {a.warmup_iters or 'a tenth of the steps as'} warm-up; vocabulary {a.vocab}; "
               f"{a.train_seqs} training sequences, {a.val_seqs} scored. Outside the pairs and the queries: "
               + " and ".join(FILL_TEXT[f] for f in fills) + ". The paper trains 64 epochs of 100,000 "
               "sequences. " + (f"Took {minutes:.1f} minutes" + (f", after {kept} runs kept by --resume." if kept else ".")
                                  if minutes else "Rebuilt from zoology.json."),
           f"Command: `{command_line('harness.probe', ['--zoology'] + a.argv)}`", "",
           "![accuracy against state size](zoology_accuracy.png)"]
    with output_text(os.path.join(a.out, "zoology.md")) as f:
        f.write("\n".join(md) + "\n")
    cells = sorted({(r["seq_len"], r["pairs"]) for r in best})
    plots, charts = [], []
    for ci, (L, p) in enumerate(cells):
        parts, series = [], []
        for ai, (name, family) in enumerate(names):
            points = sorted((r["state_floats"], r["accuracy"]) for r in best if r["arch"] == name and r["seq_len"] == L)
            if not points:
                continue
            title = name + (f" ({family})" if family and family != name else "")
            parts.append(gnuplot_series(os.path.join(a.out, f"zoology_{ci}_{ai}.dat"), points, ai, title))
            series.append({"name": title, "color": COLORS[ai % len(COLORS)], "points": [list(x) for x in points]})
        plots.append(f"set title {gnuplot_string(f'seq len {L}, {p} pairs')}\nplot " + ", ".join(parts) + "\n")
        charts.append(chart(f"cell_{L}_{p}", f"MQAR accuracy against state size: seq len {L}, {p} pairs",
                            "state size (floats, all layers; log scale)", "MQAR accuracy (best lr)", series, xlog=True,
                            ymax=1.05, note="A point per width; drag to zoom, double-click to zoom out, click a legend "
                                            "entry to hide its line."))
    write_page(os.path.join(a.out, "zoology.html"), md[0].lstrip("# "),
               markdown_sections(md) + [{"kind": "heading", "level": 2, "text": "Accuracy against state size"}] + charts)
    gnuplot(f"set terminal pngcairo size {360 * len(cells) + 140},420 font ',10'\n"
            f"set output {gnuplot_string(os.path.join(a.out, 'zoology_accuracy.png'))}\nset multiplot layout 1,{len(cells)}\n"
            "set grid\nset logscale x 2\nset yrange [0:1.05]\nset xlabel 'state size (floats, all layers)'\n"
            "set ylabel 'MQAR accuracy (best lr)'\nset key top left\nset offsets graph 0.08, graph 0.08, 0, 0\n" + "".join(plots) + "unset multiplot\n",
            output=os.path.join(a.out, "zoology_accuracy.png"))
    return md
