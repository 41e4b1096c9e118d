// The floor on PostgreSQL: a minimal Fastify + pg server answering the same workloads with raw,
// parameterised SQL on the same table. env: PORT, FLOOR_DB (a postgres:// URL), FLOOR_TABLES as
// for floor-server.ts (only the first table is used).
import Fastify from 'fastify';
import pg from 'pg';

interface FloorTable {
  physical: string;
  columns: Record<string, string>;
}

const pool = new pg.Pool({ connectionString: process.env.FLOOR_DB as string, max: 10 });
const [{ physical: t, columns: c }] = JSON.parse(process.env.FLOOR_TABLES as string) as FloorTable[];
const all = `id, created_at, updated_at, created_by, updated_by, ${Object.values(c).join(', ')}`;
const rows = async (text: string, values: unknown[]) => (await pool.query({ text, values })).rows;

const app = Fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
app.get('/first', async () => ({ data: await rows(`select ${all} from ${t} order by created_at, id limit $1`, [51]) }));
app.get('/after', async (req) => {
  const q = req.query as { c: string; id: string };
  return { data: await rows(`select ${all} from ${t} where (created_at, id) > ($1, $2) order by created_at, id limit $3`, [q.c, q.id, 51]) };
});
app.get('/paid', async () => ({
  data: await rows(`select ${all} from ${t} where ${c.status} = $1 and ${c.amount} > $2 order by ${c.amount} desc, id desc limit $3`, ['paid', 5000, 51]),
}));
app.get('/rows/:id', async (req, reply) => {
  const [row] = await rows(`select ${all} from ${t} where id = $1`, [(req.params as { id: string }).id]);
  return row ?? reply.status(404).send({ statusCode: 404 });
});
app.post('/rows', async (req, reply) => {
  const body = req.body as { values: { title: string; amount: number } };
  const now = new Date().toISOString();
  const [row] = await rows(
    `insert into ${t} (id, created_at, updated_at, created_by, updated_by, ${c.title}, ${c.amount}) values ($1, $2, $2, 'floor', 'floor', $3, $4) returning ${all}`,
    [crypto.randomUUID(), now, body.values.title, body.values.amount],
  );
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
