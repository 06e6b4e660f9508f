"""The command line: options, the context every section reads, the sections in order and the report."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from harness.bench.blas import BLAS_CONFIGS, WIDTHS, print_blas, section_blas
from harness.bench.generate import plot_generate, print_generate, section_generate
from harness.bench.kernel import KERNEL_VARIABLE, LIBRARY_NAME, library_of, print_kernel, section_kernel
from harness.bench.layouts import LAYOUT_CONFIGS, print_layouts, section_layouts
from harness.bench.load import print_load, section_load
from harness.bench.mixers import print_mixers, section_mixers
from harness.bench.mpi import print_mpi, section_mpi
from harness.bench.scaling import default_thread_list, parse_threads, print_scaling, section_scaling
from harness.bench.shared import (CONFIGS, PRECISIONS, STEPS, T0, Context, bench_archs, bench_mixers, default_mixers, label,
                                  plural, progress)
from harness.bench.train import (cpu_isa_levels, level_env, parse_isa, torch_isa, print_flops, print_inference, print_memory, print_profile, print_speed,
                                 section_train)
from harness.common import BIN, PYTHON, ROOT, cpu_model, die, kill_children, need_gnuplot, token_header
from harness.files import output_check
from harness.procs import children_end_first

SECTIONS = ("train", "mixers", "kernel", "blas", "load", "mpi", "scaling", "layouts", "generate")
# What runs when --sections is not given: these, and the last two as well when
# --threads lists more than one count.
DEFAULT_SECTIONS = ("train", "mixers", "kernel", "blas", "load", "mpi")


def eval_prefix(data, tmp, n):
    """DIR with val.bin = the first n tokens of data's val split (and its tokenizer)."""
    src = os.path.join(data, "val.bin")
    head = token_header(src)
    width, n = head["width"], min(n, head["count"])
    out = os.path.join(tmp, "evaldata")
    os.makedirs(out, exist_ok=True)
    with open(src, "rb") as f:
        f.seek(32)
        body = f.read(n * width)
    with open(os.path.join(out, "val.bin"), "wb") as f:
        f.write(head["raw"][:24] + n.to_bytes(8, "little") + body)
    shutil.copy(os.path.join(data, "tokenizer.txt"), out)
    return out


def parse_args():
    ap = argparse.ArgumentParser(prog="/usr/bin/python3 -m harness.bench",
                                 description="Speed and memory of the C programs against PyTorch and sgemm.",
                                 epilog="Sections: train (C vs PyTorch, FLOPs, memory, profile, eval and sample "
                                        "speed), mixers (cost vs sequence length, and against PyTorch), kernel (default BLIS "
                                        "kernel check), load (the thread tuner), mpi (2 ranks against 1 rank "
                                        "and against 2 threads), scaling (tokens/s, speed-up, efficiency and MFU "
                                        "per thread count, and bin/train's default threads against the best), "
                                        "layouts (ranks x threads for each core count), generate (bin/sample's "
                                        "prefill and decode against context length, fp32, bf16 and int8 "
                                        "weights, batch 1 and N, against a PyTorch KV-cache loop and the "
                                        "machine's read rate). By default the first six; scaling and layouts "
                                        "too when --threads lists more than one count; generate when asked.")
    ap.add_argument("--quick", action="store_true", help="fewer steps and one round (a few minutes)")
    ap.add_argument("--threads", metavar="N[,N...]",
                    help="thread counts: one N for C and PyTorch in every section (default: all cores); a comma "
                         "list is scaling's and layouts' counts, the largest serving the other sections (scaling's "
                         "default: 1, 2, 4, ... and the core count)")
    ap.add_argument("--rounds", type=int, help="alternating rounds (default 3, 1 with --quick)")
    ap.add_argument("--configs", help="of baby, medium, long (default all; layouts: medium; blas: baby)")
    ap.add_argument("--mixers", help="of " + ", ".join(label(m) for m in bench_mixers()) + " (experiments/defaults.json's "
                    "bench.mixers, then every registered mixer; default: the mixers section " +
                    ", ".join(bench_archs()) + ", the other sections " + " and ".join(default_mixers()) + ")")
    ap.add_argument("--sections", help="of " + ", ".join(SECTIONS) + " (default: see below)")
    ap.add_argument("--no-torch", action="store_true", help="do not run PyTorch (its columns then say n/a)")
    ap.add_argument("--torch-python", metavar="PATH", default=sys.executable or PYTHON,
                    help="the Python that has torch, for the PyTorch runs (default: this one)")
    ap.add_argument("--other-bin", metavar="DIR",
                    help="the programs built with the other BLAS library, for the blas section (default: "
                         "bin-blis or bin-openblas, whichever is the other; make bench builds it when that "
                         "library is installed)")
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "moby"), help="prepared data (default data/moby)")
    ap.add_argument("--precision", metavar="P[,P]",
                    help="the train section's precisions, of fp32, bf16 (bin/train --precision; default both where "
                         "the CPU has AVX512_BF16, else fp32)")
    ap.add_argument("--isa", metavar="LEVEL[,LEVEL...]",
                    help="cap our kernels (LM_MAX_ISA) and PyTorch's (ATEN_CPU_CAPABILITY) alike at portable, avx2 "
                         "or avx512, e.g. to measure AVX2 on an AVX-512 machine (default: each at its best); avx2 "
                         "and avx512 also pin OpenBLAS, ours and PyTorch's, to that level's kernels (Haswell, "
                         "SkylakeX) unless the environment sets OPENBLAS_CORETYPE. A comma list such as native,avx2 "
                         "(native: not capped) runs the train section at each level, alternating in every round, "
                         "in one table with an --isa column; the other sections run at the first. A level this "
                         "CPU lacks is refused before anything runs")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    ap.add_argument("--plot", metavar="FILE",
                    help="the generate section's decode tokens/s against context length as a PNG (gnuplot), a "
                         "line per model, mixer and weight format, PyTorch's dashed")
    a = ap.parse_args()
    a.isa_levels = parse_isa(a.isa, cpu_isa_levels()) if a.isa is not None else None
    a.isa_core, a.isa_cores = None, {}
    if a.isa_levels:
        # The sections other than train run at the first level: its environment becomes ours.
        base = dict(os.environ)
        first, a.isa_core = level_env(a.isa_levels[0], base)
        os.environ.clear()
        os.environ.update(first)
        envs = {lv: level_env(lv, base) for lv in a.isa_levels}
        a.isa_cores = {lv: core for lv, (_, core) in envs.items()}
        a.isa_levels = [(lv, envs[lv][0]) for lv in a.isa_levels]
    a.precisions, a.precision_note = parse_precisions(a.precision, cpu_has_bf16())
    a.thread_list = parse_threads(a.threads) if a.threads is not None else default_thread_list(os.cpu_count() or 1)
    if a.thread_list is None:
        die(f"--threads must be a positive count or a comma list of them (got '{a.threads}')")
    a.layout_configs = comma_list("--configs", a.configs, CONFIGS) if a.configs else list(LAYOUT_CONFIGS)
    a.blas_configs = comma_list("--configs", a.configs, CONFIGS) if a.configs else list(BLAS_CONFIGS)
    a.configs = comma_list("--configs", a.configs, CONFIGS) if a.configs else list(CONFIGS)
    # The mixers section's mixers and every other section's: the list given, else all of them and the defaults.
    a.section_mixers = comma_list("--mixers", a.mixers, bench_mixers()) if a.mixers else list(bench_archs())
    a.mixers = comma_list("--mixers", a.mixers, bench_mixers()) if a.mixers else default_mixers()
    multi = a.threads is not None and len(a.thread_list) > 1
    a.sections = comma_list("--sections", a.sections, SECTIONS) if a.sections else \
        [s for s in SECTIONS if s in DEFAULT_SECTIONS or multi]
    if a.rounds is not None and a.rounds < 1:
        die("--rounds must be positive")
    if not a.no_torch and not (os.path.isfile(a.torch_python) and os.access(a.torch_python, os.X_OK)):
        die(f"--torch-python '{a.torch_python}' is not an executable file")
    if a.plot is not None:
        check_plot(a)
    return a


def check_plot(a):
    """--plot FILE, before any run: the generate section asked for, gnuplot there, and FILE a name gnuplot
    can take in a folder that exists."""
    if "generate" not in a.sections:
        die("--plot draws the generate section: add generate to --sections")
    # a file or a new path in a folder that is there, never a folder, FIFO or device, never written
    # through a link (harness/files.py)
    output_check(a.plot, "--plot")
    need_gnuplot()


def cpu_has_bf16():
    """Whether /proc/cpuinfo lists avx512_bf16 (what bin/train --precision bf16 needs)."""
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read().split()
    except OSError:
        return False


def parse_precisions(text, has_bf16):
    """--precision as (the precisions, fp32 first; a note on one left out, or
    None). Not given: fp32 and bf16 where the CPU has AVX512_BF16, else fp32
    and a note saying why; bf16 asked for on a CPU without it dies."""
    if text is None:
        if has_bf16:
            return ["fp32", "bf16"], None
        return ["fp32"], "bf16 left out: this CPU has no AVX512_BF16 (bin/train --precision bf16 needs it)"
    names = comma_list("--precision", text, PRECISIONS)
    if "bf16" in names and not has_bf16:
        die("--precision bf16: this CPU has no AVX512_BF16 (bin/train --precision bf16 needs it)")
    return [p for p in PRECISIONS if p in names], None


def comma_list(option, text, known):
    """The names of a comma list, each of known; dies naming the first unknown one."""
    names = [x for x in text.split(",") if x]
    for x in names:
        if x not in known:
            die(f"{option}: unknown '{x}' (of {', '.join(known)})")
    if not names:
        die(f"{option} is empty")
    return names


def make_context(a, tmp):
    for f in ("train.bin", "val.bin", "tokenizer.txt"):
        if not os.path.exists(os.path.join(a.data, f)):
            die(f"no prepared data in '{a.data}' ({f} missing): run make data")
    for prog in ("train", "eval", "sample", "gemm-rate"):
        if not os.access(os.path.join(BIN, prog), os.X_OK):
            die(f"bin/{prog} is missing: run make")
    ctx = Context()
    mode = "quick" if a.quick else "full"
    ctx.steps, ctx.rounds = STEPS[mode], a.rounds or STEPS[mode]["rounds"]
    # One count for the sections other than scaling and layouts: the one given, the largest of a list, or all cores.
    ctx.threads = a.thread_list[-1] if a.threads is not None else os.cpu_count()
    ctx.thread_list, ctx.layout_configs, ctx.mixers = a.thread_list, a.layout_configs, a.mixers
    ctx.blas_configs = a.blas_configs
    ctx.section_mixers = a.section_mixers
    ctx.quick, ctx.configs, ctx.tmp = a.quick, a.configs, tmp
    ctx.torch_python = a.torch_python
    ctx.isa_core = a.isa_core  # the OpenBLAS core --isa's first level pinned, or None
    # The train section's levels as (name, environment); (None, None): ours, --isa not given.
    ctx.isa_levels = a.isa_levels or [(None, None)]
    ctx.precisions, ctx.precision_note = a.precisions, a.precision_note
    ctx.data = os.path.abspath(a.data)
    ctx.vocab = token_header(os.path.join(a.data, "train.bin"))["vocab"]
    ctx.eval_tokens = ctx.steps["eval_tokens"]
    ctx.eval_data = eval_prefix(ctx.data, tmp, ctx.eval_tokens) if ctx.eval_tokens else ctx.data
    ctx.widths = list(WIDTHS[mode])
    ctx.library = library_of(BIN)
    others = [lib for lib in KERNEL_VARIABLE if lib != ctx.library]
    ctx.other_bin = os.path.abspath(a.other_bin) if a.other_bin else \
        os.path.join(ROOT, f"bin-{others[0]}") if ctx.library and len(others) == 1 else None
    ctx.other_library = library_of(ctx.other_bin) if ctx.other_bin else None
    ctx.other_missing = None
    if not ctx.library:
        ctx.other_missing = "bin/.blas-library is missing: run make"
    elif not ctx.other_bin or not os.access(os.path.join(ctx.other_bin, "train"), os.X_OK) or not ctx.other_library:
        ctx.other_missing = (f"no build with the other library in {ctx.other_bin} "
                             f"(make BLAS={others[0]} BIN=bin-{others[0]}, or --other-bin DIR)")
    elif ctx.other_library == ctx.library:
        ctx.other_missing = f"{ctx.other_bin} holds a {LIBRARY_NAME[ctx.library]} build too"
    if ctx.other_missing:
        ctx.other_bin = None
    # The reason PyTorch is not measured: --no-torch, or set by the first PyTorch run that fails.
    ctx.torch_missing = "--no-torch was given" if a.no_torch else None
    return ctx


def main():
    a = parse_args()
    out = {}
    try:
        # a stop waits for the programs running in tmp before tmp is removed (harness/procs.py)
        with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp, children_end_first():
            ctx = make_context(a, tmp)
            out["machine"] = {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": ctx.threads,
                              "thread_list": ctx.thread_list, "torch_python": ctx.torch_python,
                              "rounds": ctx.rounds, "quick": ctx.quick, "data": ctx.data, "vocab": ctx.vocab,
                              "openblas_coretype_env": None if a.isa_core else os.environ.get("OPENBLAS_CORETYPE"),
                              "openblas_coretype_isa": a.isa_core,
                              "lm_max_isa": os.environ.get("LM_MAX_ISA"), "torch_isa": torch_isa(),
                              "isa_levels": [lv for lv, _ in ctx.isa_levels if lv], "isa_openblas_cores": a.isa_cores,
                              "blis_arch_type_env": os.environ.get("BLIS_ARCH_TYPE"),
                              "torch_unavailable": ctx.torch_missing, "precisions": ctx.precisions,
                              "precision_note": ctx.precision_note}
            progress(f"{cpu_model()}, {ctx.threads} threads"
                     + (f" (scaling: {','.join(map(str, ctx.thread_list))})" if {"scaling", "layouts"} & set(a.sections) else "")
                     + f", {plural(ctx.rounds, 'round')}; sections {','.join(a.sections)}")
            for s in SECTIONS:
                if s in a.sections:
                    out[s] = SECTION_RUNS[s](ctx)
            out["machine"]["torch_unavailable"] = ctx.torch_missing
    finally:
        kill_children()  # a failure on the way leaves none running (a stop waits for them: harness/procs.py)
    out["seconds"] = time.monotonic() - T0
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        print_report(ctx, out)
    # After the report, so that a plot that fails loses none of the run's numbers.
    if a.plot:
        plot_generate(ctx, out["generate"], a.plot)
        print(f"wrote {a.plot}", file=sys.stderr if a.json else sys.stdout)


def print_report(ctx, out):
    m = out["machine"]
    print(f"make bench: {m['cpu']} ({m['cores']} cores), {m['threads']} threads for C and PyTorch, "
          f"{plural(m['rounds'], 'round')}{' (--quick)' if m['quick'] else ''}; data {m['data']} (vocab {m['vocab']})")
    if m["openblas_coretype_env"]:
        print(f"OPENBLAS_CORETYPE={m['openblas_coretype_env']} is set by the environment: PyTorch's OpenBLAS and "
              "every C program built with OpenBLAS keep it.")
    if m.get("openblas_coretype_isa"):
        print(f"OPENBLAS_CORETYPE={m['openblas_coretype_isa']}: --isa {m['lm_max_isa']} pins PyTorch's OpenBLAS and "
              "every C program built with OpenBLAS to that level's kernels (the environment set none).")
    if len(m.get("isa_levels") or []) > 1:
        pins = [f"{lv}: OPENBLAS_CORETYPE={core}" for lv, core in m["isa_openblas_cores"].items() if core]
        print(f"--isa {','.join(m['isa_levels'])}: the train section runs at each level in turn in every round; "
              f"the other sections at {m['isa_levels'][0]}"
              + (f" (OpenBLAS pinned, as the environment sets no OPENBLAS_CORETYPE: {'; '.join(pins)})." if pins else "."))
    if m.get("blis_arch_type_env"):
        print(f"BLIS_ARCH_TYPE={m['blis_arch_type_env']} is set by the environment: every C program keeps it.")
    if m["torch_unavailable"]:
        print(f"PyTorch: not measured ({m['torch_unavailable']})")
    if m.get("precision_note"):
        print(f"precision: {m['precision_note']}")
    for s in SECTIONS:
        for show in SECTION_PRINTS[s] if s in out else ():
            show(ctx, out[s])
    print(f"\nbench took {out['seconds']:.0f} s")


SECTION_RUNS = {"train": section_train, "mixers": section_mixers, "kernel": section_kernel, "blas": section_blas,
                "load": section_load,
               "mpi": section_mpi, "scaling": section_scaling, "layouts": section_layouts, "generate": section_generate}
SECTION_PRINTS = {"train": (print_speed, print_flops, print_memory, print_profile, print_inference),
                  "mixers": (print_mixers,), "kernel": (print_kernel,), "blas": (print_blas,), "load": (print_load,),
                  "mpi": (print_mpi,),
                  "scaling": (print_scaling,), "layouts": (print_layouts,), "generate": (print_generate,)}
