// Access benchmark (issue 29, CONTRACT §12): what the authorization stage and Idempotency-Key cost.
//
// (a) The authorization stage (src/http/access.ts) on get by id and on the first page, against the
// same build with the stage skipped. The product has no way to turn the stage off, and gets none:
// this bench bundles src/ twice itself, with the options of the product's build
// (scripts/bundle-options.mjs), once as it is and once with esbuild resolving src/http/access.ts
// to a module that re-exports it all but installAccess, which there installs nothing (so no route
// has the stage's preHandler). Both bundles live only in .bench-data/ under the project, are
// started by this bench alone (`require(bundle).main(['serve'])`), and serve the same database.
// Before measuring, the bench shows the difference is the stage: a key limited to the benchmark
// table is refused another table by the first (403) and not by the second (200). Requests carry
// that limited key (rows:read on the benchmark table), for which the stage does all its work (a
// key with every scope on every table passes it at once); "full key" rows show that fast path.
// Goal: the stage's build reaches 0.95 of the skipped build's throughput.
//
// (b) Idempotency-Key on single create: the product's build (dist/, `rowhouse serve`), the same
// whole-row create (createBodies: all the dataset's fields, a fresh client id) with a fresh
// Idempotency-Key on every request against none. Goal: at least 0.85 of the throughput without.
//
// Each comparison in BENCH_ROUNDS (3) paired rounds of SECONDS on each side, back to back,
// alternating which goes first; the figure is the median of the rounds' ratios. Beside the rates,
// each side's server CPU time per answered request (µs), which other load on the machine barely
// moves. SQLite by default; BENCH_DATABASE=postgres runs on a PostgreSQL server the bench starts.
// BENCH_ONLY=stage or BENCH_ONLY=idempotency runs only (a) or only (b).
//   node --import tsx bench/access.ts [rows=200000] [seconds=5]
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Plugin, build } from 'esbuild';
// @ts-expect-error: a plain JavaScript module of the build, without type declarations
import { serviceBundleOptions } from '../scripts/bundle-options.mjs';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { median, pairedRounds } from './support/rounds.ts';
import { createBenchTable, createBodies, dataset, loadThroughApi } from './support/dataset.ts';
import { BENCH_KEY, ROOT, type Proc, benchDatabase, cpuMs, freePort, startProcess, startService } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const N = Number(process.argv[2] ?? 200_000);
const SECONDS = Number(process.argv[3] ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ONLY = process.env.BENCH_ONLY;
if (ONLY !== undefined && ONLY !== 'stage' && ONLY !== 'idempotency') throw new Error(`BENCH_ONLY=${ONLY}: stage or idempotency`);

const { dir, postgres, env } = await benchDatabase('access');
const ds = await dataset();

/** A request to a server with a key; throws unless it answers `expect`. */
async function call(base: string, key: string, method: string, url: string, body?: unknown, expect = 200): Promise<any> {
  const res = await fetch(base + url, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${method} ${url} → ${res.status} (expected ${expect}): ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

// ---- the data: N dataset rows loaded through the API, a second table, and a key limited to the first ----

let service = await startService(env);
await createBenchTable(service.url);
await call(service.url, BENCH_KEY, 'POST', '/api/tables', { code: 'other', name: 'Other', fields: [{ code: 'title', type: 'text' }] }, 201);
const t0 = Date.now();
await loadThroughApi(service.url, 'bench', N);
console.log(`loaded ${N} rows into ${postgres ? 'PostgreSQL' : 'SQLite'} through the API in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const limited = (await call(service.url, BENCH_KEY, 'POST', '/api/api-keys', { name: 'reader of bench', scopes: ['rows:read'], tables: ['bench'] }, 201)).key as string;
await service.stop();

/** Each side's load with its server's CPU time per answered request (µs). */
type Measured = Load & { cpuUs: number };
async function measured(proc: Proc, base: string, request: LoadRequest): Promise<Measured> {
  const pid = proc.child.pid as number;
  const before = cpuMs(pid).total;
  const result = await load(base, request, SECONDS);
  return { ...result, cpuUs: ((cpuMs(pid).total - before) * 1000) / Math.max(1, result.rps * SECONDS) };
}
interface Compared {
  sides: [string, string];
  rps: [number, number];
  p50: [number, number];
  cpuUs: [number, number];
  ratio: number;
  ratios: number[];
  failures: number;
}
/** `first` against `second` in paired rounds: the median ratio of their rates, and each side's medians. */
async function compare<K extends string>(sides: [K, K], run: (side: K) => Promise<Measured>): Promise<Compared> {
  await run(sides[0]); // warm-up, both
  await run(sides[1]);
  const runs = await pairedRounds(ROUNDS, sides, run);
  const [a, b] = [runs[sides[0]], runs[sides[1]]];
  const med = (xs: Measured[], f: (m: Measured) => number) => median(xs.map(f));
  return {
    sides,
    rps: [med(a, (m) => m.rps), med(b, (m) => m.rps)],
    p50: [med(a, (m) => m.p50), med(b, (m) => m.p50)],
    cpuUs: [med(a, (m) => m.cpuUs), med(b, (m) => m.cpuUs)],
    ratio: median(a.map((m, k) => m.rps / b[k].rps)),
    ratios: a.map((m, k) => m.rps / b[k].rps),
    failures: [...a, ...b].reduce((n, m) => n + m.errors + m.non2xx, 0),
  };
}

const someRow = scatteredRows(N);
const someId = () => ds.rowId(someRow());
const withKey = (key: string) => ({ 'x-api-key': key });
const stageWorkloads: [string, LoadRequest][] = [
  ['get by id, limited key', { path: () => `/api/tables/bench/rows/${someId()}`, headers: withKey(limited) }],
  ['first page, limited key', { path: '/api/tables/bench/rows', headers: withKey(limited) }],
  ['get by id, full key', { path: () => `/api/tables/bench/rows/${someId()}`, headers: withKey(BENCH_KEY) }],
  ['first page, full key', { path: '/api/tables/bench/rows', headers: withKey(BENCH_KEY) }],
];
const results: Record<string, Compared> = {};

// ---- (a) the authorization stage: two bundles of src/, one without it ----

if (ONLY !== 'idempotency') {
  const ACCESS = path.join(ROOT, 'src/http/access.ts');
  const SHIM = 'skipped-authorization-stage';
  /** Resolves every import of src/http/access.ts to a module that is it, but for an installAccess that installs nothing. */
  const skipStage: Plugin = {
    name: 'skip-the-authorization-stage',
    setup(b) {
      b.onResolve({ filter: /(^|\/)access\.ts$/ }, (args) => {
        if (args.namespace === SHIM) return { path: ACCESS };
        return path.resolve(args.resolveDir, args.path) === ACCESS ? { path: ACCESS, namespace: SHIM } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: SHIM }, () => ({
        contents: `export * from ${JSON.stringify(ACCESS)};\nexport function installAccess() {}\n`,
        resolveDir: path.dirname(ACCESS),
        loader: 'ts',
      }));
    },
  };
  const builds = path.join(ROOT, '.bench-data');
  fs.mkdirSync(builds, { recursive: true });
  const buildDir = fs.mkdtempSync(path.join(builds, 'access-'));
  /** Bundles src/ as the product's build does (into .bench-data/, where its packages resolve), and a script that serves it. */
  async function bundle(name: string, plugins: Plugin[]): Promise<string> {
    const out = path.join(buildDir, name);
    await build({ ...serviceBundleOptions(ROOT, path.join(out, 'cli.js')), plugins, logLevel: 'error' });
    fs.writeFileSync(path.join(out, 'package.json'), JSON.stringify({ type: 'commonjs' }));
    fs.writeFileSync(path.join(out, 'serve.js'), "require('./cli.js').main(['serve']);\n");
    return path.join(out, 'serve.js');
  }
  const bundles = { stage: await bundle('stage', []), skipped: await bundle('skipped', [skipStage]) };
  /** A bundle served on a port of its own, as startService serves the product's build. */
  async function serveBundle(script: string): Promise<Proc> {
    const port = await freePort();
    return startProcess([script], { ...env, PORT: String(port), ROWHOUSE_API_KEY: BENCH_KEY, ROWHOUSE_LOG_LEVEL: 'warn' }, port, '/healthz');
  }
  const servers = { stage: await serveBundle(bundles.stage), skipped: await serveBundle(bundles.skipped) };

  // The one difference: the stage refuses the limited key another table; without it, nothing does.
  await call(servers.stage.url, limited, 'GET', '/api/tables/other/rows', undefined, 403);
  await call(servers.skipped.url, limited, 'GET', '/api/tables/other/rows', undefined, 200);
  for (const s of Object.values(servers)) await call(s.url, limited, 'GET', `/api/tables/bench/rows/${ds.rowId(1)}`);

  for (const [name, request] of stageWorkloads) {
    results[name] = await compare(['stage', 'skipped'], (side) => measured(servers[side], servers[side].url, request));
  }
  for (const s of Object.values(servers)) await s.stop();
  fs.rmSync(buildDir, { recursive: true, force: true });
}

// ---- (b) Idempotency-Key on single create, on the product's build ----

if (ONLY !== 'stage') {
  service = await startService(env);
  // It works: a repeat answers the first create again, replayed.
  const probeKey = randomUUID();
  const probe = createBodies(ds, N + 10_000_000)();
  const sendProbe = () => fetch(`${service.url}/api/tables/bench/rows`, { method: 'POST', headers: { 'x-api-key': BENCH_KEY, 'content-type': 'application/json', 'idempotency-key': probeKey }, body: probe });
  const [first, again] = [await sendProbe(), await sendProbe()];
  if (first.status !== 201 || again.status !== 201 || again.headers.get('idempotent-replayed') !== 'true' || (await first.text()) !== (await again.text())) {
    throw new Error(`Idempotency-Key does not replay: ${first.status}, then ${again.status} replayed=${again.headers.get('idempotent-replayed')}`);
  }
  // Both sides take their bodies from one maker: no id is sent twice.
  const createBody = createBodies(ds, N);
  const create: LoadRequest = { method: 'POST', path: '/api/tables/bench/rows', body: createBody, headers: withKey(BENCH_KEY) };
  results['create, Idempotency-Key : none'] = await compare(['with key', 'without'], (side) =>
    measured(service, service.url, side === 'with key' ? { ...create, moreHeaders: () => ({ 'idempotency-key': randomUUID() }) } : create),
  );
  await service.stop();
}
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

// ---- the figures ----

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(8);
console.log(`\n${N} rows on ${postgres ? 'PostgreSQL' : 'SQLite'}, each comparison in ${ROUNDS} paired rounds of ${SECONDS} s a side; the ratio is the median of the rounds'; 10 connections; p50 in ms\n`);
console.log(`${'workload (side a : side b)'.padEnd(52)} ${'a req/s'.padStart(8)} ${'p50'.padStart(8)} ${'b req/s'.padStart(8)} ${'p50'.padStart(8)} ${'a / b'.padStart(8)}   CPU µs/request a : b`);
for (const [name, r] of Object.entries(results)) {
  const label = `${name} (${r.sides.join(' : ')})`;
  console.log(
    `${label.padEnd(52)} ${fmt(r.rps[0])} ${fmt(r.p50[0], 1)} ${fmt(r.rps[1])} ${fmt(r.p50[1], 1)} ${fmt(r.ratio, 3)}   ${r.cpuUs[0].toFixed(0)} : ${r.cpuUs[1].toFixed(0)}   (rounds ${r.ratios.map((x) => x.toFixed(3)).join(', ')})`,
  );
  if (r.failures > 0) console.log(`  ! ${name}: ${r.failures} errors or non-2xx answers`);
}
const IDEMPOTENT = 'create, Idempotency-Key : none';
const budgets: [string, boolean, string][] = [
  ...stageWorkloads
    .filter(([name]) => results[name])
    .map(([name]): [string, boolean, string] => [`${name}: with the authorization stage, at least 0.95 of the build without it`, results[name].ratio >= 0.95, results[name].ratio.toFixed(3)]),
  ...(results[IDEMPOTENT] ? [['create with a fresh Idempotency-Key: at least 0.85 of the same create without', results[IDEMPOTENT].ratio >= 0.85, results[IDEMPOTENT].ratio.toFixed(3)] as [string, boolean, string]] : []),
];
const clean = Object.values(results).every((r) => r.failures === 0);
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
if (!clean) console.log('  FAIL  some requests failed (above)');
process.exit(budgets.every(([, ok]) => ok) && clean ? 0 : 1);
