"""paper.md's tables of the controls (--controls): the Grassmann pair kinds,
Grassmann against sliding-window attention at the same window, and the
hybrids of the other mixers."""
from harness.lib.paper.runs import ratio_cell, ratios, reading_line, runs_of
from harness.lib.paper.setup import N_EMBD, NORMS, recipe_label
from harness.lib.summary import MIN_SEEDS, estimate_cell, layers_text

RATIOS = ("Ratios of val perplexity paired by seed, with the ends of their 95% t interval in brackets; p: the paired "
          f"t-test of equal mean val loss (from {MIN_SEEDS} seeds on).")


def pair_report(rows, archs):
    """paper.md's answer to "wedge, outer or sum?": every pair kind at rank 32, and at the rank matched
    to the wedge's count, against the wedge (the grassmann model) and the Transformer, per recipe."""
    names = [n for n, _ in archs if n.startswith("grassmann-") and any(r["name"] == n for r in rows)]
    if not names:
        return []
    md = ["", "## The pair kinds: wedge, outer, sum", "",
          "What a Grassmann layer makes of each pair (z_t, z_{t-d}) (`bin/train --grassmann-pair`): the wedge, its "
          "normalised Plücker coordinates (r(r-1)/2 features: the grassmann model), the normalised outer product "
          "z_t z_{t-d}^T / (|z_t| |z_{t-d}|) (outer, r^2 features), or the sum z_t + z_{t-d} (sum, r features: a "
          "gated causal convolution of rank r). The features feed a C x F projection, so at equal rank the counts "
          "differ; the -m rows take the rank whose count is closest to the wedge's at rank 32 (searched up to "
          "n_embd: a larger rank adds parameters, not directions). Equal tokens for every row. " + RATIOS, "",
          "| recipe | architecture | pair | rank | parameters | vs wedge | val ppl | / wedge | p vs wedge "
          "| / Transformer | p vs Transformer |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    reading = []
    for norm in NORMS:
        wedge = runs_of(rows, norm, "grassmann")
        if not any(runs_of(rows, norm, n) for n in names):
            continue  # a recipe without the controls
        for name in ["grassmann"] + names:
            rs = runs_of(rows, norm, name)
            if not rs:
                continue
            gap = (f"{100.0 * (rs[0]['params'] - wedge[0]['params']) / wedge[0]['params']:+.1f}%" if wedge else "-")
            rank = rs[0]["grassmann_rank"] or "-"
            if name.endswith("-m") and rank == N_EMBD:
                rank = f"{rank} (capped at n_embd)"
            md.append(f"| {recipe_label(norm)} | {name} | {rs[0]['grassmann_pair'] or 'wedge'} "
                      f"| {rank} | {rs[0]['params']:,} | {gap} "
                      f"| {estimate_cell([r['val_ppl'] for r in rs], 1)} | {ratio_cell(rows, norm, name, 'grassmann')} "
                      f"| {ratio_cell(rows, norm, name, 'transformer')} |")
            if name != "grassmann" and ratios(rows, norm, name, "grassmann"):
                reading.append(reading_line(rows, norm, name, "grassmann", "the wedge"))
    return md + [""] + reading


def window_report(rows, archs, window):
    """paper.md's answer to "Grassmann or sliding-window attention at the same window?"."""
    if not any(r["name"] == "swa" for r in rows):
        return []
    names = [n for n in ("transformer", "swa", "grassmann", "hybrid", "hybrid-swa") if any(r["name"] == n for r in rows)]
    md = ["", "## Grassmann against sliding-window attention at the same window", "",
          f"swa is attention whose queries see the last {window} positions, the query's own included "
          f"(`bin/train --attn-window {window}`): the largest Grassmann offset, {window - 1}, and the position itself, "
          f"exactly the positions a Grassmann layer's output at t reads (z_t and z_(t-d) for its offsets d). "
          f"--attn-window {window - 1} would see one position fewer than the Grassmann layer. So the two differ in "
          f"what they do with the same {window} positions: attention chooses among them by content, Grassmann "
          f"averages fixed pair features over a few offsets. " + RATIOS, "",
          "| recipe | architecture | sees | parameters | val ppl | / swa | p vs swa | / Transformer | p vs Transformer |",
          "|---|---|---|---|---|---|---|---|---|"]
    reading = []
    for norm in NORMS:
        if not runs_of(rows, norm, "swa"):
            continue
        for name in names:
            rs = runs_of(rows, norm, name)
            if not rs:
                continue
            sees = {"transformer": "the whole block", "swa": f"the last {window} positions",
                    "grassmann": f"offsets up to {window - 1}", "hybrid": "whole block (layer 0), then offsets",
                    "hybrid-swa": f"the last {window} (layer 0), then offsets"}[name]
            md.append(f"| {recipe_label(norm)} | {name} | {sees} | {rs[0]['params']:,} "
                      f"| {estimate_cell([r['val_ppl'] for r in rs], 1)} | {ratio_cell(rows, norm, name, 'swa')} "
                      f"| {ratio_cell(rows, norm, name, 'transformer')} |")
        if ratios(rows, norm, "grassmann", "swa"):
            reading.append(reading_line(rows, norm, "grassmann", "swa", "sliding-window attention"))
    return md + [""] + reading


def hybrid_report(rows, archs):
    """paper.md's table of the hybrids that mix the mixers, against the Transformer and the paper's hybrid."""
    names = [n for n in ("hybrid", "gla", "hybrid-gla", "hybrid-swa") if any(r["name"] == n for r in rows)]
    if not any(n != "hybrid" for n in names):
        return []
    md = ["", "## The hybrids", "",
          "Each mixer beside the Transformer, and the paper's hybrid (attention first, then Grassmann) beside "
          "those with gla in the rest (hybrid-gla) and with sliding-window attention first (hybrid-swa). " + RATIOS, "",
          "| recipe | architecture | layers | parameters | val ppl | / Transformer | p vs Transformer | / hybrid "
          "| p vs hybrid |", "|---|---|---|---|---|---|---|---|---|"]
    for norm in NORMS:
        if not any(runs_of(rows, norm, n) for n in names if n != "hybrid"):
            continue
        for name in names:
            rs = runs_of(rows, norm, name)
            if rs:
                layers = layers_text(rs[0]["arch"].split(",")) + (f", window {rs[0]['attn_window']}"
                                                                  if rs[0].get("attn_window") else "")
                md.append(f"| {recipe_label(norm)} | {name} | {layers} | {rs[0]['params']:,} "
                          f"| {estimate_cell([r['val_ppl'] for r in rs], 1)} "
                          f"| {ratio_cell(rows, norm, name, 'transformer')} | {ratio_cell(rows, norm, name, 'hybrid')} |")
    return md
