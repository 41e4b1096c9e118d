// Start-up benchmark: time from spawn to the first 200 answer, and resident memory once idle, of
// `rowhouse serve` on a fresh empty data directory (an authenticated GET /api/tables) against a
// minimal Fastify + better-sqlite3 floor (bench/floor-startup.cjs), launched in turn, in one run.
//   npm run build && node --import tsx bench/startup.ts [runs=11]
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { BENCH_KEY, ROOT, cpuMs, freePort } from './support/processes.ts';

const RUNS = Number(process.argv[2] ?? 11);
const SETTLE_MS = 2000;
const BUDGET = 1.5;

/** One GET; the status, or 0 while nothing listens. */
function status(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

interface Sample {
  startMs: number;
  cpuMs: number;
  rssMiB: number;
}

/** Spawns `args`, polls `route` every 5 ms until it answers 200, lets the process idle, reads its RSS, stops it. */
async function launch(args: string[], env: Record<string, string>, port: number, route: string, headers: Record<string, string> = {}): Promise<Sample> {
  const t0 = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  try {
    for (;;) {
      const code = await status(`http://127.0.0.1:${port}${route}`, headers);
      if (code === 200) break;
      if (child.exitCode !== null || code > 0) throw new Error(`${args.join(' ')}: ${code ? `answered ${code}` : 'exited'}\n${out}`);
      if (performance.now() - t0 > 30_000) throw new Error(`${args.join(' ')}: no 200 after 30 s\n${out}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const startMs = performance.now() - t0;
    const cpu = cpuMs(child.pid as number).total;
    if (out.includes('through tsx')) throw new Error(`${out.trim()}\nThis measures the compiled start: npm run build first.`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { startMs, cpuMs: cpu, rssMiB: rssMiB(child.pid as number) };
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

async function service(): Promise<Sample> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-startup-'));
  try {
    const env = { ROWHOUSE_DATA_DIR: dir, ROWHOUSE_API_KEY: BENCH_KEY, ROWHOUSE_LOG_LEVEL: 'warn' };
    return await launch(['bin/rowhouse.mjs', 'serve'], env, await freePort(), '/api/tables', { 'x-api-key': BENCH_KEY });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function floor(): Promise<Sample> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-startup-floor-'));
  try {
    return await launch(['bench/floor-startup.cjs'], { FLOOR_DB: path.join(dir, 'floor.db') }, await freePort(), '/tables');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// One launch of each first, not counted: it warms the file cache for both.
await service();
await floor();
const samples = { service: [] as Sample[], floor: [] as Sample[] };
for (let i = 0; i < RUNS; i++) {
  samples.service.push(await service());
  samples.floor.push(await floor());
}

const fmt = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(' ');
/** Medians of each, and the median of the ratios launch by launch (pairs keep it steady while the machine's speed drifts). */
const compare = (name: string, of: (s: Sample) => number): [string, number, number, number] => [
  name,
  median(samples.service.map(of)),
  median(samples.floor.map(of)),
  median(samples.service.map((s, i) => of(s) / of(samples.floor[i]))),
];
const rows = [compare('first 200 after spawn (ms)', (s) => s.startMs), compare(`idle RSS after ${SETTLE_MS / 1000} s (MiB)`, (s) => s.rssMiB)];
const cpu = compare('CPU to the first 200 (ms)', (s) => s.cpuMs);
console.log(`${RUNS} launches each, medians (service: node bin/rowhouse.mjs serve, GET /api/tables; floor: bench/floor-startup.cjs)`);
console.log(`  service start ms: ${fmt(samples.service.map((s) => s.startMs), 0)}`);
console.log(`  floor   start ms: ${fmt(samples.floor.map((s) => s.startMs), 0)}`);
console.log(`  service RSS MiB:  ${fmt(samples.service.map((s) => s.rssMiB), 1)}`);
console.log(`  floor   RSS MiB:  ${fmt(samples.floor.map((s) => s.rssMiB), 1)}`);
console.log(`${cpu[0].padEnd(30)} service ${cpu[1].toFixed(1).padStart(7)}  floor ${cpu[2].toFixed(1).padStart(7)}  paired ratio ${cpu[3].toFixed(2)}  (no budget: shows what load on the machine did to the wall times)`);
let failed = false;
for (const [name, s, f, ratio] of rows) {
  const pass = ratio <= BUDGET;
  failed ||= !pass;
  console.log(`${name.padEnd(30)} service ${s.toFixed(1).padStart(7)}  floor ${f.toFixed(1).padStart(7)}  paired ratio ${ratio.toFixed(2)}  budget ${BUDGET}x  ${pass ? 'PASS' : 'FAIL'}`);
}
process.exitCode = failed ? 1 : 0;
