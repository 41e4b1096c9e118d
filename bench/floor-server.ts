// The floor: a minimal Fastify + better-sqlite3 server answering the same workloads with raw,
// prepared SQL on the same tables. What the service is measured against.
//   env: PORT, FLOOR_DB, FLOOR_TABLES = JSON [{physical, columns: {code: column}}] (the first is the main table),
//   FLOOR_LINK (optional) = JSON {edges, mine, other, target, column}: see /linkedSome
import type { Readable } from 'node:stream';
import SqliteDatabase from 'better-sqlite3';
import { parse as csvParser } from 'csv-parse';
import Fastify from 'fastify';

interface FloorTable {
  physical: string;
  columns: Record<string, string>;
}

// Statements bind their LIMIT as the service's do: with a literal LIMIT SQLite plans the sorted
// filter worse (the status index and a sort) than with a bound one (the amount index).
const db = new SqliteDatabase(process.env.FLOOR_DB as string);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
// Exact planner statistics, as the service keeps them: without them SQLite picks a poor plan for the sorted filter.
db.exec('analyze');
const tables = JSON.parse(process.env.FLOOR_TABLES as string) as FloorTable[];
const { physical: t, columns: c } = tables[0];
const cols = Object.values(c).join(', ');
const all = `id, created_at, updated_at, created_by, updated_by, ${cols}`;

const first = db.prepare(`select ${all} from ${t} order by created_at, id limit ?`);
const after = db.prepare(`select ${all} from ${t} where (created_at, id) > (?, ?) order by created_at, id limit ?`);
const paid = db.prepare(`select ${all} from ${t} where ${c.status} = ? and ${c.amount} > ? order by ${c.amount} desc, id desc limit ?`);
const paidBelow = db.prepare(`select ${all} from ${t} where ${c.status} = ? and ${c.amount} > ? and ${c.amount} < ? order by ${c.amount} desc, id desc limit ?`);
const byAmount = db.prepare(`select ${all} from ${t} order by ${c.amount} desc, id desc limit ?`);
const byQuantity = db.prepare(`select ${all} from ${t} order by ${c.quantity} desc, id desc limit ?`);
const byId = db.prepare(`select ${all} from ${t} where id = ?`);
const update = db.prepare(`update ${t} set ${c.amount} = ?, updated_at = ? where id = ?`);

/**
 * Inserts of whole dataset rows, per table: values in the column order of `columns`. Each answers
 * its row as bound (column → value), as the API answers the rows it wrote without reading them back.
 */
const inserters = tables.map(({ physical, columns }) => {
  const codes = Object.keys(columns);
  const names = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', ...Object.values(columns)];
  const stmt = db.prepare(`insert into ${physical} (${names.join(', ')}) values (${Array(names.length).fill('?').join(', ')})`);
  return (id: string, now: string, values: Record<string, unknown>) => {
    const row = [id, now, now, 'floor', 'floor', ...codes.map((k) => encode(values[k]))];
    stmt.run(row);
    return Object.fromEntries(names.map((n, k) => [n, row[k]]));
  };
});
const updaters = tables.map(({ physical, columns }) =>
  db.prepare(`update ${physical} set ${columns.amount ?? columns[Object.keys(columns)[0]]} = ?, updated_at = ? where id = ? returning id, created_at, updated_at, created_by, updated_by, ${Object.values(columns).join(', ')}`),
);
const deleters = tables.map(({ physical }) => db.prepare(`delete from ${physical} where id = ?`));

function encode(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'object') return JSON.stringify(v);
  return v;
}

/**
 * FLOOR_LINK: a link from the main table to FLOOR_TABLES[target], kept as rows of the edge table
 * `edges` (the main table's row ids in column `mine`, the target's in `other`). /linkedSome?v=X
 * answers what `link _some {column _eq X}` sorted by amount does, as a hand-written EXISTS.
 */
const link = process.env.FLOOR_LINK ? (JSON.parse(process.env.FLOOR_LINK) as { edges: string; mine: string; other: string; target: number; column: string }) : null;
const linkedSome = link
  ? db.prepare(
      `select ${all} from ${t} where exists (select 1 from ${link.edges} e join ${tables[link.target].physical} x on x.id = e.${link.other} where e.${link.mine} = ${t}.id and x.${link.column} = ?) order by ${c.amount} desc, id desc limit ?`,
    )
  : null;

/**
 * Aggregates (bench/aggregates.ts), hand-written GROUP BYs. The Tokyo month takes a fixed +09:00
 * offset: Asia/Tokyo has had no daylight-saving time since 1951, so it is exact for the dataset's
 * dates (the service picks the offset per row among the zone's changes, as it must for any zone).
 */
const perStatus = c.status ? db.prepare(`select ${c.status} as status, count(*) as count from ${t} group by 1 order by 1`) : null;
const tokyoMonths = c.dueAt ? db.prepare(`select strftime('%Y-%m', ${c.dueAt}, '+9 hours') as month, sum(${c.amount}) as amount from ${t} group by 1 order by 1`) : null;
const statusPaid = c.paid ? db.prepare(`select ${c.status} as status, ${c.paid} as paid, count(*) as count from ${t} group by 1, 2 having count(*) > ? order by 1, 2`) : null;
const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
app.get('/healthz', async () => ({ status: 'ok' }));
app.get('/first', async () => ({ data: first.all(51) }));
app.get('/after', async (req) => {
  const q = req.query as { c: string; id: string };
  return { data: after.all(q.c, q.id, 51) };
});
app.get('/paid', async () => ({ data: paid.all('paid', 5000, 51) }));
app.get('/paidBelow', async (req) => ({ data: paidBelow.all('paid', 5000, Number((req.query as { lt: string }).lt), 51) }));
app.get('/byAmount', async () => ({ data: byAmount.all(51) }));
app.get('/byQuantity', async () => ({ data: byQuantity.all(51) }));
app.get('/linkedSome', async (req) => ({ data: linkedSome?.all((req.query as { v: string }).v, 51) }));
app.get('/agg/status', async () => ({ data: perStatus?.all() }));
app.get('/agg/tokyo-months', async () => ({ data: tokyoMonths?.all() }));
app.get('/agg/status-paid', async () => ({ data: statusPaid?.all(10) }));
app.get('/rows/:id', async (req, reply) => {
  const row = byId.get((req.params as { id: string }).id);
  return row ?? reply.status(404).send({ statusCode: 404 });
});
app.post('/rows', async (req, reply) => {
  const body = req.body as { id?: string; values: Record<string, unknown> };
  const id = body.id ?? crypto.randomUUID();
  inserters[0](id, new Date().toISOString(), body.values);
  return reply.status(201).send(byId.get(id));
});
app.patch('/rows/:id', async (req) => {
  const id = (req.params as { id: string }).id;
  update.run((req.body as { values: { amount: number } }).values.amount, new Date().toISOString(), id);
  return byId.get(id);
});
app.post('/bulk', async (req, reply) => {
  const items = (req.body as { data: { id?: string; values: Record<string, unknown> }[] }).data;
  const now = new Date().toISOString();
  const written = db.transaction(() => items.map((it) => inserters[0](it.id ?? crypto.randomUUID(), now, it.values)))();
  return reply.status(201).send({ data: written });
});
/** Operations as /api/rows-batch takes them, with tableId an index into FLOOR_TABLES. */
app.post('/batch', async (req) => {
  const ops = (req.body as { operations: { type: string; tableId: number; id?: string; values?: Record<string, unknown> }[] }).operations;
  const now = new Date().toISOString();
  const out = db.transaction(() => ops.map((op) => {
    if (op.type === 'create') return { type: op.type, row: inserters[op.tableId](op.id ?? crypto.randomUUID(), now, op.values ?? {}) };
    if (op.type === 'update') return { type: op.type, row: updaters[op.tableId].get(Object.values(op.values ?? {})[0] ?? null, now, op.id) };
    deleters[op.tableId].run(op.id);
    return { type: op.type, row: null };
  }))();
  return { data: out };
});
/** A raw SELECT over the whole table, each row's values joined with commas, written straight to the socket. */
const everything = db.prepare(`select ${all} from ${t} order by created_at, id`).raw(true);
app.get('/export', (_req, reply) => {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' });
  const rows = everything.iterate() as IterableIterator<unknown[]>;
  const pump = () => {
    for (;;) {
      let text = '';
      let n = 0;
      // next() by hand: leaving a for-of early would close the iterator.
      for (let r = rows.next(); !r.done; r = n === 500 ? { done: true, value: undefined } : rows.next()) {
        text += r.value.join(',') + '\n';
        n++;
      }
      if (n === 0) return res.end();
      if (!res.write(text)) return res.once('drain', pump);
    }
  };
  pump();
});
/**
 * A CSV file (a header naming the columns by field code, `id` optional) streamed from the request
 * body into FLOOR_TABLES[?table], all its rows in ONE transaction through one prepared insert: what
 * the service's rows-import does, minus its checks. csv-parse reads the body as it arrives (never
 * held whole); each cell is bound as its column's declared type takes it (empty: null; REAL: a
 * number; INTEGER: true/false as 1/0; TEXT as it is, JSON cells too, unchecked). Answers {created}.
 */
app.addContentTypeParser('text/csv', (_req, payload, done) => done(null, payload));
app.post('/import', async (req) => {
  const { physical, columns } = tables[Number((req.query as { table?: string }).table ?? 0)];
  const declared = new Map((db.prepare(`select name, type from pragma_table_info('${physical}')`).all() as { name: string; type: string }[]).map((r) => [r.name, r.type.toUpperCase()]));
  const convert = (column: string) => {
    const type = declared.get(column);
    if (type === 'REAL') return (s: string) => (s === '' ? null : Number(s));
    if (type === 'INTEGER') return (s: string) => (s === '' ? null : s === 'true' ? 1 : s === 'false' ? 0 : Number(s));
    return (s: string) => (s === '' ? null : s);
  };
  const now = new Date().toISOString();
  const parser = (req.body as Readable).pipe(csvParser());
  (req.body as Readable).once('error', (err) => parser.destroy(err));
  let insert: ((cells: string[]) => void) | null = null;
  let created = 0;
  db.exec('begin immediate');
  try {
    for await (const cells of parser as AsyncIterable<string[]>) {
      if (!insert) {
        const idAt = cells.indexOf('id');
        const fields = cells.flatMap((code, k) => (code === 'id' ? [] : [{ k, column: columns[code], convert: convert(columns[code]) }]));
        const names = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', ...fields.map((f) => f.column)];
        const stmt = db.prepare(`insert into ${physical} (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`);
        insert = (row) => {
          stmt.run(idAt === -1 ? crypto.randomUUID() : row[idAt], now, now, 'floor', 'floor', ...fields.map((f) => f.convert(row[f.k])));
        };
        continue;
      }
      insert(cells);
      created++;
    }
    db.exec('commit');
  } catch (err) {
    db.exec('rollback');
    throw err;
  }
  return { created };
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
// A clean exit on SIGTERM, so that a CPU profile (bench/profile.ts, PROFILE_FLOOR=1) is written.
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
