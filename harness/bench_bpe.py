"""BPE speed and memory, measured on this machine, both sides in one run.

1. Training a 4,096-token vocabulary on Moby Dick: bin/prepare --tokenizer bpe
   (its "learned ... in S s": counting pieces + merges; and the whole process)
   vs SentencePiece's BPE trainer (python3-sentencepiece, 2 threads). Hugging
   Face tokenizers' npm binding exposes only its default trainer (30,000
   tokens, GPT-2 byte-level pre-tokenizer), so it is compared with ours at
   --vocab-size 30000 --split-pattern gpt2.
2. Encoding MB/s on Moby Dick x 20 with one tokenizer (ours, 4,096, gpt4):
   bin/prepare's encoding vs HF tokenizers (encodeBatch over 16 KB chunks) and
   tiktoken (encode_ordinary, WASM, one thread) on the same chunks.
3. Peak RSS of bin/prepare and of 20 training steps on a ~200 MB text (Moby
   Dick copies in the scratch directory).
Medians of --rounds runs. Needs the npm packages of tests/js/bpe_agreement.sh
(run it first); the parts that need them are skipped with a message if absent.
Usage: /usr/bin/python3 -m harness.bench_bpe [--rounds 3] [--skip-200mb]"""
import argparse
import os
import re
import subprocess
import tempfile
import time

from harness.common import BIN, ROOT, cpu_model, die, guarded, median, run_ok

MOBY = os.path.join(ROOT, "data/cache/moby-dick.txt")
NPM = os.path.join(os.environ.get("TMPDIR", "/tmp"), "lm-bpe-agreement-npm/node_modules")


def run(cmd, env=None):
    """Runs cmd; returns (stdout + stderr, wall seconds, peak RSS MiB)."""
    r = run_ok(cmd, env)
    return r.out + r.err, r.seconds, r.rss_mib


def prepare(text, out, vocab, pattern="gpt4"):
    """bin/prepare --tokenizer bpe: (seconds learning the merges, seconds encoding, wall seconds, peak RSS).
    The two times are read from its human text (stderr and stdout): it has no --json."""
    cmd = [os.path.join(BIN, "prepare"), "--input", text, "--out", out, "--tokenizer", "bpe",
           "--vocab-size", str(vocab), "--split-pattern", pattern]
    log, wall, rss = run(cmd)
    learned = re.search(r"merges from \d+ bytes .* in ([0-9.]+) s", log)
    encoded = re.search(r"encoded in ([0-9.]+) s", log)
    if not learned or not encoded:
        die("bin/prepare no longer prints 'learned ... in S s' and 'encoded in S s'", 1)
    return float(learned.group(1)), float(encoded.group(1)), wall, rss


NODE_HF_TRAIN = r"""
const { createRequire } = require("node:module");
const r = createRequire(process.argv[1] + "/x.js");
const tk = r("tokenizers");
const t = new tk.Tokenizer(tk.BPE.empty());
t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
const t0 = process.hrtime.bigint();
t.train([process.argv[2]]);
console.log(Number(process.hrtime.bigint() - t0) / 1e9, t.getVocabSize());
"""

NODE_ENCODE = r"""
const fs = require("node:fs");
const { createRequire } = require("node:module");
const r = createRequire(process.argv[1] + "/x.js");
const { Tokenizer } = r("tokenizers");
const { Tiktoken } = r("tiktoken/lite");
const [dir, textFile, which] = process.argv.slice(2);
const text = fs.readFileSync(textFile, "utf8");
// 16 KB chunks (HF was fastest at this size of 1, 16 and 256 KB) cut after a newline that precedes a letter (no piece spans it).
const chunks = [];
for (let at = 0; at < text.length;) {
  let end = Math.min(text.length, at + (1 << 14));
  while (end < text.length && !(text[end - 1] === "\n" && /[A-Za-z]/.test(text[end]))) end++;
  chunks.push(text.slice(at, end));
  at = end;
}
const bytes = Buffer.byteLength(text);
(async () => {
  let n = 0, t0;
  if (which === "hf") {
    const hf = Tokenizer.fromFile(dir + "/tokenizer.json");
    t0 = process.hrtime.bigint();
    const encs = await hf.encodeBatch(chunks, { addSpecialTokens: false });
    for (const e of encs) n += e.getIds().length;
  } else {
    const lines = fs.readFileSync(dir + "/tokenizer.txt", "utf8").split("\n");
    const regex = lines[3].slice(6);
    const k = Number(lines[4].split(" ")[1]);
    const m = Number(lines[5 + k].split(" ")[1]);
    const table = [];
    for (let i = 0; i < 256; i++) table.push(Buffer.from([i]));
    for (let j = 0; j < m; j++) {
      const [a, b] = lines[6 + k + j].split(" ").map(Number);
      table.push(Buffer.concat([table[a], table[b]]));
    }
    const tk = new Tiktoken(table.map((t, i) => `${t.toString("base64")} ${i}`).join("\n") + "\n", {}, regex);
    t0 = process.hrtime.bigint();
    for (const c of chunks) n += tk.encode_ordinary(c).length;
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(s, n, bytes);
})();
"""


def node(script, *args):
    out, _, _ = run(["node", "-e", script, NPM] + list(args), env=dict(os.environ, RAYON_NUM_THREADS="2"))
    return out.split()


def main():
    ap = argparse.ArgumentParser(prog="/usr/bin/python3 -m harness.bench_bpe")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-200mb", action="store_true")
    args = ap.parse_args()
    have_npm = os.path.isdir(os.path.join(NPM, "tiktoken"))
    if not have_npm:
        print(f"bench_bpe: no npm packages in {NPM} (run tests/js/bpe_agreement.sh): HF and tiktoken parts skipped")
    tmp = tempfile.mkdtemp(prefix="bench_bpe_")
    print(f"CPU: {cpu_model()}, "
          f"{os.cpu_count()} cores (shared: timings are noisy); OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'all')}")

    # 1. training
    ours, ours_wall, sp, ours30, hf30 = [], [], [], [], []
    try:
        import sentencepiece as spm
    except ImportError:
        die("python3-sentencepiece is not installed (apt-get install python3-sentencepiece)")
    for r in range(args.rounds):
        learned, _, wall, _ = prepare(MOBY, os.path.join(tmp, "b4096"), 4096)
        ours.append(learned)
        ours_wall.append(wall)
        t0 = time.monotonic()
        spm.SentencePieceTrainer.train(input=MOBY, model_prefix=os.path.join(tmp, "sp"), vocab_size=4096,
                                       model_type="bpe", num_threads=2, character_coverage=1.0,
                                       max_sentence_length=1 << 20, minloglevel=2)
        sp.append(time.monotonic() - t0)
        if have_npm:
            ours30.append(prepare(MOBY, os.path.join(tmp, "b30k"), 30000, "gpt2")[0])
            hf30.append(float(node(NODE_HF_TRAIN, MOBY)[0]))
    med = median
    print(f"\ntraining on Moby Dick ({os.path.getsize(MOBY)} bytes), median of {args.rounds}:")
    print(f"  ours, 4096 (gpt4): {med(ours):.3f} s counting + merging ({med(ours_wall):.3f} s for all of bin/prepare)")
    print(f"  SentencePiece BPE, 4096, 2 threads: {med(sp):.3f} s  -> ours {med(sp) / med(ours):.1f}x faster "
          f"({med(sp) / med(ours_wall):.1f}x counting all of bin/prepare)")
    if have_npm:
        print(f"  ours, 30000 (gpt2): {med(ours30):.3f} s; HF tokenizers default trainer (30000, byte-level GPT-2): "
              f"{med(hf30):.3f} s  -> ours {med(hf30) / med(ours30):.1f}x faster")

    # 2. encoding
    big = os.path.join(tmp, "moby20.txt")
    with open(MOBY, "rb") as f:
        moby = f.read()
    with open(big, "wb") as f:
        for _ in range(20):
            f.write(moby)
    size = os.path.getsize(big)
    enc, hf, tk = [], [], []
    for r in range(args.rounds):
        _, e, _, _ = prepare(big, os.path.join(tmp, "e"), 4096)
        enc.append(size / e / 1e6)
        if have_npm:
            s, n, b = node(NODE_ENCODE, os.path.join(tmp, "b4096"), big, "hf")
            hf.append(int(b) / float(s) / 1e6)
            s, n, b = node(NODE_ENCODE, os.path.join(tmp, "b4096"), big, "tiktoken")
            tk.append(int(b) / float(s) / 1e6)
    print(f"\nencoding Moby Dick x 20 ({size / 1e6:.1f} MB), one 4096 tokenizer, median of {args.rounds}:")
    print(f"  ours (bin/prepare, 2 threads, incl. writing the token files): {med(enc):.1f} MB/s")
    if have_npm:
        print(f"  HF tokenizers (encodeBatch of 16 KB chunks, RAYON_NUM_THREADS=2): {med(hf):.1f} MB/s -> ours {med(enc) / med(hf):.2f}x")
        print(f"  tiktoken (WASM, one thread, same chunks): {med(tk):.1f} MB/s -> ours {med(enc) / med(tk):.2f}x")
    os.remove(big)

    # 3. memory on ~200 MB
    if not args.skip_200mb:
        huge = os.path.join(tmp, "moby200.txt")
        with open(huge, "wb") as f:
            while f.tell() < 200_000_000:
                f.write(moby)
        size = os.path.getsize(huge)
        learned, e, wall, rss = prepare(huge, os.path.join(tmp, "h"), 4096)
        _, twall, trss = run([os.path.join(BIN, "train"), "--data", os.path.join(tmp, "h"), "--out",
                              os.path.join(tmp, "h.ckpt"), "--max-iters", "20", "--eval-interval", "0",
                              "--eval-iters", "1", "--log-interval", "20"])
        print(f"\n{size / 1e6:.0f} MB of text: bin/prepare (4096, gpt4) {wall:.1f} s "
              f"({learned:.1f} s counting + merging, {size / e / 1e6:.1f} MB/s encoding), peak RSS {rss:.0f} MiB; "
              f"bin/train 20 steps peak RSS {trss:.0f} MiB")
        os.remove(huge)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    guarded(main)
