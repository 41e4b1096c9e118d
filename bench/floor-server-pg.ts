// The floor on PostgreSQL: a minimal Fastify + pg server answering the same workloads with raw,
// parameterised SQL on the same table. env: PORT, FLOOR_DB (a postgres:// URL), FLOOR_TABLES as
// for floor-server.ts (the first is the main table; /bulk and /batch write into any by index), and
// FLOOR_LINK (optional) as for floor-server.ts.
import type { Readable } from 'node:stream';
import { parse as csvParser } from 'csv-parse';
import Fastify from 'fastify';
import pg from 'pg';

interface FloorTable {
  physical: string;
  columns: Record<string, string>;
}

const pool = new pg.Pool({ connectionString: process.env.FLOOR_DB as string, max: 10 });
const tables = JSON.parse(process.env.FLOOR_TABLES as string) as FloorTable[];
const [{ physical: t, columns: c }] = tables;
const all = `id, created_at, updated_at, created_by, updated_by, ${Object.values(c).join(', ')}`;
const rows = async (text: string, values: unknown[]) => (await pool.query({ text, values })).rows;
const codes = Object.keys(c);
/** One whole row: $1 id, $2 the time, then each field's value in the order of `codes`. */
const insertOne = `insert into ${t} (${all}) values ($1, $2, $2, 'floor', 'floor', ${codes.map((_, k) => `$${k + 3}`).join(', ')})`;

const app = Fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
app.get('/first', async () => ({ data: await rows(`select ${all} from ${t} order by created_at, id limit $1`, [51]) }));
app.get('/after', async (req) => {
  const q = req.query as { c: string; id: string };
  return { data: await rows(`select ${all} from ${t} where (created_at, id) > ($1, $2) order by created_at, id limit $3`, [q.c, q.id, 51]) };
});
app.get('/paid', async () => ({
  // nulls last, as the service is asked (and as an index holding nulls first serves it backwards).
  data: await rows(`select ${all} from ${t} where ${c.status} = $1 and ${c.amount} > $2 order by ${c.amount} desc nulls last, id desc limit $3`, ['paid', 5000, 51]),
}));
app.get('/paidBelow', async (req) => ({
  data: await rows(`select ${all} from ${t} where ${c.status} = $1 and ${c.amount} > $2 and ${c.amount} < $3 order by ${c.amount} desc nulls last, id desc limit $4`, ['paid', 5000, Number((req.query as { lt: string }).lt), 51]),
}));
// As the service writes them: nulls last, which PostgreSQL must be told for a descending order.
app.get('/byAmount', async () => ({ data: await rows(`select ${all} from ${t} order by ${c.amount} desc nulls last, id desc limit $1`, [51]) }));
const link = process.env.FLOOR_LINK ? (JSON.parse(process.env.FLOOR_LINK) as { edges: string; mine: string; other: string; target: number; column: string }) : null;
// `link _some {column _eq v}` sorted by amount, as a hand-written EXISTS through the edge table (floor-server.ts).
app.get('/linkedSome', async (req) => ({
  data: link
    ? await rows(
        `select ${all} from ${t} where exists (select 1 from ${link.edges} e join ${tables[link.target].physical} x on x.id = e.${link.other} where e.${link.mine} = ${t}.id and x.${link.column} = $1) order by ${c.amount} desc nulls last, id desc limit $2`,
        [(req.query as { v: string }).v, 51],
      )
    : null,
}));
app.get('/byQuantity', async () => ({ data: await rows(`select ${all} from ${t} order by ${c.quantity} desc nulls last, id desc limit $1`, [51]) }));
// Aggregates (bench/aggregates.ts): hand-written GROUP BYs, the Tokyo month by PostgreSQL's zone data.
app.get('/agg/status', async () => ({ data: await rows(`select ${c.status} as status, count(*) as count from ${t} group by 1 order by 1`, []) }));
app.get('/agg/tokyo-months', async () => ({
  data: await rows(`select to_char(${c.dueAt} at time zone 'Asia/Tokyo', 'YYYY-MM') as month, sum(${c.amount}) as amount from ${t} group by 1 order by 1`, []),
}));
app.get('/agg/status-paid', async () => ({
  data: await rows(`select ${c.status} as status, ${c.paid} as paid, count(*) as count from ${t} group by 1, 2 having count(*) > $1 order by 1, 2`, [10]),
}));
app.get('/rows/:id', async (req, reply) => {
  const [row] = await rows(`select ${all} from ${t} where id = $1`, [(req.params as { id: string }).id]);
  return row ?? reply.status(404).send({ statusCode: 404 });
});
app.post('/rows', async (req, reply) => {
  // The whole row as given (every field of the table), as the service's create takes it.
  const body = req.body as { id?: string; values: Record<string, unknown> };
  const [row] = await rows(`${insertOne} returning ${all}`, [body.id ?? crypto.randomUUID(), new Date().toISOString(), ...codes.map((k) => encode(body.values[k]))]);
  return reply.status(201).send(row);
});
app.patch('/rows/:id', async (req) => {
  const [row] = await rows(`update ${t} set ${c.amount} = $1, updated_at = $2 where id = $3 returning ${all}`, [
    (req.body as { values: { amount: number } }).values.amount,
    new Date().toISOString(),
    (req.params as { id: string }).id,
  ]);
  return row;
});
/** A dataset value as its column takes it: objects and arrays as JSON text. */
const encode = (v: unknown) => (v === undefined ? null : typeof v === 'object' && v !== null ? JSON.stringify(v) : v);

/**
 * Inserts whole dataset rows into one table with one multi-row statement. Answers them as bound
 * (column → value), as the API answers the rows it wrote (the service does not read them back either).
 */
async function insertRows(client: pg.PoolClient, table: FloorTable, items: { id?: string; values: Record<string, unknown> }[], now: string): Promise<Record<string, unknown>[]> {
  const codes = Object.keys(table.columns);
  const names = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', ...Object.values(table.columns)];
  const params: unknown[] = [];
  const bound = items.map((it) => [it.id ?? crypto.randomUUID(), now, now, 'floor', 'floor', ...codes.map((k) => encode(it.values[k]))]);
  const tuples = bound.map((row) => `(${row.map((v) => `$${params.push(v)}`).join(', ')})`);
  await client.query(`insert into ${table.physical} (${names.join(', ')}) values ${tuples.join(', ')}`, params);
  return bound.map((row) => Object.fromEntries(names.map((n, k) => [n, row[k]])));
}

async function inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (err) {
    await client.query('rollback');
    throw err;
  } finally {
    client.release();
  }
}

app.post('/bulk', async (req, reply) => {
  const items = (req.body as { data: { id?: string; values: Record<string, unknown> }[] }).data;
  const written = await inTransaction((client) => insertRows(client, tables[0], items, new Date().toISOString()));
  return reply.status(201).send({ data: written });
});

/** Operations as /api/rows-batch takes them, with tableId an index into FLOOR_TABLES; a run of creates in one table is one insert. */
app.post('/batch', async (req) => {
  const ops = (req.body as { operations: { type: string; tableId: number; id?: string; values?: Record<string, unknown> }[] }).operations;
  const now = new Date().toISOString();
  const out: { type: string; row: unknown }[] = [];
  await inTransaction(async (client) => {
    for (let i = 0; i < ops.length; ) {
      const op = ops[i];
      if (op.type === 'create') {
        let j = i;
        while (j < ops.length && ops[j].type === 'create' && ops[j].tableId === op.tableId) j++;
        const written = await insertRows(client, tables[op.tableId], ops.slice(i, j).map((o) => ({ id: o.id, values: o.values ?? {} })), now);
        for (const row of written) out.push({ type: 'create', row });
        i = j;
        continue;
      }
      const { physical, columns } = tables[op.tableId];
      if (op.type === 'update') {
        const cols = `id, created_at, updated_at, created_by, updated_by, ${Object.values(columns).join(', ')}`;
        const { rows: [row] } = await client.query(`update ${physical} set ${columns.amount} = $1, updated_at = $2 where id = $3 returning ${cols}`, [Object.values(op.values ?? {})[0] ?? null, now, op.id]);
        out.push({ type: 'update', row });
      } else {
        await client.query(`delete from ${physical} where id = $1`, [op.id]);
        out.push({ type: 'delete', row: null });
      }
      i++;
    }
  });
  return { data: out };
});

/**
 * A CSV file (a header naming the columns by field code, `id` optional) streamed from the request
 * body into FLOOR_TABLES[?table] in ONE transaction, as multi-row inserts of 1000 rows (the
 * service's import writes a chunk of 1000 checked rows as one statement): what rows-import does,
 * minus its checks. csv-parse reads the body as it arrives, and waits while an insert runs; cells
 * are bound as text (PostgreSQL casts them to the column's type), an empty one as null. Answers {created}.
 */
app.addContentTypeParser('text/csv', (_req, payload, done) => done(null, payload));
app.post('/import', async (req) => {
  const { physical, columns } = tables[Number((req.query as { table?: string }).table ?? 0)];
  const now = new Date().toISOString();
  const parser = (req.body as Readable).pipe(csvParser());
  (req.body as Readable).once('error', (err) => parser.destroy(err));
  let created = 0;
  await inTransaction(async (client) => {
    let header: { idAt: number; fields: { k: number; column: string }[]; names: string[] } | null = null;
    let batch: (string | null)[][] = [];
    const flush = async () => {
      if (batch.length === 0 || !header) return;
      const params: unknown[] = [];
      const tuples = batch.map((row) => `(${row.map((v) => `$${params.push(v)}`).join(', ')})`);
      await client.query(`insert into ${physical} (${header.names.join(', ')}) values ${tuples.join(', ')}`, params);
      created += batch.length;
      batch = [];
    };
    for await (const cells of parser as AsyncIterable<string[]>) {
      if (!header) {
        const fields = cells.flatMap((code, k) => (code === 'id' ? [] : [{ k, column: columns[code] }]));
        header = { idAt: cells.indexOf('id'), fields, names: ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', ...fields.map((f) => f.column)] };
        continue;
      }
      const id = header.idAt === -1 ? crypto.randomUUID() : cells[header.idAt];
      batch.push([id, now, now, 'floor', 'floor', ...header.fields.map((f) => (cells[f.k] === '' ? null : cells[f.k]))]);
      if (batch.length === 1000) await flush();
    }
    await flush();
  });
  return { created };
});

/** The whole table as comma-joined lines, read in keyset chunks of 500 rows, as the service reads it. */
app.get('/export', async (_req, reply) => {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' });
  let after: [string, string] | null = null;
  for (;;) {
    const chunk: Record<string, unknown>[] = after
      ? await rows(`select ${all} from ${t} where (created_at, id) > ($1, $2) order by created_at, id limit 500`, after)
      : await rows(`select ${all} from ${t} order by created_at, id limit 500`, []);
    if (chunk.length === 0) break;
    let text = '';
    for (const r of chunk) text += Object.values(r).map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : v)).join(',') + '\n';
    if (!res.write(text)) await new Promise((resolve) => res.once('drain', resolve));
    const last = chunk[chunk.length - 1];
    after = [last.created_at as string, last.id as string];
  }
  res.end();
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
// A clean exit on SIGTERM, so that a CPU profile (bench/profile.ts, PROFILE_FLOOR=1) is written.
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
