"""make paper's per-window ablation of the Grassmann model: the val loss with
each (layer, window offset) left out in turn (bin/eval --ablate-offset) on
the same head of val, written beside each recipe's runs and read back into
paper.md's table of where each layer's information comes from."""
import json
import os

from harness.common import BIN, die, run_ok, token_header
from harness.files import output_text, read_input, write_output
from harness.lib.paper.setup import recipe_label
from harness.results import Int, MapOf, Num, Obj, load_json


def ablation_path(out, norm, name, seed):
    return os.path.join(out, norm, f"ablation_{name}_{seed}.json")


def head_file(data, out, tokens):
    """OUT/val_head.bin: the first `tokens` tokens of data/val.bin (all of them when fewer),
    a token file of its own, so that every ablation scores the same text."""
    src, dst = os.path.join(data, "val.bin"), os.path.join(out, "val_head.bin")
    head = token_header(src)
    n = min(tokens, head["count"])
    body = read_input(src, 32 + n * head["width"], f"'{src}'", head=True)[32:]
    write_output(dst, head["raw"][:24] + n.to_bytes(8, "little") + body)
    return dst, n


def ablate(out, norm, name, seed, kind, mixers, windows, val_head, tokens, threads):
    """The val loss on val_head with each (Grassmann layer, window offset) left out in turn
    (bin/eval --ablate-offset), beside the plain loss: OUT/NORM/ablation_NAME_SEED.json.
    Reads the run's final checkpoint in its run folder (harness.compare's OUT/NORM/NAME_KIND_SEED)."""
    ckpt = os.path.join(out, norm, f"{name}_{kind}_{seed}", "ckpt")
    if not os.path.exists(ckpt):
        die(f"no checkpoint {ckpt} to ablate")
    score = lambda extra: run_ok([os.path.join(BIN, "eval"), "--model", ckpt, "--data", val_head, "--json",
                                  "--threads", str(threads)] + extra, status=2).json()["loss"]
    plain = score([])
    delta = {}
    for layer, mixer in enumerate(mixers):
        if mixer != "grassmann":
            continue
        for d in windows[layer]:
            delta[f"{layer}:{d}"] = score(["--ablate-offset", f"{layer}:{d}"]) - plain
            print(f"paper: {recipe_label(norm)} {name} seed {seed}: without layer {layer}'s offset {d}: "
                  f"{delta[f'{layer}:{d}']:+.4f} nats", flush=True)
    with output_text(ablation_path(out, norm, name, seed)) as f:
        json.dump({"tokens": tokens, "plain_loss": plain, "delta": delta}, f, indent=1)


# An ablation file as ablate() writes it: the loss added by leaving out each "LAYER:OFFSET".
ABLATION_SCHEMA = Obj({"tokens": Int(1), "plain_loss": Num(0),
                       "delta": MapOf(r"[0-9]{1,4}:[0-9]{1,6}", Num(), min_len=1)})


def read_ablations(out, rows):
    """{(norm, name, seed): {tokens, plain_loss, delta}} for the runs that have an ablation file."""
    found = {}
    for r in rows:
        path = ablation_path(out, r["norm"], r["name"], r["seed"])
        if os.path.lexists(path):
            found[(r["norm"], r["name"], r["seed"])] = load_json(path, ABLATION_SCHEMA)
    return found


def ablation_report(ablations):
    """paper.md's section: per run ablated, a layer x offset table of the loss each offset's
    removal adds, and a sentence on where the information comes from."""
    if not ablations:
        return []
    md = ["", "## Where each Grassmann layer's information comes from", "",
          "Each cell: the val loss (nats per token) with that layer's window offset left out of its mean "
          "(`bin/eval --ablate-offset LAYER:OFFSET`: its term dropped, the mean's count kept), minus the loss of the "
          f"whole model, on the first {max(ab['tokens'] for ab in ablations.values()):,} val tokens. Large: the layer "
          "relies on the token that far back; near 0: it could do without it."]
    for (norm, name, seed), ab in sorted(ablations.items()):
        cells = {tuple(map(int, k.split(":"))): v for k, v in ab["delta"].items()}
        layers = sorted({l for l, _ in cells})
        offsets = sorted({d for _, d in cells})
        by_offset = {d: sum(v for (_, dd), v in cells.items() if dd == d) for d in offsets}
        by_layer = {l: sum(v for (ll, _), v in cells.items() if ll == l) for l in layers}
        top_d = max(by_offset, key=by_offset.get)
        top_l = max(by_layer, key=by_layer.get)
        md += ["", f"**{recipe_label(norm)}, {name}, seed {seed}** (whole model: {ab['plain_loss']:.4f} nats). "
                   f"Most is lost without offset {top_d} ({by_offset[top_d]:+.4f} summed over the layers) and "
                   f"in layer {top_l} ({by_layer[top_l]:+.4f} summed over its offsets).", "",
               "| layer | " + " | ".join(f"offset {d}" for d in offsets) + " |",
               "|---|" + "---|" * len(offsets)]
        for l in layers:
            md.append(f"| {l} | " + " | ".join(f"{cells[(l, d)]:+.4f}" if (l, d) in cells else "-" for d in offsets)
                      + " |")
    return md
