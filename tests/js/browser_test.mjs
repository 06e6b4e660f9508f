// The pages in a real browser (tests/js/browser_test.sh): Debian's chromium,
// headless, driven through playwright-core. Each page loads from file://
// with no console error and no request beyond the file itself, and shows
// what its JSON holds.
//   node tests/js/browser_test.mjs NODE_MODULES CHROMIUM SHOTS inspect DIR [DIR ...] report HTML [HTML ...]
// inspect DIR: DIR/inspect.html against DIR/inspect.json; report HTML: a
// make compare or make paper page against its own data and the runs'
// compare.csv or paper.json beside it, or a run page (harness/runs_page.py)
// against the run folders it shows. time FILE...: the load-time benchmark. SHOTS: a directory for
// screenshots (of each view), or "-".
import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";

const [modules, chromiumPath, shots, ...rest] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(path.join(modules, "playwright-core", "index.mjs")).href);
let failures = 0, checks = 0;
const check = (cond, what) => {
  checks++;
  if (!cond) { failures++; console.log("FAIL: " + what); }
};

const browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox", "--disable-gpu"] });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });

// Opens file, with every console error, page error and request counted.
async function open(file) {
  const page = await context.newPage();
  const url = pathToFileURL(path.resolve(file)).href;
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => { if (r.url() !== url) requests.push(r.url()); });
  const t0 = Date.now();
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  const ms = Date.now() - t0;
  return { page, errors, requests, ms };
}

// A screenshot is not blank: decoded by the browser itself, it has many
// colours and much that is not white.
async function notBlank(png, what) {
  const page = await context.newPage();
  const stats = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = "data:image/png;base64," + b64;
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.width; c.height = img.height;
    const ctx = c.getContext("2d");
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data, colours = new Set();
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) {
      colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      if (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240) ink++;
    }
    return { colours: colours.size, ink: ink / (d.length / 4) };
  }, png.toString("base64"));
  await page.close();
  check(stats.colours >= 16 && stats.ink > 0.01, `${what}: screenshot blank (${stats.colours} colours, ${(stats.ink * 100).toFixed(1)}% ink)`);
}

async function shot(page, selector, name) {
  const png = await (selector ? page.locator(selector).screenshot() : page.screenshot());
  await notBlank(png, name);
  if (shots !== "-") fs.writeFileSync(path.join(shots, name + ".png"), png);
}

function clean(what, o) {
  check(o.errors.length === 0, `${what}: console errors: ${o.errors.join(" | ")}`);
  check(o.requests.length === 0, `${what}: requests: ${o.requests.join(" ")}`);
}

async function inspectPage(dir) {
  const what = `inspect.html of ${dir}`;
  const J = JSON.parse(fs.readFileSync(path.join(dir, "inspect.json"), "utf8"));
  const o = await open(path.join(dir, "inspect.html"));
  const { page } = o;
  clean(what, o);
  const T = J.tokens.length;
  console.log(`${what}: ${T} tokens, ${J.n_layer} layers, loaded and ready in ${o.ms} ms`);
  // The tokens as labelled.
  const labels = await page.$$eval("#tokens .tok", (s) => s.map((x) => x.textContent));
  check(JSON.stringify(labels) === JSON.stringify(J.tokens.map((t) => t.label)), `${what}: token labels differ`);
  // One panel per head of each layer with maps (its first maps exhibit).
  const mapsOf = (L) => L.exhibits.find((e) => e.kind === "maps");
  const attn = J.layers.filter(mapsOf);
  const panels = await page.locator("canvas.head-panel").count();
  check(panels === attn.length * J.n_head, `${what}: ${panels} head panels, not ${attn.length} x ${J.n_head}`);
  // Clicking head (l, h) shows its map: every cell as the JSON's weight, to the 8-bit step.
  for (const L of attn) for (let h = 0; h < mapsOf(L).rows.length; h++) {
    const l = L.layer, M = mapsOf(L);
    const hd = { attention: M.maps ? M.maps[h] : null, attention_top: M.maps_top ? M.maps_top[h] : null };
    await page.click(`canvas.head-panel[data-layer='${l}'][data-head='${h}']`);
    await page.waitForSelector(`#pattern[data-head='${l},${h}']`);
    const m = await page.evaluate(() => Array.from(window.lmInspect.state.pattern));
    let worst = 0, cells = 0;
    if (hd.attention) {
      for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++, cells++)
        worst = Math.max(worst, Math.abs(m[i * (i + 1) / 2 + j] / 255 - hd.attention[i][j]));
    } else {
      hd.attention_top.forEach((row, i) => row.forEach(([j, p]) => {
        cells++; worst = Math.max(worst, Math.abs(m[i * (i + 1) / 2 + j] / 255 - p));
      }));
    }
    check(cells > 0 && worst <= 0.5 / 255 + 1e-4, `${what}: head (${l}, ${h}): a cell differs from inspect.json by ${worst}`);
    // and draws them: the pixel at the centre of cells of the first and last rows has the weight's colour
    const drawn = await page.evaluate(([T, cells]) => {
      const c = document.getElementById("pattern"), g = window.lmInspect.geometry, ctx = c.getContext("2d");
      return cells.map(([i, j, p]) => {
        const d = ctx.getImageData(g.left + j * g.cell + (g.cell >> 1), i * g.cell + (g.cell >> 1), 1, 1).data;
        const want = window.lmInspect.colour(Math.round(p * 255));
        return Math.max(Math.abs(d[0] - want[0]), Math.abs(d[1] - want[1]), Math.abs(d[2] - want[2]));
      });
    }, [T, [[0, 0, 1], [T - 1, 0, hd.attention ? hd.attention[T - 1][0] : m[(T - 1) * T / 2] / 255],
            [T - 1, T - 1, hd.attention ? hd.attention[T - 1][T - 1] : m[(T - 1) * T / 2 + T - 1] / 255]]]);
    check(drawn.every((d) => d <= 2), `${what}: head (${l}, ${h}): pixels not the weights' colours (${drawn})`);
    // beside it, the head's row of each table its layer shows: bars for a sequence, numbers for named columns
    const tables = L.exhibits.filter((e) => e.kind === "table" && e.rows.includes(M.rows[h])).map((e) => e.name);
    const shown = await page.$$eval("#head-rows [data-table]", (x) => x.map((e) => e.dataset.table));
    check(JSON.stringify(shown) === JSON.stringify(tables), `${what}: head (${l}, ${h}) shows tables ${shown}, not ${tables}`);
    // unlock again, so the next click locks the next head
    await page.click(`canvas.head-panel[data-layer='${l}'][data-head='${h}']`);
  }
  if (attn.length) {
    // Sorting by previous-token weight puts the largest first; clicking a row selects its head.
    await page.click("#heads-table th[data-col='2']");
    const prev = await page.$$eval("#heads-table tbody tr", (rs) => rs.map((r) => [+r.dataset.layer, +r.dataset.head]));
    const previous = (l, h) => mapsOf(J.layers[l]).stats[h].previous;
    const want = attn.flatMap((L) => mapsOf(L).stats.map((st, h) => [L.layer, h, st.previous]))
      .sort((a, b) => b[2] - a[2]).map((x) => [x[0], x[1]]);
    check(prev.length === want.length && prev.every((r, i) => Math.abs(previous(r[0], r[1]) - previous(want[i][0], want[i][1])) < 1e-6),
          `${what}: heads table not sorted by previous-token weight`);
    await page.click("#heads-table tbody tr:nth-child(1)");
    await page.waitForSelector(`#pattern[data-head='${prev[0][0]},${prev[0][1]}']`);
    // Hovering a token colours where it looks (its row) and who looks at it (its column).
    const i = Math.min(T - 1, 5);
    await page.hover(`#tokens .tok[data-i='${i}']`);
    const colours = await page.$$eval("#tokens .tok", (s) => s.map((x) => [x.style.background, x.style.borderBottomColor]));
    check(colours.slice(0, i + 1).every((c) => c[0].startsWith("rgba(255, 127, 14")), `${what}: hovering token ${i}: its row not shown`);
    check(colours.slice(i).every((c) => c[1].startsWith("rgba(31, 119, 180")), `${what}: hovering token ${i}: its column not shown`);
    check(colours.slice(i + 1).every((c) => c[0] === ""), `${what}: hovering token ${i}: later tokens coloured as its row`);
    // A click locks it: moving away keeps it.
    await page.click(`#tokens .tok[data-i='${i}']`);
    await page.hover("h1");
    check(await page.locator(`#tokens .tok.lock[data-i='${i}']`).count() === 1, `${what}: a click did not lock token ${i}`);
  }
  // The logit lens shows the JSON's top tokens and probabilities.
  const cells = await page.$$eval("#lens td", (tds) => tds.map((td) => ({
    s: +td.dataset.stage, t: +td.dataset.pos,
    k: Array.from(td.querySelectorAll(".lt")).map((x) => [+x.dataset.id, +x.dataset.p, x.firstChild.textContent]),
  })));
  const shownLens = +(await page.textContent("#lens-count"));
  check(shownLens >= 1 && shownLens <= Math.min(T, 16) && cells.length === shownLens * (J.n_layer + 1),
        `${what}: the lens shows ${cells.length} cells for ${shownLens} positions`);
  // ... within the page's width: the table never runs off its right edge, nor the page off the window's
  const fit = await page.evaluate(() => ({ lens: document.getElementById("lens").getBoundingClientRect().right,
    box: document.getElementById("lens-wrap").getBoundingClientRect().right,
    page: document.documentElement.scrollWidth, win: window.innerWidth }));
  check(fit.lens <= fit.box + 0.5 && fit.page <= fit.win, `${what}: the lens runs off the page (${JSON.stringify(fit)})`);
  // No word of heads where there are none (a Grassmann model): nothing to select
  const text = await page.evaluate(() => document.body.innerText);
  if (!attn.length) check(!/\bheads\b|selected head/.test(text), `${what}: no attention layer, yet the page speaks of heads`);
  else {
    check(text.includes(`${J.n_head} heads per layer with maps`), `${what}: the summary does not count the heads per layer with maps`);
    const bar = await page.$eval("#pattern-bar", (c) => +c.dataset.vmax);
    check(bar === 1, `${what}: no colour bar from 0 to 1 beside the attention map`);
  }
  let lensBad = 0;
  const labelOf = (id) => {
    for (const t of J.tokens) if (t.id === id) return t.label;
    return null;
  };
  for (const c of cells) {
    const want = J.logit_lens[c.s].positions[c.t];
    c.k.forEach(([id, p, text], k) => {
      const lab = labelOf(id);
      if (id !== want[k].id || Math.abs(p - want[k].p) > 1e-3 * Math.max(1, want[k].p) || (lab !== null && text !== lab + " ")) lensBad++;
    });
    if (c.k.length !== want.length) lensBad++;
  }
  check(lensBad === 0 && cells.length > 0, `${what}: ${lensBad} lens entries differ from inspect.json`);
  // The attribution: one bar per part.
  const bars = await page.locator("#attribution .bar-row").count();
  check(bars === J.attribution.parts.length, `${what}: ${bars} attribution bars, not ${J.attribution.parts.length}`);
  // Series along the prompt: a heatmap per name, a row per layer's row, on the
  // name's one scale (its exhibits' given ends, else their values' least and largest).
  const exhibits = (kind) => J.layers.flatMap((L) => L.exhibits.filter((e) => e.kind === kind));
  const seriesNames = [...new Set(exhibits("series").map((e) => e.name))];
  const heats = await page.$$eval("#series canvas.heat", (cs) => cs.map((c) => ({
    name: c.dataset.name, rows: +c.dataset.rows, lo: +c.dataset.vmin, hi: +c.dataset.vmax, labels: +c.dataset.labels })));
  check(JSON.stringify(heats.map((h) => h.name)) === JSON.stringify(seriesNames),
        `${what}: series heatmaps ${heats.map((h) => h.name)}, not ${seriesNames}`);
  for (const h of heats) {
    const ex = exhibits("series").filter((e) => e.name === h.name), vals = ex.flatMap((e) => e.values.flat()).filter((v) => v !== null);
    const given = (i) => ex.map((e) => e.scale[i]).filter((v) => v !== null);
    const lo = given(0).length ? Math.min(...given(0)) : Math.min(...vals), hi = given(1).length ? Math.max(...given(1)) : Math.max(...vals);
    const rows = ex.reduce((n, e) => n + e.rows.length, 0), near = (a, b) => Math.abs(a - b) <= 1e-4 + 1e-3 * Math.abs(b);
    check(h.rows === rows && near(h.lo, lo) && near(h.hi, hi) && h.labels === T,
          `${what}: series ${h.name}: ${h.rows} rows on ${h.lo}..${h.hi} (labels ${h.labels}), not ${rows} on ${lo}..${hi}`);
  }
  const scaleBars = await page.$$eval("#series canvas.colour-bar", (cs) => cs.map((c) => [+c.dataset.vmin, +c.dataset.vmax]));
  check(scaleBars.length === heats.length && scaleBars.every((b, i) => b[0] === heats[i].lo && b[1] === heats[i].hi),
        `${what}: colour bars ${scaleBars} for the series' scales`);
  // Tables: one per name, a row per layer's row; the single numbers in one more.
  for (const name of [...new Set(exhibits("table").map((e) => e.name))]) {
    const rows = exhibits("table").filter((e) => e.name === name).reduce((n, e) => n + e.rows.length, 0);
    const got = await page.locator(`#tables table[data-table='${name}'] tbody tr`).count();
    check(got === rows, `${what}: table ${name} has ${got} rows, not ${rows}`);
  }
  const scalars = await page.locator("#tables table[data-table='scalars'] tbody tr").count();
  check(scalars === exhibits("scalar").length, `${what}: ${scalars} single numbers, not ${exhibits("scalar").length}`);
  const name = path.basename(dir);
  await shot(page, null, `inspect_${name}_page`);
  await shot(page, "#tokens", `inspect_${name}_tokens`);
  if (attn.length) await shot(page, "#heads-view", `inspect_${name}_heads`);
  if (attn.length) await shot(page, "#heads-wrap", `inspect_${name}_table`);
  await shot(page, "#lens", `inspect_${name}_lens`);
  await shot(page, "#attribution", `inspect_${name}_attribution`);
  if (seriesNames.length) await shot(page, "#series-section", `inspect_${name}_series`);
  if (exhibits("table").length || exhibits("scalar").length) await shot(page, "#tables-section", `inspect_${name}_tables`);
  clean(what + " (after the clicks)", o);
  await page.close();
}

// make compare's or make paper's page: its curves and tables as its data
// says, the runs as the CSV or JSON beside it, zoom and the legend work.
async function reportPage(file) {
  const what = path.basename(file);
  const html = fs.readFileSync(file, "utf8");
  const m = html.match(/<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/);
  check(m !== null, `${what}: no report data`);
  if (!m) return;
  const R = JSON.parse(m[1]);
  const o = await open(file);
  const { page } = o;
  clean(what, o);
  console.log(`${what}: loaded and ready in ${o.ms} ms`);
  const charts = R.sections.filter((s) => s.kind === "chart"), tables = R.sections.filter((s) => s.kind === "table");
  check(charts.length > 0 && tables.length > 0, `${what}: no charts or no tables`);
  for (const c of charts) {
    const n = await page.locator(`[data-chart='${c.id}'] path.series`).count();
    check(n === c.series.length, `${what}: chart ${c.id} draws ${n} lines, not ${c.series.length}`);
  }
  for (const t of tables) {
    const n = await page.locator(`table[data-table='${t.id}'] tbody tr`).count();
    check(n === t.rows.length && n > 0, `${what}: table ${t.id} has ${n} rows, not ${t.rows.length}`);
  }
  // The runs: one row each, as compare.csv (or paper.json) beside the page has them; for a run
  // page (run.html in its run folder) or runs overlaid (beside the run folders), the folders.
  const dir = path.dirname(file), csv = path.join(dir, "compare.csv"), pj = path.join(dir, "paper.json");
  const folders = (d) => fs.readdirSync(d).filter((f) => fs.existsSync(path.join(d, f, "ckpt"))).length;
  const runs = fs.existsSync(csv) ? fs.readFileSync(csv, "utf8").trim().split("\n").length - 1
             : fs.existsSync(pj) ? JSON.parse(fs.readFileSync(pj, "utf8")).length
             : fs.existsSync(path.join(dir, "ckpt")) ? 1 : folders(dir);
  const shown = await page.locator("table[data-table='runs'] tbody tr").count();
  check(shown === runs, `${what}: ${shown} runs in the page, ${runs} beside it`);
  // ... with column names for reading (no compare.csv key_names) and numbers rounded (no 11587.5030)
  const heads = await page.$$eval("table[data-table='runs'] th", (t) => t.map((x) => x.textContent));
  const nums = await page.$$eval("table[data-table='runs'] tbody td", (t) => t.map((x) => x.textContent));
  check(heads.every((h) => !h.includes("_")), `${what}: raw column names in the runs table: ${heads.join(" | ")}`);
  const raw = (v) => /[0-9]{4}\.[0-9]{3}|\.[0-9]{5}/.test(v);
  check(!nums.some(raw), `${what}: numbers not rounded: ${nums.filter(raw).slice(0, 3)}`);
  // Zoom: dragging across the first chart narrows its x axis; double-click restores it.
  const sel = `[data-chart='${charts[0].id}'] svg`;
  const d0 = await page.locator(`${sel} path.series`).first().getAttribute("d");
  await page.locator(sel).scrollIntoViewIfNeeded();
  const box = await page.locator(sel).boundingBox();
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  const d1 = await page.locator(`${sel} path.series`).first().getAttribute("d");
  check(d1 !== d0, `${what}: dragging did not zoom`);
  await page.locator(sel).dblclick({ position: { x: box.width / 2, y: box.height / 2 } });
  const d2 = await page.locator(`${sel} path.series`).first().getAttribute("d");
  check(d2 === d0, `${what}: double-click did not zoom out`);
  // The legend hides an architecture's lines.
  const before = await page.locator(`${sel} path.series`).count();
  await page.locator(`[data-chart='${charts[0].id}'] .legend span`).first().click();
  const after = await page.locator(`${sel} path.series`).count();
  check(after < before, `${what}: the legend did not hide lines (${before} -> ${after})`);
  await page.locator(`[data-chart='${charts[0].id}'] .legend span`).first().click();
  // Sorting a table by a column.
  await page.locator("table[data-table='runs'] th").nth(3).click();
  const col = await page.$$eval("table[data-table='runs'] tbody tr td:nth-child(4)", (t) => t.map((x) => parseFloat(x.textContent.replace(/,/g, ""))));
  check(col.every((v, i) => i === 0 || v >= col[i - 1]), `${what}: the runs table did not sort`);
  const name = path.basename(file, ".html");
  await shot(page, null, `${name}_page`);
  await shot(page, `[data-chart='${charts[0].id}']`, `${name}_chart`);
  clean(what + " (after the clicks)", o);
  await page.close();
}

// The benchmark (not a test): load FILE 5 times, the median time until the
// page is ready (every thumbnail drawn, the first head's pattern shown).
async function timeLoad(file) {
  const ms = [];
  for (let k = 0; k < 5; k++) {
    const o = await open(file);
    clean(path.basename(file), o);
    ms.push(o.ms);
    const t = await o.page.evaluate(() => window.lmInspect && window.lmInspect.timing);
    if (t) console.log("  in the page (ms since navigation): " + Object.entries(t).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(", "));
    await o.page.close();
  }
  ms.sort((a, b) => a - b);
  console.log(`${file}: ${(fs.statSync(file).size / 1e6).toFixed(1)} MB, ready in ${ms.join(", ")} ms (median ${ms[2]})`);
}

for (let i = 0; i < rest.length; i++) {
  if (rest[i] === "time") {
    while (i + 1 < rest.length) await timeLoad(rest[++i]);
  } else if (rest[i] === "inspect") {
    while (i + 1 < rest.length && rest[i + 1] !== "report") await inspectPage(rest[++i]);
  } else if (rest[i] === "report") {
    while (i + 1 < rest.length && rest[i + 1] !== "inspect") await reportPage(rest[++i]);
  }
}
await browser.close();
console.log(`browser: ${checks - failures} of ${checks} checks passed`);
process.exit(failures ? 1 : 0);
