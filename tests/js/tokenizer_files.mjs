// What the Node tokenizer tests (bpe_agreement.mjs, gpt2_tokenizer.mjs) read
// back from a prepared data directory: token files and the BPE tokenizer's
// table of token bytes; and their pass/fail lines.
import fs from "node:fs";
import path from "node:path";

export function readTokens(file) {
  const b = fs.readFileSync(file);
  if (b.toString("latin1", 0, 8) !== "LMTOKENS") throw new Error(`${file}: not a token file`);
  const width = b.readUInt32LE(12), n = Number(b.readBigUInt64LE(24));
  const ids = new Array(n);
  for (let i = 0; i < n; i++) ids[i] = width === 2 ? b.readUInt16LE(32 + 2 * i) : b.readUInt32LE(32 + 4 * i);
  return ids;
}

// tokenizer.txt of a bpe tokenizer (docs/design.md): ids 0..255 the bytes (in
// the order of the byte-order line when there is one), then each merge, then
// the specials. table holds the bytes of ids below the specials.
export function readBpe(dataDir) {
  const lines = fs.readFileSync(path.join(dataDir, "tokenizer.txt"), "utf8").split("\n");
  const regex = lines[3].slice("regex ".length);
  let at = 4;
  const nSpecials = Number(lines[at++].split(" ")[1]);
  const specials = lines.slice(at, at + nSpecials).map((h) => Buffer.from(h, "hex").toString("utf8"));
  at += nSpecials;
  const nMerges = Number(lines[at++].split(" ")[1]);
  const orderLine = lines[at + nMerges];
  const byteOf = orderLine.startsWith("byte-order ") ? orderLine.split(" ").slice(1).map(Number) : [...Array(256).keys()];
  const table = byteOf.map((b) => Buffer.from([b]));
  for (let k = 0; k < nMerges; k++) {
    const [l, r] = lines[at + k].split(" ").map(Number);
    table.push(Buffer.concat([table[l], table[r]]));
  }
  const decode = (ids) => Buffer.concat(ids.map((i) => table[i]));
  return { regex, specials, nMerges, table, decode };
}

export function checker() {
  let failures = 0;
  const check = (ok, what) => {
    console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
    if (!ok) failures++;
  };
  // Two id lists equal, or the line names where they first differ.
  const sameIds = (theirs, ours, what, who) => {
    let i = 0;
    while (i < theirs.length && i < ours.length && theirs[i] === ours[i]) i++;
    check(theirs.length === ours.length && i === ours.length,
          `${what} token for token (${ours.length} ids)` +
          (i < Math.max(ours.length, theirs.length) ? ` (first difference at ${i}: ours ${ours[i]}, ${who} ${theirs[i]})` : ""));
  };
  return { check, sameIds, failures: () => failures };
}
