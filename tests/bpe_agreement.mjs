// Our BPE against two independent implementations: Hugging Face tokenizers
// (loading our tokenizer.json) and tiktoken (our merges as ranks, our split
// pattern). Usage: node bpe_agreement.mjs DATA_DIR TEXT_FILE NODE_MODULES
// DATA_DIR comes from `bin/prepare --tokenizer bpe` on TEXT_FILE (one file, no
// separator). Held-out text is val.bin and test.bin decoded with our table;
// first we check that train+val+test decode to the file byte for byte.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [dataDir, textFile, modules] = process.argv.slice(2);
const require = createRequire(path.join(modules, "x.js"));
const { Tokenizer } = require("tokenizers");
const { Tiktoken } = require("tiktoken/lite");

function readTokens(file) {
  const b = fs.readFileSync(file);
  if (b.toString("latin1", 0, 8) !== "LMTOKENS") throw new Error(`${file}: not a token file`);
  const width = b.readUInt32LE(12), n = Number(b.readBigUInt64LE(24));
  const ids = new Array(n);
  for (let i = 0; i < n; i++) ids[i] = width === 2 ? b.readUInt16LE(32 + 2 * i) : b.readUInt32LE(32 + 4 * i);
  return ids;
}

// Our token table, from tokenizer.txt: bytes, then merges, then specials.
const lines = fs.readFileSync(path.join(dataDir, "tokenizer.txt"), "utf8").split("\n");
const regex = lines[3].slice("regex ".length);
let at = 4;
const nSpecials = Number(lines[at++].split(" ")[1]);
const specials = lines.slice(at, at + nSpecials).map((h) => Buffer.from(h, "hex").toString("utf8"));
at += nSpecials;
const nMerges = Number(lines[at++].split(" ")[1]);
const table = [];
for (let i = 0; i < 256; i++) table.push(Buffer.from([i]));
for (let k = 0; k < nMerges; k++) {
  const [l, r] = lines[at + k].split(" ").map(Number);
  table.push(Buffer.concat([table[l], table[r]]));
}
const decodeOurs = (ids) => Buffer.concat(ids.map((i) => table[i]));

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
};
const firstDiff = (a, b) => {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
};

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
  const d1 = firstDiff(hfIds, ours);
  check(hfIds.length === ours.length && d1 === ours.length,
        `${s}: HF tokenizers re-encodes ${ours.length} ids token for token` +
        (d1 < ours.length ? ` (first difference at ${d1}: ours ${ours[d1]}, HF ${hfIds[d1]})` : ""));
  check((await hf.decode(ours, false)) === text, `${s}: HF tokenizers decodes our ids to the text`);
  const tkIds = Array.from(tk.encode_ordinary(text));
  const d2 = firstDiff(tkIds, ours);
  check(tkIds.length === ours.length && d2 === ours.length,
        `${s}: tiktoken re-encodes ${ours.length} ids token for token` +
        (d2 < ours.length ? ` (first difference at ${d2}: ours ${ours[d2]}, tiktoken ${tkIds[d2]})` : ""));
  check(Buffer.from(tk.decode(new Uint32Array(ours))).toString("utf8") === text, `${s}: tiktoken decodes our ids to the text`);
}
tk.free();
process.exit(failures ? 1 : 0);
