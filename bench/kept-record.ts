// What a kept Idempotency-Key answer costs SQLite itself on a single-row create (issue 29), apart
// from the service: a loop of raw transactions as the group commit makes them (better-sqlite3, the
// service's pragmas, 6 creates a commit; each a 14-column row with its id in order as bench/ sends
// them, its change entry in rh_changes, and for the keyed variants a record of the service's shape
// in rh_idempotency as migrations make it). Variants, interleaved in paired rounds, process CPU µs
// a create (median of the rounds):
//   plain:       the row and its entry
//   kept:        and the record, as the service keeps it (its unique index on keyHash)
//   kept-noindex: the same record in a copy of the table without that index
//   kept-ordered: the record with hashes in order (what the index costs when its pages are shared)
//   node --import tsx bench/kept-record.ts [rounds=6] [creates a round=6000] [records first=30000]
// docs/decisions.md, "The keyed create's own work, cut; what is left is the record's index".
import { hash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { openDatabase } from '../src/store/database.ts';
import { keyHashOf } from '../src/store/idempotency-key-hash.ts';
import { migrate } from '../src/store/migrations.ts';
import { ENTRY_COLUMNS } from '../src/store/change-entries.ts';
import { median } from './support/rounds.ts';

const ROUNDS = Number(process.argv[2] ?? 6);
const PER_ROUND = Number(process.argv[3] ?? 6000);
const FIRST = Number(process.argv[4] ?? 30_000);
const PER_COMMIT = 6;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rh-kept-'));
const file = path.join(dir, 'rowhouse.db');
// The service's schema: its migrations, run by opening the database once.
const service = await openDatabase(`sqlite:${file}`);
await migrate(service.db, service.dialect);
await service.close();
const db = new SqliteDatabase(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -65536');
db.exec(`create table bench_rows (id text primary key, "createdAt" text, "updatedAt" text, "createdBy" text, "updatedBy" text,
  f1 text, f2 text, f3 real, f4 integer, f5 integer, f6 text, f7 text, f8 text, f9 text)`);
db.exec('create table kept_noindex as select * from rh_idempotency where 0');
db.exec('create table kept_ordered as select * from rh_idempotency where 0');
db.exec('create unique index kept_ordered_hash on kept_ordered ("keyHash")');

type Variant = 'plain' | 'kept' | 'kept-noindex' | 'kept-ordered';
const table: Record<Exclude<Variant, 'plain'>, string> = { kept: 'rh_idempotency', 'kept-noindex': 'kept_noindex', 'kept-ordered': 'kept_ordered' };
const keptInsert = Object.fromEntries(
  Object.entries(table).map(([v, t]) => [
    v,
    db.prepare(`insert into ${t} ("keyId", "key", "method", "path", "bodyHash", "status", "contentType", "createdAt", "expiresAt", "keyHash", "body") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
  ]),
) as Record<Exclude<Variant, 'plain'>, SqliteDatabase.Statement>;
const rowInsert = db.prepare('insert into bench_rows values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
const entryInsert = db.prepare(`insert into rh_changes (${ENTRY_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?)`);
const values = { title: 'Order 0000001 東京 café', status: 'paid', amount: 1234.56, quantity: 7, paid: true, orderedOn: '2023-01-02', dueAt: '2023-01-05T10:00:00.000Z', meta: { source: 'web', priority: 2 }, tags: ['alpha', 'naïve'] };
const keyId = '01JD5Z8X0A1B2C3D4E5F6G7H8J';
let rows = 0;
let sequence = 0;
let ordered = -(2n ** 63n);

function create(variant: Variant): void {
  const id = `00000000-0000-4000-8000-${(++rows).toString(16).padStart(12, '0')}`;
  const now = new Date().toISOString();
  const record = JSON.stringify({ id, createdAt: now, updatedAt: now, createdBy: 'member', updatedBy: 'member', values });
  if (variant !== 'plain') {
    const key = randomUUID();
    const keyHash = variant === 'kept-ordered' ? (ordered += 1n) : keyHashOf(keyId, key);
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    keptInsert[variant].run(keyId, key, 'POST', '/api/tables/bench/rows', hash('sha256', key, 'hex'), 201, 'application/json; charset=utf-8', now, expires, keyHash, record);
  }
  rowInsert.run(id, now, now, 'member', 'member', values.title, values.status, values.amount, values.quantity, 1, values.orderedOn, values.dueAt, JSON.stringify(values.meta), JSON.stringify(values.tags));
  entryInsert.run('bench', ++sequence, 'create', id, record, null, now, 'member');
}

const begin = db.prepare('begin immediate');
const commit = db.prepare('commit');
/** Process CPU µs a create over `n` creates of `variant`, PER_COMMIT to a commit. */
function round(variant: Variant, n: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i += PER_COMMIT) {
    begin.run();
    for (let j = 0; j < PER_COMMIT; j++) create(variant);
    commit.run();
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const variants: Variant[] = ['plain', 'kept', 'kept-noindex', 'kept-ordered'];
// Each keyed table holds FIRST records before the measured rounds (a day of keys holds more).
for (const v of variants) if (v !== 'plain') round(v, FIRST);
const figures = new Map<Variant, number[]>(variants.map((v) => [v, []]));
for (let r = 0; r < ROUNDS; r++) for (const v of r % 2 === 0 ? variants : [...variants].reverse()) figures.get(v)?.push(round(v, PER_ROUND));
console.log(`SQLite, ${PER_COMMIT} creates a commit, ${FIRST} records first, ${ROUNDS} rounds of ${PER_ROUND}: process CPU µs a create, median (rounds)`);
for (const [v, xs] of figures) console.log(`  ${v.padEnd(13)} ${median(xs).toFixed(1).padStart(6)}   (${xs.map((x) => x.toFixed(0)).join(', ')})`);
db.close();
fs.rmSync(dir, { recursive: true, force: true });
