"""make compare --ablate: every architecture under the modern recipe, under
it less one switch at a time (ABLATION), and under GPT-2's, at every budget
and seed; ablation.md says per switch what taking it out costs each
architecture, and whether it closes or widens the gap between the first
architecture and each other one."""
import csv
import os
import time

from harness import registry
from harness.common import Sweep, command_line
from harness.files import output_text
from harness.lib.compare.report import warmup_text
from harness.lib.compare.runs import check_stems, stem
from harness.lib.summary import fmt, mean_spread, precision_text


# --ablate's variants: the modern recipe less one switch each (bin/train's
# options that set it back to GPT-2's, the optimizer among them), between the
# whole recipe and GPT-2's.
ABLATION = [
    ("modern", []),
    ("no rope (learned positions)", ["--pos", "learned"]),
    ("no RMSNorm (LayerNorm)", ["--norm-type", "layernorm"]),
    ("no ReLU^2 (GELU)", ["--mlp-act", "gelu"]),
    ("no qk-norm", ["--qk-norm", "0"]),
    ("no untied head (tied)", ["--untied-head", "0"]),
    ("no zero-init", ["--zero-init", "0"]),
    ("no logit softcap", ["--logit-softcap", "0"]),
    ("no Muon (AdamW)", ["--optimizer", "adamw"]),
    ("gpt2", ["--recipe", "gpt2"]),
]


def ablation_name(name, variant, extra):
    """A variant's run name: the architecture's, then the switch's option and value ('NAME-qk-norm-0';
    'NAME-modern' for the whole recipe), one per switch."""
    return f"{name}-" + ("-".join(x.lstrip("-") for x in extra) if extra else variant)


def ablate(a, h, archs, budgets):
    """--ablate: every architecture under every ABLATION variant, budgets and seeds interleaved as in the
    comparison (a busy machine slows every variant alike); ablation.md and ablation.csv."""
    variants = [dict(arch, base=arch["name"], variant=v, extra=extra, name=ablation_name(arch["name"], v, extra))
                for v, extra in ABLATION for arch in archs]
    seeds = [a.seed + k for k in range(a.seeds)]
    check_stems([f"{v['name']}_{kind}_{seed}" for kind, _ in budgets for seed in seeds for v in variants])
    runs, t_all = [], time.time()
    sweep = Sweep(len(budgets) * len(seeds) * len(variants))
    for kind, value in budgets:
        for seed in seeds:
            for v in variants:
                tag = stem(f"{v['name']}_{kind}_{seed}")
                print(f"== {sweep.begin()}: {v['base']}, {v['variant']}, {kind}:{value}, seed {seed}", flush=True)
                r = h.train(v, (kind, value), seed, tag)
                r.update(base=v["base"], variant=v["variant"])
                print(f"   {r['steps']} steps, "
                      f"{r['tokens']:,} tokens in {r['train_seconds']:.1f} s; val loss {r['val_loss']:.4f}", flush=True)
                runs.append(r)
    total = time.time() - t_all
    md = ablation_report(a, archs, budgets, runs, seeds, total)
    with output_text(os.path.join(a.out, "ablation.csv")) as f:
        w = csv.writer(f)
        keys = ["base", "variant", "budget", "seed", "steps", "tokens", "train_seconds", "val_loss", "test_loss"]
        w.writerow(keys)
        for r in runs:
            w.writerow([f"{r[k]:.6f}" if isinstance(r[k], float) else r[k] for k in keys])
    print("\n" + "\n".join(md))
    print(f"\nwrote {os.path.join(a.out, 'ablation.md')} and ablation.csv ({total / 60:.1f} min)")


def ablation_report(a, archs, budgets, runs, seeds, total):
    """ablation.md: per budget, each variant's val loss for every architecture, the change from the whole
    modern recipe (paired by seed), and the gap from the first architecture (paired by seed) against the
    recipe's own gap: a switch whose removal shrinks the gap was widening it, and the other way round."""
    def losses(base, variant, b):
        return {r["seed"]: r["val_loss"] for r in runs if r["budget"] == b and r["base"] == base and
                r["variant"] == variant}

    bases = [x["name"] for x in archs]
    md = [f"# Ablation of the modern recipe: {', '.join(bases)}", "",
          f"Each row takes one switch out of `--recipe modern` (or all of them: gpt2). Val loss (nats per "
          f"{runs[0]['unit']}) is the mean ± spread (half the range) over seeds {', '.join(map(str, seeds))}; "
          f"Δ is the paired change from the whole modern recipe (positive: without the switch the loss is higher, "
          f"so the switch helps); a change or gap "
          f"is called a difference only when it exceeds its spread.", ""]
    for kind, value in budgets:
        b = f"{kind}:{value}"
        md += [f"## {kind} budget ({value:,}{' s' if kind == 'seconds' else ' tokens'})", ""]
        head = "| variant |"
        for base in bases:
            head += f" {base} val loss | Δ {base} |"
        for base in bases[1:]:
            head += f" gap {base} - {bases[0]} | gap vs modern's |"
        md += [head, "|---" * (1 + 2 * len(bases) + 2 * (len(bases) - 1)) + "|"]
        for variant, _ in ABLATION:
            row = f"| {variant} |"
            for base in bases:
                cur, mod = losses(base, variant, b), losses(base, "modern", b)
                m, sp = mean_spread(list(cur.values()))
                dm, ds = mean_spread([cur[k] - mod[k] for k in cur if k in mod])
                note = "" if variant == "modern" or len(cur) < 2 or abs(dm) > ds else " (within spread)"
                row += f" {fmt(m, sp, 4)} | {'' if variant == 'modern' else fmt(dm, ds, 4) + note} |"
            for base in bases[1:]:
                cur0, cur1 = losses(bases[0], variant, b), losses(base, variant, b)
                mod0, mod1 = losses(bases[0], "modern", b), losses(base, "modern", b)
                gaps = {k: cur1[k] - cur0[k] for k in cur1 if k in cur0}
                gm, gs = mean_spread(list(gaps.values()))
                change = [gaps[k] - (mod1[k] - mod0[k]) for k in gaps if k in mod0 and k in mod1]
                cm, cs = mean_spread(change)
                if variant == "modern":
                    verdict = ""
                elif len(change) < 2 or abs(cm) <= cs:
                    verdict = f"{cm:+.4f} ± {cs:.4f}: no difference"
                else:  # without the switch the gap is larger: the switch closes it
                    what = "the recipe" if variant == "gpt2" else "the switch"
                    verdict = f"{cm:+.4f} ± {cs:.4f}: {what} {'closes' if cm > 0 else 'widens'} the gap"
                row += f" {fmt(gm, gs, 4)} | {verdict} |"
            md.append(row)
        md.append("")
    md += [f"Model: n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, batch "
           f"{a.batch_size}, {a.norm}-norm{', then ' + a.train_args if a.train_args else ''}; "
           f"{precision_text(a.precision)}; lr {a.lr} -> {a.min_lr} cosine (AdamW's; under Muon its matrices take "
           f"bin/train's --muon-lr on the same schedule), "
           f"{warmup_text(a)}; mixer options {registry.settings_text(a)}" +
           "".join(f"; {x['label']} {x['params']:,} parameters under the modern recipe" for x in archs) +
           f". {len(runs)} runs took {total / 60:.1f} minutes of wall time.",
           f"Command: `{command_line('harness.compare')}`"]
    with output_text(os.path.join(a.out, "ablation.md")) as f:
        f.write("\n".join(md) + "\n")
    return md
