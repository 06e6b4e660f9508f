// Our BPE against two independent implementations: Hugging Face tokenizers
// (loading our tokenizer.json) and tiktoken (our merges as ranks, our split
// pattern). Usage: node bpe_agreement.mjs DATA_DIR TEXT_FILE NODE_MODULES
// DATA_DIR comes from `bin/prepare --tokenizer bpe` on TEXT_FILE (one file, no
// separator). Held-out text is val.bin and test.bin decoded with our table;
// first we check that train+val+test decode to the file byte for byte.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { readTokens, readBpe, checker } from "./tokenizer_files.mjs";

const [dataDir, textFile, modules] = process.argv.slice(2);
const require = createRequire(path.join(modules, "x.js"));
const { Tokenizer } = require("tokenizers");
const { Tiktoken } = require("tiktoken/lite");

const { table, regex, specials, nMerges, decode: decodeOurs } = readBpe(dataDir);
const { check, sameIds, failures } = checker();

const splits = ["train", "val", "test"].filter((s) => fs.existsSync(path.join(dataDir, `${s}.bin`)));
const ids = Object.fromEntries(splits.map((s) => [s, readTokens(path.join(dataDir, `${s}.bin`))]));
const original = fs.readFileSync(textFile);
const whole = Buffer.concat(splits.map((s) => decodeOurs(ids[s])));
check(whole.equals(original), `our ids decode to ${textFile} exactly (${original.length} bytes)`);

const hf = Tokenizer.fromFile(path.join(dataDir, "tokenizer.json"));
const ranks = table.map((t, i) => `${t.toString("base64")} ${i}`).join("\n") + "\n";
const specialIds = Object.fromEntries(specials.map((s, i) => [s, 256 + nMerges + i]));
const tk = new Tiktoken(ranks, specialIds, regex);

for (const s of splits.filter((x) => x !== "train")) {
  const ours = ids[s];
  const text = decodeOurs(ours).toString("utf8");
  const hfIds = Array.from((await hf.encode(text, null, { addSpecialTokens: false })).getIds());
  sameIds(hfIds, ours, `${s}: HF tokenizers re-encodes our ids`, "HF");
  check((await hf.decode(ours, false)) === text, `${s}: HF tokenizers decodes our ids to the text`);
  sameIds(Array.from(tk.encode_ordinary(text)), ours, `${s}: tiktoken re-encodes our ids`, "tiktoken");
  check(Buffer.from(tk.decode(new Uint32Array(ours))).toString("utf8") === text, `${s}: tiktoken decodes our ids to the text`);
}
tk.free();
process.exit(failures() ? 1 : 0);
