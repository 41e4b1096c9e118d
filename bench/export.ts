// Export benchmark (issue: streaming export): rows per second and the server's peak memory for
// CSV UTF-8, CSV Shift_JIS and JSONL, next to a floor (a raw SELECT written straight to the
// socket) in the same run, and the p99 of get-by-id requests sent while an export runs.
//   node --import tsx bench/export.ts [rows…=200000,1000000]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, createBenchTable, dataset, fillSqlite, floorTable } from './support/dataset.ts';
import { load } from './support/load.ts';
import { BENCH_KEY, type Proc, peakRssMiB, startFloor, startService } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const SIZES = (process.argv[2] ?? '200000,1000000').split(',').map(Number);
const ds = await dataset();

/** Resets the kernel's peak-RSS mark of a process, so the next reading is the peak from now on. */
const resetPeak = (pid: number) => fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** Downloads a URL, counting bytes, and answers the seconds it took. */
async function download(url: string, headers: Record<string, string>): Promise<{ seconds: number; bytes: number }> {
  const t0 = process.hrtime.bigint();
  const res = await fetch(url, { headers });
  if (!res.ok || !res.body) throw new Error(`${url} → ${res.status}`);
  let bytes = 0;
  for await (const chunk of res.body) bytes += (chunk as Uint8Array).length;
  return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, bytes };
}

interface Measure {
  rowsPerSecond: number;
  mib: number;
  growthMiB: number;
}

async function measure(proc: Proc, url: string, rows: number, headers: Record<string, string> = {}): Promise<Measure> {
  const pid = proc.child.pid as number;
  const base = rssMiB(pid);
  resetPeak(pid);
  const { seconds, bytes } = await download(proc.url + url, headers);
  const peak = await peakRssMiB(pid);
  return { rowsPerSecond: rows / seconds, mib: bytes / 2 ** 20, growthMiB: peak - base };
}

const lines: string[] = [];
const budgets: [string, boolean][] = [];
for (const n of SIZES) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-bench-'));
  let service = await startService({ ROWHOUSE_DATA_DIR: dir });
  const table = await createBenchTable(service.url);
  const ownerId = (await api(service.url, 'GET', '/api/api-keys')).data[0].memberId as string;
  await service.stop();
  const t0 = Date.now();
  await fillSqlite(path.join(dir, 'rowhouse.db'), table, n, ownerId);
  console.log(`loaded ${n} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  service = await startService({ ROWHOUSE_DATA_DIR: dir });
  const floor = await startFloor(path.join(dir, 'rowhouse.db'), [floorTable(ds, table)]);
  const auth = { 'x-api-key': BENCH_KEY };
  const exportUrl = (format: string, encoding: string) => `/api/tables/bench/rows-export?format=${format}&encoding=${encoding}&newline=lf`;

  await download(service.url + exportUrl('csv', 'utf8'), auth); // warm-up
  await download(floor.url + '/export', {});
  const floorRun = await measure(floor, '/export', n);
  const csv = await measure(service, exportUrl('csv', 'utf8'), n, auth);
  const sjis = await measure(service, exportUrl('csv', 'shiftJis'), n, auth);
  const jsonl = await measure(service, exportUrl('jsonl', 'utf8'), n, auth);

  // get-by-id latency alone, then while a CSV export is being downloaded.
  const someRow = scatteredRows(n);
  const byId = { path: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`, headers: auth };
  const quiet = await load(service.url, byId, 3);
  const during = download(service.url + exportUrl('csv', 'utf8'), auth);
  const busy = await load(service.url, byId, 3);
  await during;

  await service.stop();
  await floor.stop();
  fs.rmSync(dir, { recursive: true, force: true });

  const row = (name: string, m: Measure) =>
    `${String(n).padStart(8)} ${name.padEnd(22)} ${m.rowsPerSecond.toFixed(0).padStart(9)} ${m.mib.toFixed(0).padStart(7)} ${m.growthMiB.toFixed(0).padStart(12)} ${(m.rowsPerSecond / floorRun.rowsPerSecond).toFixed(2).padStart(8)}`;
  lines.push(row('floor (raw SELECT)', floorRun), row('csv utf8', csv), row('csv shiftJis', sjis), row('jsonl utf8', jsonl));
  lines.push(
    `${String(n).padStart(8)} get-by-id p99: ${quiet.p99} ms alone (${quiet.rps.toFixed(0)} req/s), ${busy.p99} ms during an export ` +
      `(${busy.rps.toFixed(0)} req/s, ${busy.errors} errors, ${busy.non2xx} non-2xx)`,
  );
  for (const [name, m] of [['csv utf8', csv], ['csv shiftJis', sjis], ['jsonl utf8', jsonl]] as const) {
    budgets.push([`${n} rows, ${name}: at least 50% of the floor's rows/s (${((100 * m.rowsPerSecond) / floorRun.rowsPerSecond).toFixed(0)}%)`, m.rowsPerSecond >= 0.5 * floorRun.rowsPerSecond]);
    if (n >= 1_000_000) budgets.push([`${n} rows, ${name}: peak memory growth under 100 MB (${m.growthMiB.toFixed(0)} MiB)`, m.growthMiB * 1.048576 < 100]);
  }
  budgets.push([`${n} rows: Shift_JIS within 2x of UTF-8 (${(csv.rowsPerSecond / sjis.rowsPerSecond).toFixed(2)}x)`, sjis.rowsPerSecond * 2 >= csv.rowsPerSecond]);
}

console.log(`\n${'rows'.padStart(8)} ${'export'.padEnd(22)} ${'rows/s'.padStart(9)} ${'MiB'.padStart(7)} ${'peak +MiB'.padStart(12)} ${'vs floor'.padStart(8)}`);
for (const l of lines) console.log(l);
console.log('\nbudgets:');
for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
