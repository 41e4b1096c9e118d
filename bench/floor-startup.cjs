// The start-up floor for bench/startup.ts: the least a Fastify + better-sqlite3 server can do, as
// plain CommonJS like the service's build: open a SQLite file, answer one GET route from it. (The
// same file as an ES module, importing Fastify through Node's ES module loader, starts about 50 ms
// later and idles 6 MiB larger: a cost of the module format, not of Fastify, so not the floor's.)
//   env: PORT, FLOOR_DB (a file path)
const SqliteDatabase = require('better-sqlite3');
const Fastify = require('fastify');

const db = new SqliteDatabase(process.env.FLOOR_DB);
db.pragma('journal_mode = WAL');
const tables = db.prepare("select name from sqlite_master where type = 'table'");
const app = Fastify();
app.get('/tables', async () => ({ data: tables.all() }));
app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).catch((err) => {
  console.error(err);
  process.exit(1);
});
