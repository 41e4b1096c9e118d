// Console benchmark (issue 32, "Figures"): the browser console (/console) in headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core) against the built service.
//   - Opening a table: the time from navigation to the grid's first data rows drawn, for a table of
//     BENCH_ROWS rows (default 1,000,000) and one of 100, in paired rounds (BENCH_ROUNDS, default 5,
//     after one warm-up open of each); the figure is each side's median and their ratio. Also the
//     rows requests made on open (one page is expected, whatever the table's size) and the time of
//     the first page's request.
//   - Scrolling through 10,000 rows of the big table: the grid's scroll position moved by
//     BENCH_SCROLL_STEP rows (default 4) every animation frame, in the page; a frame is dropped when
//     the gap between two requestAnimationFrame callbacks exceeds 1.5x the frame budget (the median
//     gap of an idle second before). Frames spent waiting for a page that has not arrived yet are
//     counted apart (the scroll cannot move past the rows held). Beside it, figures that other load on
//     the machine moves less: Chromium's CPU time a frame (all its processes, from /proc), and the
//     page's main thread a frame in Chrome's own counters (DevTools protocol, Performance.getMetrics:
//     script, style, layout). BENCH_SCROLL_ROWS changes the 10,000; BENCH_PROFILE=FILE writes a
//     DevTools CPU profile of the page during the scroll.
//   - The console's JavaScript: every script of dist/console/assets, raw and gzip -9, and the part
//     the page loads on open.
// Both tables hold the shared dataset's rows (bench/support/dataset.ts), loaded through the API
// (1,000-row bulk creates; the time is printed), then the service is restarted. SQLite by default;
// BENCH_DATABASE=postgres runs it on a PostgreSQL server the benchmark starts.
// Loading 1,000,000 rows through the API takes about 6 minutes (2,900 rows/s measured on a busy
// 2-core machine); BENCH_ROWS=100000 checks the bench in about 4 minutes in all.
//   npm run build && node --import tsx bench/console.ts [rows=BENCH_ROWS or 1000000]
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { type Page, chromium } from 'playwright-core';
import { median } from './support/rounds.ts';
import { createBenchTable, loadThroughApi } from './support/dataset.ts';
import { BENCH_KEY, ROOT, benchDatabase, cpuMs, startService } from './support/processes.ts';

const N = Number(process.argv[2] ?? process.env.BENCH_ROWS ?? 1_000_000);
const SMALL = 100;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const STEP = Number(process.env.BENCH_SCROLL_STEP ?? 4);
const SCROLL_ROWS = Math.min(Number(process.env.BENCH_SCROLL_ROWS ?? 10_000), N - 200);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const VIEWPORT = { width: 1400, height: 900 };
const CONSOLE_DIR = path.join(ROOT, 'dist', 'console');

if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM)`);
if (!fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) throw new Error('the console is not built: run `npm run build` first');
if (!(N > SMALL + 200)) throw new Error(`BENCH_ROWS must be over ${SMALL + 200}`);

/** The console's scripts: each file's size raw and gzip -9, and which of them the page loads on open (its module script and preloads). */
function scriptSizes() {
  const index = fs.readFileSync(path.join(CONSOLE_DIR, 'index.html'), 'utf8');
  const onOpen = new Set([...index.matchAll(/(?:src|href)="console\/assets\/([^"]+\.js)"/g)].map((m) => m[1]));
  const files = fs
    .readdirSync(path.join(CONSOLE_DIR, 'assets'))
    .filter((f) => f.endsWith('.js'))
    .map((name) => {
      const bytes = fs.readFileSync(path.join(CONSOLE_DIR, 'assets', name));
      return { name, raw: bytes.length, gzip: zlib.gzipSync(bytes, { level: 9 }).length, onOpen: onOpen.has(name) };
    });
  return files;
}

// The in-page measurement of opening: as soon as the grid holds its first data row (a row after the
// header with its "Open row" button), the next frame's callback, then a task after it (so after that
// frame's paint), stamps the time since navigation (performance.now() counts from the navigation's start).
const FIRST_ROWS_PROBE = `(() => {
  window.__firstRows = null;
  const selector = '[role="grid"] [role="row"][aria-rowindex="2"] button[aria-label^="Open row"]';
  const observer = new MutationObserver(() => {
    if (!document.querySelector(selector)) return;
    observer.disconnect();
    const inDom = performance.now();
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => { window.__firstRows = { inDom, drawn: performance.now() }; };
      channel.port2.postMessage(null);
    });
  });
  observer.observe(document, { childList: true, subtree: true });
})()`;

interface Open {
  drawn: number;
  inDom: number;
  /** Requests for the table's rows made before the first rows were drawn, with their page sizes. */
  rowsRequests: string[];
  /** The first rows request: from its start to its answer's end (ms). */
  rowsFetch: number;
}

async function open(page: Page, base: string, code: string): Promise<Open> {
  await page.goto(`${base}/console?table=${code}`);
  // A function, not text: the page's CSP (no eval) refuses a predicate given as text.
  await page.waitForFunction(() => (globalThis as unknown as { __firstRows: unknown }).__firstRows !== null, null, { timeout: 120_000 });
  return (await page.evaluate(`(() => {
    const { inDom, drawn } = window.__firstRows;
    const rows = performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname === '/api/tables/${code}/rows' && e.startTime < drawn);
    return {
      drawn,
      inDom,
      rowsRequests: rows.map((e) => new URL(e.name).searchParams.get('pageSize') ?? '?'),
      rowsFetch: rows.length > 0 ? rows[0].responseEnd - rows[0].startTime : NaN,
    };
  })()`)) as Open;
}

interface Scroll {
  budget: number;
  frames: number;
  seconds: number;
  dropped: number;
  missed: number;
  waiting: number;
  longest: number[];
  held: number;
  reached: number;
  stuck: boolean;
}

/**
 * Scrolls the grid down `rows` rows, `step` rows a frame, recording the gaps between animation
 * frames. Text, not a function of this module: tsx would wrap its inner functions in a helper the
 * page does not have.
 */
const scrollInPage = (rows: number, step: number) => `(async () => {
  const rows = ${rows}, step = ${step};
  const grid = document.querySelector('[role="grid"]');
  const rowHeight = grid.querySelector('[role="row"][aria-rowindex="2"]').getBoundingClientRect().height;
  const target = rows * rowHeight;
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  // The frame budget: the median gap of an idle second's frames.
  const idle = [];
  let t = await frame();
  for (let i = 0; i < 60; i++) {
    const n = await frame();
    idle.push(n - t);
    t = n;
  }
  const budget = idle.sort((a, b) => a - b)[Math.floor(idle.length / 2)];
  const gaps = [];
  let waiting = 0, still = 0, stuck = false;
  const started = t;
  let last = await frame();
  while (grid.scrollTop < target) {
    const before = grid.scrollTop;
    grid.scrollTop = Math.min(before + step * rowHeight, target);
    // At the end of the rows held the scroll cannot move until the next page arrives.
    if (grid.scrollTop <= before) {
      waiting++;
      if (++still > 60 * 30) { stuck = true; break; }
    } else {
      still = 0;
    }
    const now = await frame();
    gaps.push(now - last);
    last = now;
  }
  return {
    budget,
    frames: gaps.length,
    seconds: (last - started) / 1000,
    dropped: gaps.filter((g) => g > 1.5 * budget).length,
    missed: gaps.reduce((n, g) => n + Math.max(0, Math.round(g / budget) - 1), 0),
    waiting,
    longest: gaps.slice().sort((a, b) => b - a).slice(0, 5),
    held: grid.querySelectorAll('[role="row"]').length,
    reached: Math.floor(grid.scrollTop / rowHeight),
    stuck,
  };
})()`;

/**
 * CPU time (user and system, ms) so far of Chromium: every process under this one whose name says
 * chromium (the browser, its GPU and renderer processes, and their helpers), not the service.
 */
function chromiumCpuMs(): number {
  const children = new Map<number, number[]>();
  const names = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.split(') ')[1].split(' ')[1]);
      names.set(Number(entry), stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const pids = (children.get(process.pid) ?? []).filter((pid) => /chrom/i.test(names.get(pid) ?? '')); pids.length > 0; ) {
    const pid = pids.pop() as number;
    try {
      total += cpuMs(pid).total;
    } catch {
      // gone meanwhile
    }
    pids.push(...(children.get(pid) ?? []));
  }
  return total;
}

const { dir, postgres, env } = await benchDatabase('console');
let service = await startService(env);
await createBenchTable(service.url, 'big');
await createBenchTable(service.url, 'small');
const t0 = Date.now();
await loadThroughApi(service.url, 'big', N);
const loadSeconds = (Date.now() - t0) / 1000;
console.log(`loaded ${N} rows into ${postgres ? 'PostgreSQL' : 'SQLite'} through the API in ${loadSeconds.toFixed(1)} s (${Math.round(N / loadSeconds)} rows/s)`);
await loadThroughApi(service.url, 'small', SMALL);
await service.stop();

service = await startService(env);
service.child.stderr?.on('data', (d) => process.stderr.write(d));
// No sandbox: the bench may run as root, where Chromium's sandbox cannot start (as the browser tests).
const browser = await chromium.launch({ executablePath: CHROMIUM, chromiumSandbox: false, args: ['--no-sandbox'] });
const page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
const problems: string[] = [];
page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
page.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && problems.push(`console error: ${m.text()}`));
// Chromium asks for /favicon.ico by itself; the service has none.
page.on('response', (r) => r.status() >= 400 && new URL(r.url()).pathname !== '/favicon.ico' && problems.push(`${r.status()} for ${r.url()}`));
await page.addInitScript(FIRST_ROWS_PROBE);

// Signed in once: the key stays in the tab's sessionStorage across the navigations below.
await page.goto(`${service.url}/console`);
await page.getByLabel('API key').fill(BENCH_KEY);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('heading', { name: 'Tables' }).waitFor();

const opens: Record<'big' | 'small', Open[]> = { big: [], small: [] };
await open(page, service.url, 'big');
await open(page, service.url, 'small');
for (let round = 0; round < ROUNDS; round++) {
  for (const side of round % 2 === 0 ? (['big', 'small'] as const) : (['small', 'big'] as const)) opens[side].push(await open(page, service.url, side));
}

await open(page, service.url, 'big');
// CPU time, which other load on the machine barely moves (unlike the frames' wall-clock gaps): Chromium's, and the service's.
const cpuBefore = { browser: chromiumCpuMs(), service: cpuMs(service.child.pid as number).total };
// Where the page's main thread spends the frames: Chrome's own counters (DevTools protocol, Performance.getMetrics).
const cdp = await page.context().newCDPSession(page);
await cdp.send('Performance.enable');
const metrics = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
// BENCH_PROFILE=FILE: a CPU profile of the page during the scroll (DevTools' format), to see where the frames go.
if (process.env.BENCH_PROFILE) {
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.start');
}
const metricsBefore = await metrics();
const scroll = (await page.evaluate(scrollInPage(SCROLL_ROWS, STEP))) as Scroll;
const metricsAfter = await metrics();
if (process.env.BENCH_PROFILE) fs.writeFileSync(process.env.BENCH_PROFILE, JSON.stringify((await cdp.send('Profiler.stop')).profile));
/** ms a frame of a Chrome counter (seconds, cumulative) over the scroll. */
const perFrame = (name: string) => ((metricsAfter[name] - metricsBefore[name]) * 1000) / scroll.frames;
const cpu = { browser: chromiumCpuMs() - cpuBefore.browser, service: cpuMs(service.child.pid as number).total - cpuBefore.service };

await browser.close();
await service.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const ms = (x: number) => `${x.toFixed(0)} ms`;
const summary = (xs: Open[]) => {
  const drawn = xs.map((o) => o.drawn);
  return { drawn: median(drawn), min: Math.min(...drawn), max: Math.max(...drawn), fetch: median(xs.map((o) => o.rowsFetch)), requests: [...new Set(xs.map((o) => o.rowsRequests.map((s) => `pageSize=${s}`).join(' + ')))] };
};
const big = summary(opens.big);
const small = summary(opens.small);
const ratio = big.drawn / small.drawn;
const scripts = scriptSizes();
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const sum = (xs: { raw: number; gzip: number }[], k: 'raw' | 'gzip') => xs.reduce((n, x) => n + x[k], 0);
const loaded = scripts.filter((s) => s.onOpen);

console.log(`\nthe console in headless Chromium (${VIEWPORT.width}x${VIEWPORT.height}), ${postgres ? 'PostgreSQL' : 'SQLite'}, ${ROUNDS} paired rounds after a warm-up\n`);
console.log('open a table: navigation to the first data rows drawn (median [min-max]); the first rows request (median); rows requests before the first rows drawn');
console.log(`  ${String(N).padStart(8)} rows  ${ms(big.drawn).padStart(8)} [${ms(big.min)}-${ms(big.max)}]   rows request ${ms(big.fetch)}   ${big.requests.join('; ')}`);
console.log(`  ${String(SMALL).padStart(8)} rows  ${ms(small.drawn).padStart(8)} [${ms(small.min)}-${ms(small.max)}]   rows request ${ms(small.fetch)}   ${small.requests.join('; ')}`);
console.log(`  ratio ${N} / ${SMALL}: ${ratio.toFixed(2)} (rounds: ${opens.big.map((o, i) => (o.drawn / opens.small[i].drawn).toFixed(2)).join(', ')})`);
console.log(`\nscroll through ${scroll.reached} rows of the ${N}-row table, ${STEP} rows a frame (requestAnimationFrame gaps; frame budget ${scroll.budget.toFixed(1)} ms, the median gap of an idle second)`);
console.log(`  ${scroll.frames} frames in ${scroll.seconds.toFixed(1)} s; dropped (gap over ${(1.5 * scroll.budget).toFixed(1)} ms): ${scroll.dropped} (${((100 * scroll.dropped) / scroll.frames).toFixed(1)}%), ${scroll.missed} frame times missed in all`);
console.log(`  CPU time: Chromium ${(cpu.browser / scroll.frames).toFixed(1)} ms a frame (${(cpu.browser / 1000).toFixed(1)} s in all, every process of it), the service ${(cpu.service / 1000).toFixed(1)} s`);
console.log(`  the page's main thread a frame (Chrome's Performance.getMetrics, wall time): tasks ${perFrame('TaskDuration').toFixed(1)} ms, of which script ${perFrame('ScriptDuration').toFixed(1)}, style ${perFrame('RecalcStyleDuration').toFixed(1)}, layout ${perFrame('LayoutDuration').toFixed(1)} ms`);
console.log(`  longest gaps: ${scroll.longest.map((g) => g.toFixed(0)).join(', ')} ms; frames waiting for the next page: ${scroll.waiting}; rows in the DOM at the end: ${scroll.held - 1}${scroll.stuck ? '; STUCK: no page arrived for 30 s' : ''}`);
console.log(`\nJavaScript (dist/console/assets, gzip -9): loaded on open ${kb(sum(loaded, 'gzip'))} (${kb(sum(loaded, 'raw'))} raw), all ${scripts.length} files ${kb(sum(scripts, 'gzip'))} (${kb(sum(scripts, 'raw'))} raw)`);
for (const s of scripts) console.log(`  ${s.name.padEnd(36)} ${kb(s.gzip).padStart(9)} ${kb(s.raw).padStart(10)} raw${s.onOpen ? '  (on open)' : ''}`);
if (problems.length > 0) console.log(`\nthe page reported:\n  ${problems.join('\n  ')}`);

const budgets: [string, boolean, string][] = [
  [`a table of ${N} rows opens as fast as one of ${SMALL} (ratio of medians at most 1.25)`, ratio <= 1.25, ratio.toFixed(2)],
  ['opening reads one page of rows, whatever the size', [...big.requests, ...small.requests].every((r) => r === 'pageSize=200'), [...big.requests, ...small.requests].join('; ')],
  [`the scroll reached row ${SCROLL_ROWS}`, !scroll.stuck && scroll.reached >= SCROLL_ROWS, String(scroll.reached)],
  ['the page reported no error', problems.length === 0, String(problems.length)],
];
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
