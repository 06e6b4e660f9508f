"""The programs at GPT-2 small's size (124M parameters: 12 layers, 12 heads,
768 wide, block 1024, vocabulary 50,257): bin/eval, bin/sample, one
bin/train --init step and bin/inspect, timed and their peak memory measured.
Not part of make test (the model is 500 MB and a run takes minutes); what it
printed is in docs/programs.md#gpt-2-smalls-size.

Every program runs with --threads 2 under `flock /tmp/lm-timing.lock` (so
two people's timings never overlap) and /usr/bin/time -v (wall time, peak
RSS); the measurements alternate, ROUNDS times, and the medians are printed.
With --compare BIN the same programs from BIN (another build, such as main's)
alternate with these, for a before/after.

  /usr/bin/python3 -m tests.tools.gpt2_scale [--dir runs/gpt2] [--rounds 3] [--batch 4] [--compare /work/main/bin]

The model and its data are forged on first use by tests/tools/gpt2_forge.py
(random N(0, 0.02) weights, a byte-level BPE of 50,000 merges spelling the
words of data/cache/moby-dick.txt when it is there). For GPT-2's real
tokenizer, prepare DIR/data with it and forge DIR/model.ckpt from that
(docs/programs.md#at-gpt-2-smalls-size), then give --dir DIR."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

LOCK = "/tmp/lm-timing.lock"
PROMPT = "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse"


def timed(cmd):
    """Runs cmd under the timing lock and /usr/bin/time -v: (stdout, wall s, peak RSS MiB)."""
    full = ["flock", LOCK, "/usr/bin/time", "-v"] + cmd
    p = subprocess.run(full, capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        sys.exit(f"gpt2_scale: {' '.join(cmd)} failed ({p.returncode}): {p.stderr[-600:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
    h, m, s = wall.groups()
    seconds = (int(h) if h else 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) / 1024
    return p.stdout, seconds, rss


def measure(bin_dir, d, batch):
    """One round of every measurement with the programs in bin_dir."""
    model, data, out = f"{d}/model.ckpt", f"{d}/data", {}
    stdout, wall, rss = timed([f"{bin_dir}/eval", "--model", model, "--data", data, "--batch-size", "4", "--threads", "2",
                               "--json"])
    ev = json.loads(stdout)
    out["eval tokens/s"] = ev["scored"] / wall
    out["eval wall s"] = wall
    out["eval RSS MiB"] = rss
    _, wall0, _ = timed([f"{bin_dir}/sample", "--model", model, "--prompt", PROMPT, "-n", "0", "--threads", "2"])
    _, wall1, rss = timed([f"{bin_dir}/sample", "--model", model, "--prompt", PROMPT, "-n", "256", "--threads", "2"])
    out["sample tokens/s"] = 256 / (wall1 - wall0)
    out["sample load s"] = wall0
    out["sample RSS MiB"] = rss
    # From the model's weights with --init; a build without it (an older one, to compare) starts the same
    # model new, which is the same work.
    has_init = "--init" in subprocess.run([f"{bin_dir}/train", "--help"], capture_output=True, text=True).stdout
    start = ["--init", model] if has_init else ["--n-layer", "12", "--n-head", "12", "--n-embd", "768",
                                                 "--block-size", "1024"]
    stdout, wall, rss = timed([f"{bin_dir}/train", *start, "--data", data, "--out", f"{d}/step.ckpt",
                               "--batch-size", str(batch), "--max-iters", "2", "--eval-interval", "0",
                               "--eval-iters", "1", "--threads", "2", "--profile", "--json"])
    tr = json.loads(stdout.strip().splitlines()[-1])
    step_s = tr["profile"]["step_ms"] / 1e3
    out["train step s"] = step_s
    out["train tokens/s"] = batch * 1024 / step_s
    out["train RSS MiB"] = rss
    out["train memory_mib"] = sum(tr["memory_mib"].values())
    stdout, wall, rss = timed([f"{bin_dir}/inspect", "--model", model, "--prompt", PROMPT, "--out", f"{d}/inspect",
                               "--threads", "2"])
    out["inspect wall s"] = wall
    out["inspect RSS MiB"] = rss
    out["inspect output MiB"] = sum(os.path.getsize(os.path.join(f"{d}/inspect", f))
                                    for f in os.listdir(f"{d}/inspect")) / 2**20
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="runs/gpt2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="bin/train's batch (of 1024 tokens)")
    ap.add_argument("--bin", default=os.environ.get("BIN", "bin"))
    ap.add_argument("--compare", help="another bin directory, measured alternately")
    a = ap.parse_args()
    if not os.path.exists(f"{a.dir}/model.ckpt"):
        text = ["--text", "data/cache/moby-dick.txt"] if os.path.exists("data/cache/moby-dick.txt") else []
        subprocess.run([sys.executable, "-m", "tests.tools.gpt2_forge", "--out", f"{a.dir}/model.ckpt", "--data",
                        f"{a.dir}/data"] + text, check=True)
    bins = [a.bin] + ([a.compare] if a.compare else [])
    rounds = {b: [] for b in bins}
    start = time.time()
    for r in range(a.rounds):
        for b in bins:
            rounds[b].append(measure(b, a.dir, a.batch))
            print(f"round {r + 1} {b}: " + ", ".join(f"{k} {v:.1f}" for k, v in rounds[b][-1].items()), flush=True)
    print(f"\nmedians of {a.rounds} rounds, --threads 2, train batch {a.batch} x 1024 "
          f"({time.time() - start:.0f} s in all)")
    keys = list(rounds[bins[0]][0])
    print(f"{'':22}" + "".join(f"{b:>22}" for b in bins))
    for k in keys:
        print(f"{k:22}" + "".join(f"{statistics.median(x[k] for x in rounds[b]):>22.2f}" for b in bins))


if __name__ == "__main__":
    main()
