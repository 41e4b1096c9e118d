// Profiles one workload of the service (a development aid): PROFILE_SERVICE=DIR node --import tsx bench/prof-get.ts [path]
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { api, createBenchTable, dataset, fillSqlite } from './support/dataset.ts';
import { BENCH_KEY, startService } from './support/processes.ts';
import { load } from './support/load.ts';
const ds = await dataset();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rh-prof-'));
let s = await startService({ ROWHOUSE_DATA_DIR: dir });
const table = await createBenchTable(s.url);
const ownerId = (await api(s.url, 'GET', '/api/api-keys')).data[0].memberId as string;
await s.stop();
await fillSqlite(path.join(dir, 'rowhouse.db'), table, 20000, ownerId);
s = await startService({ ROWHOUSE_DATA_DIR: dir });
let k = 0;
const r = await load(s.url, { path: () => `/api/tables/bench/rows/${ds.rowId((k = (k * 7919 + 13) % 20000))}`, headers: { 'x-api-key': BENCH_KEY } }, 5);
console.log(r);
await s.stop();
fs.rmSync(dir, { recursive: true, force: true });
