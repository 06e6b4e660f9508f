"""A run's own page, or several runs' curves on one page: the compare page's
template and charts (harness/report_page.py) over run folders (bin/train
--run). One run: RUN/run.html (train and validation loss, learning rate,
gradient norm and tokens/s against the step; what bin/info says of it;
samples from its kept checkpoints). Several: their curves overlaid, one
colour per run, written to --out.

  python3 -m harness.runs_page runs/NAME
  python3 -m harness.runs_page runs/a runs/b --out compare.html"""
import argparse
import glob
import os
import re
import sys

from harness.common import BIN, die, guarded, printable, run, run_ok
from harness.compare import COLORS
from harness.files import output_check
from harness.report_page import chart, write_page
from harness.results import Invalid, read_train_log


def read_run(path, bin_dir):
    """bin/info's JSON and text for the run folder, and its log's rows."""
    if not os.path.isdir(path):
        die(f"'{path}' is not a run folder (bin/train --run DIR makes one)")
    folder = path if not path.startswith("-") else os.path.join(".", path)  # never read as an option
    info = run_ok([os.path.join(bin_dir, "info"), folder, "--json"], status=2).json()
    if not isinstance(info, dict):
        die(f"bin/info --json of '{path}' printed no JSON object")
    text = run_ok([os.path.join(bin_dir, "info"), folder], status=2).out
    log = os.path.join(path, "log.csv")
    try:
        rows = read_train_log(log) if os.path.exists(log) else []
    except Invalid as e:
        die(f"{log}: {e}")
    return {"path": path, "name": info["name"], "info": info, "text": text, "rows": rows}


def tokens_per_second(rows):
    """[step, tokens/s] of each row with a step time: the tokens since the row before over its ms."""
    out = []
    for prev, row in zip(rows, rows[1:]):
        ms = row["ms_per_step"]
        if ms and row["step"] > prev["step"]:
            out.append([row["step"], (row["tokens"] - prev["tokens"]) / (row["step"] - prev["step"]) / (ms / 1e3)])
    return out


def curves(runs):
    """The charts: loss (train solid, validation dashed), learning rate, gradient norm, tokens/s."""
    def points(r, key):
        return [[row["step"], row[key]] for row in r["rows"] if row[key] is not None]

    def series(key, dash=False, suffix=""):
        return [{"name": r["name"] + suffix, "legend": r["name"] if len(runs) > 1 else r["name"] + suffix,
                 "color": COLORS[(i if len(runs) > 1 else int(dash)) % len(COLORS)], "points": points(r, key),
                 "dash": dash}
                for i, r in enumerate(runs)]

    loss = series("train_loss", suffix=", train") + series("val_loss", dash=True, suffix=", validation")
    speed = [{"name": r["name"], "color": COLORS[i % len(COLORS)], "points": tokens_per_second(r["rows"])}
             for i, r in enumerate(runs)]
    return [chart("loss", "Loss (train: solid; validation estimate: dashed)", "step", "loss",
                  [s for s in loss if s["points"]],
                  note="per-token cross-entropy, nats"),
            chart("lr", "Learning rate", "step", "learning rate", series("lr")),
            chart("grad_norm", "Gradient norm (before clipping)", "step", "norm", series("grad_norm")),
            chart("speed", "Training speed", "step", "tokens/s", speed)]


def loss_cell(v):
    return "-" if v is None else f"{v:.4f}"


def loss_kind(info):
    """What the run's val losses are (bin/info's val_loss_kind): the estimate over its batches, or the full split."""
    kind = info.get("val_loss_kind")
    if kind == "estimate" and info.get("val_loss_batches"):
        return f"estimate, {info['val_loss_batches']} batches"
    return {"estimate": "estimate", "full": "full split"}.get(kind, "-")


def runs_table(runs):
    rows = []
    for r in runs:
        i = r["info"]
        steps = f"{i['step']}" + (f" of {i['max_iters']}" if i.get("max_iters") else "")
        rows.append([r["name"], steps, f"{i['tokens']:,}", loss_cell(i["best_val_loss"]), loss_cell(i["val_loss"]),
                     f"{i['params']:,}", ",".join(i["model"].get("mixers", [])), i["recipe"], loss_kind(i)])
    return {"kind": "table", "id": "runs", "columns": ["run", "step", "tokens", "best val loss", "last val loss",
                                                       "parameters", "mixers", "recipe", "val loss of"], "rows": rows}


def samples(run_info, bin_dir, tokens, prompt):
    """Text from each kept checkpoint of the run (step-N.ckpt, then ckpt), oldest first: the run's
    samples at its checkpoint interval (bin/train --keep-checkpoints 1)."""
    kept = sorted(glob.glob(os.path.join(glob.escape(run_info["path"]), "step-*.ckpt")))
    kept.append(os.path.join(run_info["path"], "ckpt"))
    rows = []
    for ckpt in kept:
        m = re.search(r"step-0*(\d+)\.ckpt$", ckpt)
        step = int(m.group(1)) if m else run_info["info"]["step"]
        r = run([os.path.join(bin_dir, "sample"), "--model", ckpt, "--tokens", str(tokens), "--prompt", prompt,
                 "--seed", "1337"])
        text = r.out if r.status == 0 else f"(bin/sample failed: {r.why()})"
        rows.append([os.path.basename(ckpt), str(step), printable(prompt + text).strip()])
    return {"kind": "table", "id": "samples", "columns": ["checkpoint", "step", "sample"], "rows": rows}


def page(runs, bin_dir, sample_tokens, prompt):
    one = len(runs) == 1
    title = f"run {runs[0]['name']}" if one else "runs: " + ", ".join(r["name"] for r in runs)
    sections = [{"kind": "heading", "level": 1, "text": title}]
    for r in runs:
        if not one:
            sections.append({"kind": "heading", "level": 2, "text": r["name"]})
        sections += [{"kind": "text", "bullet": True, "text": line} for line in r["text"].splitlines() if line.strip()]
    sections.append({"kind": "heading", "level": 2, "text": "Runs"})
    sections.append(runs_table(runs))
    sections.append({"kind": "heading", "level": 2, "text": "Curves"})
    sections += curves(runs)
    if one and sample_tokens > 0:
        sections.append({"kind": "heading", "level": 2, "text": "Samples"})
        sections.append(samples(runs[0], bin_dir, sample_tokens, prompt))
    return title, sections


def main():
    ap = argparse.ArgumentParser(prog="python3 -m harness.runs_page",
                                 description="A run folder's page (RUN/run.html), or several runs' curves on one page.")
    ap.add_argument("runs", nargs="+", metavar="RUN", help="run folders (bin/train --run)")
    ap.add_argument("--out", help="the page to write (default: RUN/run.html for one run; needed for several)")
    ap.add_argument("--sample-tokens", type=int, default=120,
                    help="tokens sampled from each kept checkpoint of a single run; 0 = no samples (120)")
    ap.add_argument("--prompt", default="\n", help="the samples' prompt (a newline)")
    ap.add_argument("--bin", default=BIN, help="the programs' folder (bin/)")
    a = ap.parse_args()
    if a.sample_tokens < 0:
        die("--sample-tokens must be 0 or more")
    if len(a.runs) > 1 and not a.out:
        die("several runs: give the page to write with --out FILE")
    out = a.out or os.path.join(a.runs[0], "run.html")
    # Before any work: a file or a new path, never through a link, never a FIFO, device or folder,
    # never one of the runs' own files (harness/files.py).
    output_check(out, "--out" if a.out else "the page", run_folders=[r for r in a.runs if os.path.isdir(r)])
    runs = [read_run(p, a.bin) for p in a.runs]
    title, sections = page(runs, a.bin, a.sample_tokens, a.prompt)
    write_page(out, title, sections)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(guarded(main))
