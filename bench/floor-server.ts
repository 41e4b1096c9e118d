// The floor: a minimal Fastify + better-sqlite3 server answering the same workloads with raw,
// prepared SQL on the same table. What the service is measured against.
import SqliteDatabase from 'better-sqlite3';
import Fastify from 'fastify';

const db = new SqliteDatabase(process.env.FLOOR_DB as string);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
const t = process.env.FLOOR_TABLE as string;
const c = JSON.parse(process.env.FLOOR_COLUMNS as string) as Record<string, string>;
const cols = Object.values(c).join(', ');

const first = db.prepare(`select id, created_at, updated_at, created_by, updated_by, ${cols} from ${t} order by created_at, id limit 51`);
const after = db.prepare(
  `select id, created_at, updated_at, created_by, updated_by, ${cols} from ${t} where (created_at, id) > (?, ?) order by created_at, id limit 51`,
);
const paid = db.prepare(
  `select id, created_at, updated_at, created_by, updated_by, ${cols} from ${t} where ${c.status} = 'paid' and ${c.amount} > 5000 order by ${c.amount} desc, id limit 51`,
);
const byId = db.prepare(`select id, created_at, updated_at, created_by, updated_by, ${cols} from ${t} where id = ?`);
const insert = db.prepare(`insert into ${t} (id, created_at, updated_at, created_by, updated_by, ${c.title}, ${c.amount}) values (?, ?, ?, 'floor', 'floor', ?, ?)`);
const update = db.prepare(`update ${t} set ${c.amount} = ?, updated_at = ? where id = ?`);

const app = Fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
app.get('/first', async () => ({ data: first.all() }));
app.get('/after', async (req) => {
  const q = req.query as { c: string; id: string };
  return { data: after.all(q.c, q.id) };
});
app.get('/paid', async () => ({ data: paid.all() }));
app.get('/rows/:id', async (req, reply) => {
  const row = byId.get((req.params as { id: string }).id);
  return row ?? reply.status(404).send({ statusCode: 404 });
});
app.post('/rows', async (req, reply) => {
  const body = req.body as { values: { title: string; amount: number } };
  const now = new Date().toISOString();
  const id = crypto.randomUUID();
  insert.run(id, now, now, body.values.title, body.values.amount);
  return reply.status(201).send(byId.get(id));
});
app.patch('/rows/:id', async (req) => {
  const id = (req.params as { id: string }).id;
  update.run((req.body as { values: { amount: number } }).values.amount, new Date().toISOString(), id);
  return byId.get(id);
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
