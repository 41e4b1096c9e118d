import fs from 'node:fs';
import { createBenchTable, loadThroughApi } from './support/dataset.ts';
import { BENCH_KEY, startService } from './support/processes.ts';
// @ts-expect-error plain js
import { startPostgres } from '../test/support/postgres-server.mjs';
const N = Number(process.argv[2] ?? 100000);
const pgs = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
const dir = fs.mkdtempSync('/tmp/pgex-');
const svc = await startService({ ROWHOUSE_DATA_DIR: dir, ...(pgs ? { DATABASE_URL: pgs.url } : {}) });
await createBenchTable(svc.url, 'bench');
await loadThroughApi(svc.url, 'bench', N);
for (const [label, q] of [['default order', ''], ['quantity desc (no index)', `&sort=${encodeURIComponent(JSON.stringify([{ quantity: { direction: 'desc', nulls: 'nullsLast' } }]))}`], ['amount desc (index)', `&sort=${encodeURIComponent(JSON.stringify([{ amount: { direction: 'desc', nulls: 'nullsLast' } }]))}`]]) {
  const t0 = performance.now();
  const res = await fetch(`${svc.url}/api/tables/bench/rows-export?format=csv&encoding=utf8&newline=lf${q}`, { headers: { 'x-api-key': BENCH_KEY } });
  let bytes = 0; for await (const c of res.body as any) bytes += c.length;
  console.log(label.padEnd(28), res.status, ((performance.now() - t0) / 1000).toFixed(2), 's', bytes, 'bytes');
}
await svc.stop(); await pgs?.stop(); fs.rmSync(dir, { recursive: true, force: true });
