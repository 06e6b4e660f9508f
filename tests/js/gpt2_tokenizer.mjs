// The real GPT-2 tokenizer, from tiktoken's `gpt2` encoding (which ships
// GPT-2's ranks), in Hugging Face's files, and our import of them checked
// against tiktoken and HF tokenizers. Two steps (tests/js/gpt2_tokenizer.sh):
//
//   node gpt2_tokenizer.mjs derive OUT NODE_MODULES
//     writes OUT/files/{vocab.json,merges.txt}, OUT/json/tokenizer.json
//     (merges as "a b", as GPT-2's own) and OUT/pairs/tokenizer.json (merges
//     as ["a", "b"], as tokenizers >= 0.20 save them), and OUT/edge.txt.
//   node gpt2_tokenizer.mjs compare DATA_DIR TEXT_FILE TOKENIZER_JSON NODE_MODULES
//     DATA_DIR is bin/prepare --tokenizer-from one of them on TEXT_FILE: our
//     table is tiktoken's token for token, our ids decode to the file, and
//     tiktoken and HF (loading TOKENIZER_JSON) encode each split's text to
//     exactly our ids and decode our ids to exactly the text.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { readTokens, readBpe, checker } from "./tokenizer_files.mjs";

const [command, ...args] = process.argv.slice(2);
const modules = args[args.length - 1];
const require = createRequire(path.join(modules, "x.js"));
const { get_encoding } = require("tiktoken");
const ENDOFTEXT = "<|endoftext|>", N_RANKS = 50256;

// GPT-2's bytes_to_unicode: printable Latin-1 bytes as themselves, the
// other 68 as U+0100 onwards in byte order.
function byteChars() {
  const chars = [];
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars.push(String.fromCodePoint(printable ? b : next++));
  }
  return chars;
}

// Each token's merge, from the ranks alone: BPE on the token's bytes with
// only the ranks below its own ends in exactly two parts, the merge's.
function recoverMerges(tokens) {
  const rank = new Map(tokens.map((t, r) => [Buffer.from(t).toString("latin1"), r]));
  const merges = [];
  for (let r = 256; r < tokens.length; r++) {
    let parts = Array.from(tokens[r], (b) => String.fromCharCode(b));
    for (;;) {
      let best = -1, bestRank = r;
      for (let i = 0; i + 1 < parts.length; i++) {
        const got = rank.get(parts[i] + parts[i + 1]);
        if (got !== undefined && got < bestRank) [best, bestRank] = [i, got];
      }
      if (best < 0) break;
      parts.splice(best, 2, parts[best] + parts[best + 1]);
    }
    if (parts.length !== 2) throw new Error(`rank ${r} is not one merge of two earlier tokens`);
    merges.push(parts.map((p) => Buffer.from(p, "latin1")));
  }
  return merges;
}

function derive(out) {
  const enc = get_encoding("gpt2");
  const tokens = [];
  for (let r = 0; r < N_RANKS; r++) tokens.push(enc.decode_single_token_bytes(r));
  enc.free();
  const chars = byteChars();
  const spell = (bytes) => Array.from(bytes, (b) => chars[b]).join("");
  const vocab = Object.fromEntries(tokens.map((t, r) => [spell(t), r]));
  if (Object.keys(vocab).length !== N_RANKS) throw new Error("tiktoken's gpt2 ranks are not distinct byte strings");
  vocab[ENDOFTEXT] = N_RANKS;
  const merges = recoverMerges(tokens).map(([l, r]) => [spell(l), spell(r)]);
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  // The layout of GPT-2's own tokenizer.json.
  const tokenizerJson = (mergeList) => JSON.stringify({
    version: "1.0", truncation: null, padding: null,
    added_tokens: [{ id: N_RANKS, content: ENDOFTEXT, single_word: false, lstrip: false, rstrip: false,
                     normalized: true, special: true }],
    normalizer: null, pre_tokenizer: byteLevel,
    post_processor: { ...byteLevel, trim_offsets: false }, decoder: byteLevel,
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
             fuse_unk: false, byte_fallback: false, vocab, merges: mergeList },
  });
  for (const d of ["files", "json", "pairs"]) fs.mkdirSync(path.join(out, d), { recursive: true });
  fs.writeFileSync(path.join(out, "files/vocab.json"), JSON.stringify(vocab));
  fs.writeFileSync(path.join(out, "files/merges.txt"), "#version: 0.2\n" + merges.map((m) => m.join(" ") + "\n").join(""));
  fs.writeFileSync(path.join(out, "json/tokenizer.json"), tokenizerJson(merges.map((m) => m.join(" "))));
  fs.writeFileSync(path.join(out, "pairs/tokenizer.json"), tokenizerJson(merges));
  // Edges of the split pattern and of the byte-level spelling.
  const edge = [
    "Hello world. Hello  world.   Three spaces, and trailing spaces   ",
    "\ttabs\t\tand\t \tmixed\t",
    "windows\r\nline ends\r\n\r\nand a lone\rreturn",
    "I'm you're they've we'll she'd it's IT'S 'tis o'clock ''quoted''",
    "numbers 1234567890 3.14159 -42 1,000,000 ２０２４ ⅷ",
    "café naïve Zürich Ελληνικά русский язык 中文字符 日本語のテキスト 한국어 עברית العربية",
    "emoji 👋🏽 🧑‍🚀 ❤️ 🏳️‍🌈 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 outside the BMP",
    "combining: e\u0301 a\u0308 n\u0303; nbsp:\u00a0\u00a0x; zero width:\u200b\u200c\u200d; ideographic\u3000space",
    "control \u0001\u0002\u001f and DEL \u007f, soft\u00adhyphen, replacement \ufffd",
    "punctuation!!! ??? ... --- ((())) [[]] {{}} <<>> @#$%^&*_+=|\\/~`",
    "code: def f(x):\n    return x**2  # square\n\n\n\n",
    "URL https://example.com/a?b=c&d=e#frag and e-mail someone@example.org",
    "   \n   \n  ",
  ].join("\n");
  fs.writeFileSync(path.join(out, "edge.txt"), edge);
}

async function compare(dataDir, textFile, tokenizerJson) {
  const { Tokenizer } = require("tokenizers");
  const ours = readBpe(dataDir);
  const { check, sameIds, failures } = checker();
  const enc = get_encoding("gpt2");
  let same = ours.table.length === N_RANKS;
  for (let r = 0; same && r < N_RANKS; r++) same = ours.table[r].equals(Buffer.from(enc.decode_single_token_bytes(r)));
  check(same && ours.specials.length === 1 && ours.specials[0] === ENDOFTEXT,
        `our table is tiktoken gpt2's, all ${N_RANKS} tokens, then ${ENDOFTEXT} (50256)`);

  const splits = ["train", "val", "test"].filter((s) => fs.existsSync(path.join(dataDir, `${s}.bin`)));
  const ids = Object.fromEntries(splits.map((s) => [s, readTokens(path.join(dataDir, `${s}.bin`))]));
  const original = fs.readFileSync(textFile);
  check(Buffer.concat(splits.map((s) => ours.decode(ids[s]))).equals(original),
        `our ids decode to ${path.basename(textFile)} exactly (${original.length} bytes)`);
  const hf = Tokenizer.fromFile(tokenizerJson);
  for (const s of splits) {
    const text = ours.decode(ids[s]).toString("utf8");
    sameIds(Array.from(enc.encode_ordinary(text)), ids[s], `${s}: tiktoken gpt2 encodes the text to our ids`, "tiktoken");
    check(Buffer.from(enc.decode(new Uint32Array(ids[s]))).toString("utf8") === text, `${s}: tiktoken decodes our ids to the text`);
    const hfIds = Array.from((await hf.encode(text, null, { addSpecialTokens: false })).getIds());
    sameIds(hfIds, ids[s], `${s}: HF tokenizers encodes the text to our ids`, "HF");
    check((await hf.decode(ids[s], false)) === text, `${s}: HF tokenizers decodes our ids to the text`);
  }
  enc.free();
  return failures();
}

if (command === "derive") derive(args[0]);
else if (command === "compare") process.exit((await compare(args[0], args[1], args[2])) ? 1 : 0);
else throw new Error("usage: gpt2_tokenizer.mjs derive OUT MODULES | compare DATA_DIR TEXT_FILE TOKENIZER_JSON MODULES");
