// Instructions per request, counted by valgrind's callgrind: a measure the machine's load does not
// move (CPU time per request moves 2-3x on the shared machine). Loads INSTR_ROWS dataset rows
// through the API, then serves them from the service (its build, `rowhouse serve`, default log level
// info with its access log read here) and from the raw-SQL floor (bench/floor-server.ts), each under
// callgrind; sends INSTR_WARM requests to warm it up (the JIT's tiers; not instrumented, which is
// faster), then instruments, zeroes the counters, sends
// INSTR_N requests from 10 connections, and dumps. All threads are counted (the JIT's compiler and
// the collector's helpers included), as CPU per request counts them. Work done by the clock
// (timers) is charged to the requests of its time, so a slower run pays more of it a request; and
// the windows fall from first to last even after 10,000 warm-up requests (decisions.md, "Get by id
// counted in instructions"): compare the last windows of long runs.
//   node --import tsx bench/instructions.ts [get|first|paid] [service|floor|both]      (SQLite only)
// INSTR_N (1,500), INSTR_WINDOWS (3), INSTR_WARM (10,000), INSTR_ROWS (2,000): the sizes; INSTR_KEEP=1
// keeps the dumps; INSTR_FULL_GC=1 takes a heap snapshot (a full collection) before counting.
// INSTR_TOP=n: besides the total, the n functions with the most instructions of their own, native
// ones by name and JavaScript ones by the names node writes in its perf map (--perf-basic-prof),
// so an inlined function counts in its caller.
// INSTR_ROOT=dir: the service of another checkout (its build), to compare two builds.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createBenchTable, dataset, loadThroughApi, floorTable } from './support/dataset.ts';
import { BENCH_KEY, ROOT, freePort, startService, waitFor } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const WORKLOAD = process.argv[2] ?? 'get';
const WHICH = process.argv[3] ?? 'both';
const ROWS = Number(process.env.INSTR_ROWS ?? 2000);
const WARM = Number(process.env.INSTR_WARM ?? 10000);
const N = Number(process.env.INSTR_N ?? 1500);
const TOP = Number(process.env.INSTR_TOP ?? 0);
const WINDOWS = Number(process.env.INSTR_WINDOWS ?? 3);
const SERVICE_ROOT = process.env.INSTR_ROOT ? path.resolve(process.env.INSTR_ROOT) : ROOT;

const ds = await dataset();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rh-instr-'));
const env = { ROWHOUSE_DATA_DIR: dir, ROWHOUSE_API_KEY: BENCH_KEY };
const loader = await startService(env, SERVICE_ROOT);
const table = await createBenchTable(loader.url, 'bench');
await loadThroughApi(loader.url, 'bench', ROWS);
await loader.stop();

const someRow = scatteredRows(ROWS);
const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const paths = {
  service: {
    get: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`,
    first: () => '/api/tables/bench/rows',
    paid: () =>
      `/api/tables/bench/rows?filter=${q({ values: { status: { _eq: 'paid' }, amount: { _gt: 5000 } } })}` +
      `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`,
  },
  floor: {
    get: () => `/rows/${ds.rowId(someRow())}`,
    first: () => '/first',
    paid: () => '/paid',
  },
} as const;

/** Sends `amount` requests from 10 connections; throws on any answer but 200. */
async function send(url: string, target: 'service' | 'floor', amount: number): Promise<void> {
  const make = paths[target][WORKLOAD as 'get'];
  if (!make) throw new Error(`unknown workload ${WORKLOAD}`);
  const result = await autocannon({
    url,
    connections: 10,
    amount,
    timeout: 60,
    requests: [{ method: 'GET', headers: { 'x-api-key': BENCH_KEY }, setupRequest: (r: autocannon.Request) => ({ ...r, path: make() }) }],
  });
  if (result.non2xx || result.errors) throw new Error(`${target}: ${result.non2xx} answers not 2xx, ${result.errors} errors`);
}

interface Counted {
  /** Instructions a request: the median window's. */
  total: number;
  windows: number[];
  top: [string, number][];
}

/** The functions of a callgrind dump with their own instructions (`fn=` blocks' cost lines, calls' inclusive costs left out). */
function ownByFunction(file: string, pid: number): [string, number][] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const names = new Map<string, string>();
  const own = new Map<string, number>();
  // JIT code: callgrind names it by address; node's perf map names its ranges.
  const ranges: [number, number, string][] = [];
  const mapFile = `/tmp/perf-${pid}.map`;
  if (fs.existsSync(mapFile)) {
    for (const line of fs.readFileSync(mapFile, 'utf8').split('\n')) {
      const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
      if (m) ranges.push([parseInt(m[1], 16), parseInt(m[2], 16), m[3]]);
    }
    ranges.sort((a, b) => a[0] - b[0]);
  }
  const jitName = (addr: number): string | undefined => {
    let lo = 0;
    let hi = ranges.length - 1;
    let found: [number, number, string] | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid][0] <= addr) {
        found = ranges[mid];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found && addr < found[0] + found[1] ? found[2] : undefined;
  };
  let fn = '';
  let inCall = false;
  let lastAddr = 0;
  for (const line of lines) {
    let m: RegExpExecArray | null;
    if ((m = /^fn=\((\d+)\)(?: (.*))?$/.exec(line))) {
      if (m[2] !== undefined) names.set(m[1], m[2]);
      fn = names.get(m[1]) as string;
      inCall = false;
      continue;
    }
    if ((m = /^cfn=\((\d+)\) (.*)$/.exec(line))) names.set(m[1], m[2]);
    if (line.startsWith('calls=')) {
      inCall = true;
      continue;
    }
    m = /^(0x[0-9a-f]+|[+-]\d+|\*)\s+(?:\S+\s+)?(\d+)$/.exec(line);
    if (!m) continue;
    const a = m[1];
    const addr = a === '*' ? lastAddr : a.startsWith('0x') ? parseInt(a, 16) : lastAddr + Number(a);
    lastAddr = addr;
    if (inCall) {
      inCall = false; // the call's inclusive cost: not this function's own
      continue;
    }
    const name = /^0x[0-9a-f]+$/.test(fn) ? (jitName(addr) ?? 'JIT (unnamed)') : fn;
    own.set(name, (own.get(name) ?? 0) + Number(m[2]));
  }
  return [...own].sort((x, y) => y[1] - x[1]);
}

/** Runs `args` under callgrind, warms it up, and counts the instructions of N requests. */
async function counted(target: 'service' | 'floor'): Promise<Counted> {
  const port = await freePort();
  const out = path.join(dir, `callgrind.${target}`);
  // SIGUSR2 takes a heap snapshot, and with it a full collection: the count starts with the old
  // generation emptied of the warm-up's garbage, so a major collection rarely falls in it (one in
  // about 40,000 gets, 0.6 µs a request).
  const nodeArgs = ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`, ...(TOP ? ['--perf-basic-prof', '--interpreted-frames-native-stack'] : [])];
  const script =
    target === 'service'
      ? ['bin/rowhouse.mjs', 'serve']
      : ['--import', 'tsx', 'bench/floor-server.ts'];
  const childEnv = {
    ...process.env,
    ...env,
    PORT: String(port),
    FLOOR_DB: path.join(dir, 'rowhouse.db'),
    FLOOR_TABLES: JSON.stringify([floorTable(ds, table)]),
  };
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, ...(TOP ? ['--dump-instr=yes'] : []), '--trace-children=no', process.execPath, ...nodeArgs, ...script],
    { cwd: target === 'service' ? SERVICE_ROOT : ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  // Read as a log collector would (the service's access log on stdout).
  child.stdout.on('data', (d: Buffer) => (log = (log + d).slice(-4000)));
  child.stderr.on('data', (d: Buffer) => (log = (log + d).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + '/healthz', child, () => log, 600_000);
  await send(url, target, WARM);
  const pid = child.pid as number;
  // Only with INSTR_FULL_GC=1: not yet seen to finish under valgrind on the loaded machine.
  if (process.env.INSTR_FULL_GC === '1') {
    const snapshots = () => fs.readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot')).length;
    const before = snapshots();
    child.kill('SIGUSR2');
    for (let i = 0; i < 1200 && snapshots() === before; i++) await new Promise((r) => setTimeout(r, 250));
    // Written once the file is complete: wait until its size holds.
    for (let last = -1, size = 0; size !== last; await new Promise((r) => setTimeout(r, 1000))) {
      last = size;
      size = fs.readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot')).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    }
    for (const f of fs.readdirSync(dir)) if (f.endsWith('.heapsnapshot')) fs.rmSync(path.join(dir, f));
  }
  const control = (flag: string) => {
    const r = spawnSync('callgrind_control', [flag, String(pid)], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`callgrind_control ${flag}: ${r.stdout}${r.stderr}`);
  };
  // The warm-up ran without instrumentation (several times faster); counted from here on, in
  // INSTR_WINDOWS windows of N requests (counters zeroed before each, dumped after it): the median
  // window is the figure, so a window with a rare cost (a major collection, a late compile) does
  // not make it.
  control('--instr=on');
  const windows: number[] = [];
  let lastDump = '';
  for (let w = 1; w <= WINDOWS; w++) {
    control('-z');
    await send(url, target, N);
    control('-d');
    lastDump = `${out}.${w}`;
    const text = fs.readFileSync(lastDump, 'utf8');
    windows.push(Number(/^(?:summary|totals): (\d+)/m.exec(text)?.[1]) / N);
  }
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  const sorted = [...windows].sort((a, b) => a - b);
  const result = { total: sorted[(sorted.length - 1) >> 1], windows, top: TOP ? ownByFunction(lastDump, pid).slice(0, TOP) : [] };
  if (!process.env.INSTR_KEEP) fs.rmSync(`/tmp/perf-${pid}.map`, { force: true });
  return result;
}

const results: Partial<Record<'service' | 'floor', Counted>> = {};
for (const target of ['service', 'floor'] as const) {
  if (WHICH !== 'both' && WHICH !== target) continue;
  const r = await counted(target);
  results[target] = r;
  console.log(`${WORKLOAD}, ${target}${target === 'service' && process.env.INSTR_ROOT ? ` (${SERVICE_ROOT})` : ''}: ${Math.round(r.total).toLocaleString('en')} instructions a request (${ROWS} rows, ${WARM} warm-up, median of windows of ${N}: ${r.windows.map((w) => Math.round(w).toLocaleString('en')).join(', ')})`);
  for (const [name, n] of r.top) console.log(`  ${Math.round(n / N).toLocaleString('en').padStart(8)}  ${name.slice(0, 150)}`);
}
if (results.service && results.floor) console.log(`service : floor ${(results.service.total / results.floor.total).toFixed(3)}`);
if (process.env.INSTR_KEEP) console.log(`kept ${dir}`);
else fs.rmSync(dir, { recursive: true, force: true });
