"""make compare --ablate: every architecture under the modern recipe, under
it less one switch at a time (ABLATION), and under GPT-2's, at every budget
and seed; ablation.md says per switch what taking it out costs each
architecture, and whether it closes or widens the gap between the first
architecture and each other one."""
import csv
import os
import time

from harness import registry
from harness.common import command_line
from harness.files import output_text
from harness.lib.compare.report import warmup_text
from harness.lib.compare.runs import check_stems, run_plan, stem
from harness.lib.summary import MIN_SEEDS, estimate_cell, fmt_p, interval_caption, precision_text
from harness.stats import Estimate


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
    comparison (a busy machine slows every variant alike), each run a run folder (--resume and
    --report-only as for the comparison); ablation.md and ablation.csv."""
    variants = [dict(arch, base=arch["name"], variant=v, extra=extra, name=ablation_name(arch["name"], v, extra),
                     label=f"{arch['label']}, {v}") for v, extra in ABLATION for arch in archs]
    seeds = [a.seed + k for k in range(a.seeds)]
    check_stems([f"{v['name']}_{kind}_{seed}" for kind, _ in budgets for seed in seeds for v in variants])
    plan = [(v, (kind, value), seed, stem(f"{v['name']}_{kind}_{seed}"))
            for kind, value in budgets for seed in seeds for v in variants]
    t_all = time.time()
    runs = run_plan(h, plan, lambda v, budget, seed: f"{v['base']}, {v['variant']}, {budget[0]}:{budget[1]}, seed {seed}",
                    "compare")
    for (v, _, _, _), r in zip(plan, runs):
        r.update(base=v["base"], variant=v["variant"])
    total = 0 if a.report_only else time.time() - t_all
    md = ablation_report(a, archs, budgets, runs, seeds, total)
    with output_text(os.path.join(a.out, "ablation.csv")) as f:
        w = csv.writer(f)
        keys = ["base", "variant", "budget", "seed", "steps", "tokens", "train_seconds", "val_loss", "test_loss"]
        w.writerow(keys)
        for r in runs:
            w.writerow([f"{r[k]:.6f}" if isinstance(r[k], float) else r[k] for k in keys])
    print("\n" + "\n".join(md))
    print(f"\nwrote {os.path.join(a.out, 'ablation.md')} and ablation.csv ({total / 60:.1f} min)")


def change_cell(change, variant):
    """ablation.md's cell of how a variant changes the gap between two architectures (paired by seed): the
    change, and from MIN_SEEDS seeds on whether its interval excludes none."""
    e = Estimate(change)
    text = estimate_cell(change, 4)
    if e.n < MIN_SEEDS or not e.spread:
        return text
    if e.p >= 0.05:
        return f"{text}: no difference shown ({fmt_p(e.p)})"
    what = "the recipe" if variant == "gpt2" else "the switch"  # without it the gap is larger: it closes it
    return f"{text}: {what} {'closes' if e.mean > 0 else 'widens'} the gap ({fmt_p(e.p)})"


def ablation_report(a, archs, budgets, runs, seeds, total):
    """ablation.md: per budget, each variant's val loss for every architecture, the change from the whole
    modern recipe (paired by seed), and the gap from the first architecture (paired by seed) against the
    recipe's own gap: a switch whose removal shrinks the gap was widening it, and the other way round."""
    def losses(base, variant, b):
        return {r["seed"]: r["val_loss"] for r in runs if r["budget"] == b and r["base"] == base and
                r["variant"] == variant}

    bases = [x["name"] for x in archs]
    md = [f"# Ablation of the modern recipe: {', '.join(bases)}", "",
          f"Each row takes one switch out of `--recipe modern` (or all of them: gpt2). Val loss in nats per "
          f"{runs[0]['unit']}, seeds {', '.join(map(str, seeds))}; Δ is the paired change from the whole modern "
          f"recipe (positive: without the switch the loss is higher, so the switch helps). " +
          interval_caption(len(seeds)) + (" A change of the gap is called one (the switch closes or widens it) only "
                                          "where its interval excludes 0 (the paired t-test's p below 0.05)."
                                          if len(seeds) >= MIN_SEEDS else ""), ""]
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
                delta = [cur[k] - mod[k] for k in cur if k in mod]
                row += f" {estimate_cell(list(cur.values()), 4)} | {'' if variant == 'modern' else estimate_cell(delta, 4)} |"
            for base in bases[1:]:
                cur0, cur1 = losses(bases[0], variant, b), losses(base, variant, b)
                mod0, mod1 = losses(bases[0], "modern", b), losses(base, "modern", b)
                gaps = {k: cur1[k] - cur0[k] for k in cur1 if k in cur0}
                change = [gaps[k] - (mod1[k] - mod0[k]) for k in gaps if k in mod0 and k in mod1]
                row += f" {estimate_cell(list(gaps.values()), 4)} | {'' if variant == 'modern' else change_cell(change, variant)} |"
            md.append(row)
        md.append("")
    md += [f"Model: n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, batch "
           f"{a.batch_size}, {a.norm}-norm{', then ' + a.train_args if a.train_args else ''}; "
           f"{precision_text(a.precision)}; lr {a.lr} -> {a.min_lr} cosine (AdamW's; under Muon its matrices take "
           f"bin/train's --muon-lr on the same schedule), "
           f"{warmup_text(a)}; mixer options {registry.settings_text(a)}" +
           "".join(f"; {x['label']} {x['params']:,} parameters under the modern recipe" for x in archs) +
           (f". {len(runs)} runs took {total / 60:.1f} minutes of wall time." if total else
            f". {len(runs)} runs, rebuilt from their folders (--report-only)."),
           f"Command: `{command_line('harness.compare')}`"]
    with output_text(os.path.join(a.out, "ablation.md")) as f:
        f.write("\n".join(md) + "\n")
    return md
