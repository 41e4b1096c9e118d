import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { allRows, eachDatabase } from '../support/harness.ts';
import { killLoop, serveOver } from '../support/kill-loop.ts';
import { type Server, buildProject, complaints, servedDatabase, stopAll } from '../support/served.ts';
import { type Answer, callJson, overHttp } from '../support/wire.ts';

/**
 * Issue 17 (reliability), crash safety: `rowhouse serve` in a child process takes single, bulk
 * and batch writes (creates, upserts, updates, deletes; bulks of 50-200 rows; batches across two
 * tables) from several clients at once, and is killed with SIGKILL at a random moment, again and
 * again (ROWHOUSE_CRASH_CYCLES, default 100), on the same database. After each restart:
 *
 * - it starts cleanly: it says it listens, /healthz and /readyz answer 200, and the killed and the
 *   new process wrote nothing on stderr nor any log line of level warn or above on stdout;
 * - every acknowledged write is there, exactly: each client owns its rows and sends one request
 *   at a time, so its rows must be exactly as its acknowledged requests left them, or as those
 *   and the one request the kill cut off left them (that one applied whole or not at all);
 * - no partial bulk or batch is visible: each request tags the rows it writes with a marker of its
 *   own; of the cut-off request's marker either every row it wrote or none is there (of an
 *   acknowledged one, all that no later write changed: the exact check above);
 * - the change log matches the rows: the feed, read following nextCursor and replayed (create and
 *   update set the row to the change's row, delete removes it), gives exactly the tables' rows,
 *   records equal field by field; creates come only for absent rows, updates and deletes only for
 *   present ones. The feed is read on from the last cursor after each restart, and read whole
 *   again and replayed from nothing every FULL_FEED_EVERY cycles and at the end (the part read
 *   before must not have changed).
 *
 * The server is the project's own launcher over a build of the current src/, made once
 * (test/support/served.ts): through tsx every restart took 2-3 s instead of about half a second.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;
type Values = { title: string; mark: string | null; n: number | null };
type TableCode = 'ka' | 'kb';

const CYCLES = Number(process.env.ROWHOUSE_CRASH_CYCLES || 100);
const CLIENTS = Number(process.env.ROWHOUSE_CRASH_CLIENTS || 4);
const FULL_FEED_EVERY = 25;
/** A client with more rows than this in a table mostly deletes there, so listing stays cheap. */
const MAX_LIVE = 250;
const TABLES: TableCode[] = ['ka', 'kb'];
const FIELDS = [
  { code: 'title', type: 'text', required: true },
  { code: 'mark', type: 'text' },
  { code: 'n', type: 'number' },
];

let project: string;

before(() => {
  project = buildProject('rowhouse-crash-build-');
});
after(stopAll);

/** A request; throws when no whole answer came (the connection was reset by the kill). */
const call = callJson;

/** A row's state as its client knows it, keyed "table/id". */
type Model = Map<string, Values>;
type Effect = { key: string; values: Values | null } | { key: string; merge: Partial<Values> };

function applied(model: Model, effects: Effect[]): Model {
  const next = new Map(model);
  for (const e of effects) {
    if ('merge' in e) {
      const before = next.get(e.key);
      if (!before) throw new Error(`model: an update of ${e.key}, which the client does not have`);
      next.set(e.key, { ...before, ...e.merge });
    } else if (e.values === null) next.delete(e.key);
    else next.set(e.key, e.values);
  }
  return next;
}

const canonical = (v: Values) => JSON.stringify([v.title, v.mark, v.n]);

/** The keys whose state differs between two models. */
function differences(a: Model, b: Model): string[] {
  const keys = new Set([...a.keys(), ...b.keys()]);
  return [...keys].filter((k) => {
    const x = a.get(k);
    const y = b.get(k);
    return x === undefined || y === undefined ? x !== y : canonical(x) !== canonical(y);
  });
}

const random = (n: number) => Math.floor(Math.random() * n);
const between = (lo: number, hi: number) => lo + random(hi - lo + 1);
function pick<T>(items: T[], n: number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = random(i + 1);
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}

/** A request a client sends, with what it does to the client's rows when it is applied. */
interface Planned {
  what: string;
  mark: string;
  method: string;
  path: string;
  body: unknown;
  ok: number[];
  effects: Effect[];
}

/** One writer: owns the rows whose ids start with `c<k>-`, and sends one request at a time. */
class Client {
  model: Model = new Map();
  /** Ids of its rows deleted (some are created again). */
  private readonly dead: Record<TableCode, Set<string>> = { ka: new Set(), kb: new Set() };
  private nextId = 0;
  private counter = 0;
  /** The request the kill cut off (sent, no whole answer), if any. */
  pending: Planned | null = null;
  acknowledged = 0;

  constructor(readonly k: number) {}

  private live(table: TableCode): string[] {
    const prefix = `${table}/`;
    return [...this.model.keys()].filter((key) => key.startsWith(prefix)).map((key) => key.slice(prefix.length));
  }

  /** New ids, some of them ids of rows deleted before (created again). */
  private fresh(table: TableCode, n: number, taken: Set<string>): string[] {
    const out: string[] = [];
    for (const id of this.dead[table]) {
      if (out.length >= n || Math.random() < 0.7) break;
      if (!taken.has(id)) out.push(id);
    }
    while (out.length < n) out.push(`c${this.k}-${this.nextId++}`);
    for (const id of out) taken.add(id);
    return out;
  }

  /** Notes what an acknowledged (or, after a restart, found applied) request did. */
  adopt(model: Model): void {
    for (const key of this.model.keys()) {
      if (!model.has(key)) {
        const [table, id] = key.split('/') as [TableCode, string];
        this.dead[table].add(id);
      }
    }
    for (const key of model.keys()) {
      const [table, id] = key.split('/') as [TableCode, string];
      this.dead[table].delete(id);
    }
    this.model = model;
  }

  plan(mark: string): Planned {
    const table: TableCode = Math.random() < 0.5 ? 'ka' : 'kb';
    const live = this.live(table);
    const taken = new Set<string>();
    const n = ++this.counter;
    const rows = `/api/tables/${table}/rows`;
    const key = (id: string, t: TableCode = table) => `${t}/${id}`;
    const created = (): Values => ({ title: `t${n}`, mark, n });
    let r = Math.random();
    if (live.length > MAX_LIVE) r = 0.55; // a bulk delete
    if (live.length === 0 && r >= 0.1 && r < 0.6) r = 0.05; // nothing to change yet: a bulk create
    if (r < 0.1) {
      const ids = this.fresh(table, between(50, 200), taken);
      return { what: `bulk create ${ids.length} in ${table}`, mark, method: 'POST', path: `${rows}-bulk`, ok: [201], body: { data: ids.map((id) => ({ id, values: created() })) }, effects: ids.map((id) => ({ key: key(id), values: created() })) };
    }
    if (r < 0.2) {
      // Upsert: rows that exist are updated (all three fields given: the same state as a create), the others created.
      const ids = [...pick(live, between(10, 80)), ...this.fresh(table, between(10, 80), taken)];
      return { what: `bulk upsert ${ids.length} in ${table}`, mark, method: 'POST', path: `${rows}-bulk`, ok: [200, 201], body: { data: ids.map((id) => ({ id, values: created() })), options: { upsert: true } }, effects: ids.map((id) => ({ key: key(id), values: created() })) };
    }
    if (r < 0.35) {
      const ids = pick(live, between(1, 150));
      return { what: `bulk update ${ids.length} in ${table}`, mark, method: 'PATCH', path: `${rows}-bulk`, ok: [200], body: { data: ids.map((id) => ({ id, values: { n, mark } })) }, effects: ids.map((id) => ({ key: key(id), merge: { n, mark } })) };
    }
    if (r < 0.45) {
      const ids = pick(live, between(1, Math.min(100, Math.ceil(live.length / 2))));
      return { what: `bulk delete ${ids.length} in ${table}`, mark, method: 'DELETE', path: `${rows}-bulk`, ok: [200], body: { ids }, effects: ids.map((id) => ({ key: key(id), values: null })) };
    }
    if (r < 0.6) {
      const ids = pick(live, live.length > MAX_LIVE ? 150 : between(20, 100));
      return { what: `bulk delete ${ids.length} in ${table}`, mark, method: 'DELETE', path: `${rows}-bulk`, ok: [200], body: { ids }, effects: ids.map((id) => ({ key: key(id), values: null })) };
    }
    if (r < 0.75) return this.batch(mark, n);
    // Single-row writes.
    if (r < 0.8 || live.length === 0) {
      const [id] = this.fresh(table, 1, taken);
      return { what: `create ${table}/${id}`, mark, method: 'POST', path: rows, ok: [201], body: { id, values: created() }, effects: [{ key: key(id), values: created() }] };
    }
    const [id] = pick(live, 1);
    if (r < 0.85) {
      const upsertId = Math.random() < 0.5 ? id : this.fresh(table, 1, taken)[0];
      return { what: `upsert ${table}/${upsertId}`, mark, method: 'POST', path: rows, ok: [200, 201], body: { id: upsertId, values: created(), options: { upsert: true } }, effects: [{ key: key(upsertId), values: created() }] };
    }
    if (r < 0.95) {
      return { what: `update ${table}/${id}`, mark, method: 'PATCH', path: `${rows}/${id}`, ok: [200], body: { values: { n, mark } }, effects: [{ key: key(id), merge: { n, mark } }] };
    }
    return { what: `delete ${table}/${id}`, mark, method: 'DELETE', path: `${rows}/${id}`, ok: [204], body: undefined, effects: [{ key: key(id), values: null }] };
  }

  /** A batch across both tables: creates, an update of a row it just created, updates and deletes of existing rows. */
  private batch(mark: string, n: number): Planned {
    const operations: unknown[] = [];
    const effects: Effect[] = [];
    for (const table of TABLES) {
      const taken = new Set<string>();
      const live = this.live(table);
      const touched = pick(live, between(0, Math.min(8, live.length)));
      const updates = touched.slice(0, Math.ceil(touched.length / 2));
      const deletes = touched.slice(updates.length);
      const creates = this.fresh(table, between(1, 10), taken);
      for (const id of creates) {
        operations.push({ type: 'create', tableId: table, id, values: { title: `b${n}`, mark, n: 0 } });
        effects.push({ key: `${table}/${id}`, values: { title: `b${n}`, mark, n: 0 } });
      }
      operations.push({ type: 'update', tableId: table, id: creates[0], values: { n } });
      effects.push({ key: `${table}/${creates[0]}`, merge: { n } });
      for (const id of updates) {
        operations.push({ type: 'update', tableId: table, id, values: { n, mark } });
        effects.push({ key: `${table}/${id}`, merge: { n, mark } });
      }
      for (const id of deletes) {
        operations.push({ type: 'delete', tableId: table, id });
        effects.push({ key: `${table}/${id}`, values: null });
      }
    }
    return { what: `batch of ${operations.length}`, mark, method: 'POST', path: '/api/rows-batch', ok: [200], body: { operations }, effects };
  }

  /**
   * Whether an acknowledged answer says what the model expects: each row it returns (a single
   * write's row, a bulk's data[i], a batch's data[i].row) holds the state after its item. So the
   * model, which the restarts are checked against, is what the acknowledgements said.
   */
  private answered(planned: Planned, answer: Answer): string[] {
    if (planned.method === 'DELETE') return [];
    const batch = planned.path === '/api/rows-batch';
    const rows: (Row | null)[] = batch ? (answer.body?.data ?? []).map((d: Row) => d.row) : Array.isArray(answer.body?.data) ? answer.body.data : [answer.body];
    if (rows.length !== planned.effects.length) return [`answered ${rows.length} rows for ${planned.effects.length} items`];
    const out: string[] = [];
    let state = this.model;
    planned.effects.forEach((e, i) => {
      state = applied(state, [e]);
      const expected = state.get(e.key);
      const row = rows[i];
      if (!expected) {
        if (row !== null) out.push(`item ${i} deletes ${e.key} but answered a row`);
        return;
      }
      const got = row && { title: row.values?.title, mark: row.values?.mark, n: row.values?.n };
      if (!got || `${e.key.slice(0, 3)}${row.id}` !== e.key || canonical(got) !== canonical(expected)) {
        out.push(`item ${i} answered ${JSON.stringify(row)?.slice(0, 200)}, expected ${e.key} ${canonical(expected)}`);
      }
    });
    return out;
  }

  /** Sends requests one after the other until one gets no whole answer (the kill), or `stop` says so. */
  async run(base: string, cycle: number, stop: () => boolean, problems: string[]): Promise<void> {
    for (let r = 0; !stop(); r++) {
      const planned = this.plan(`m${cycle}.${this.k}.${r}`);
      let answer: Answer;
      try {
        answer = await call(base, planned.method, planned.path, planned.body);
      } catch {
        this.pending = planned;
        return;
      }
      if (planned.ok.includes(answer.status)) {
        this.acknowledged++;
        for (const p of this.answered(planned, answer)) problems.push(`cycle ${cycle}, client ${this.k}, ${planned.what}: ${p}`);
        this.adopt(applied(this.model, planned.effects));
      } else {
        // Refused: nothing of it was written (checked after the restart, as every row is).
        problems.push(`cycle ${cycle}, client ${this.k}, ${planned.what}: ${answer.status} ${answer.text.slice(0, 300)}`);
      }
    }
  }
}

/** The whole table, through the list API, by id. */
async function listAll(base: string, table: TableCode): Promise<Map<string, Row>> {
  return new Map((await allRows(overHttp(base), table)).map((row) => [row.id, row]));
}

/** A table's feed replayed: the rows it gives, and how far it was read. */
interface Replay {
  rows: Map<string, Row>;
  cursor: number;
  changes: number;
}

/** Reads the feed on from `replay.cursor` to its end, applying each change; answers the problems found. */
async function readFeed(base: string, table: TableCode, replay: Replay): Promise<string[]> {
  const problems: string[] = [];
  for (;;) {
    const r = await call(base, 'GET', `/api/tables/${table}/changes?after=${replay.cursor}&limit=1000`);
    assert.equal(r.status, 200, `the ${table} feed after ${replay.cursor}: ${r.text.slice(0, 300)}`);
    const changes: Row[] = r.body.data;
    if (changes.length === 0) {
      if (r.body.nextCursor !== replay.cursor) problems.push(`${table}: an empty page after ${replay.cursor} says nextCursor ${r.body.nextCursor}`);
      return problems;
    }
    for (const c of changes) {
      if (!(c.sequence > replay.cursor)) problems.push(`${table}: change ${c.sequence} follows ${replay.cursor}`);
      replay.cursor = c.sequence;
      replay.changes++;
      const had = replay.rows.has(c.rowId);
      if (c.type === 'delete') {
        if (!had || c.row !== null) problems.push(`${table}: change ${c.sequence} deletes ${c.rowId}, ${had ? 'with a row' : 'which the feed never created'}`);
        replay.rows.delete(c.rowId);
      } else if (c.type === 'create' || c.type === 'update') {
        if ((c.type === 'create') === had) problems.push(`${table}: change ${c.sequence} ${c.type}s ${c.rowId}, which ${had ? 'the feed already holds' : 'the feed does not hold'}`);
        if (c.row?.id !== c.rowId) problems.push(`${table}: change ${c.sequence} holds the row ${c.row?.id} for ${c.rowId}`);
        replay.rows.set(c.rowId, c.row);
      } else problems.push(`${table}: change ${c.sequence} of type ${c.type}`);
    }
    if (r.body.nextCursor !== replay.cursor) problems.push(`${table}: nextCursor ${r.body.nextCursor} after change ${replay.cursor}`);
  }
}

/** Where the replayed feed and the table disagree (records compared whole). */
function feedMismatches(table: TableCode, replay: Map<string, Row>, rows: Map<string, Row>): string[] {
  const out: string[] = [];
  for (const [id, row] of rows) {
    const replayed = replay.get(id);
    if (!replayed) out.push(`${table}/${id} is in the table, not in the replayed feed`);
    else if (!isDeepStrictEqual(replayed, row)) out.push(`${table}/${id}: the table holds ${JSON.stringify(row)}, the feed ${JSON.stringify(replayed)}`);
  }
  for (const id of replay.keys()) if (!rows.has(id)) out.push(`${table}/${id} is in the replayed feed, not in the table`);
  return out;
}

eachDatabase('reliability: SIGKILL of rowhouse serve under concurrent writes', (kind) => {
  const db = servedDatabase(kind);

  it(`killed ${CYCLES} times: acknowledged writes kept, no partial bulk or batch, the feed replays to the rows, clean starts`, { timeout: 30 * 60_000 }, async () => {
    const started = Date.now();
    const clients = Array.from({ length: CLIENTS }, (_, k) => new Client(k));
    const replays = new Map<TableCode, Replay>(TABLES.map((t) => [t, { rows: new Map(), cursor: 0, changes: 0 }]));
    const stats = { acknowledged: 0, cutOff: 0, cutOffApplied: 0, rows: 0, changes: 0, startMs: 0 };

    /** Everything a restart must show, given the processes so far. */
    async function verify(server: Server, cycle: number, full: boolean): Promise<void> {
      const problems: string[] = [];
      for (const p of ['/healthz', '/readyz']) {
        const r = await call(server.base, 'GET', p);
        if (r.status !== 200) problems.push(`${p}: ${r.status} ${r.text.slice(0, 200)}`);
      }
      const tables = new Map<TableCode, Map<string, Row>>();
      for (const t of TABLES) tables.set(t, await listAll(server.base, t));
      // Every row as its client's requests left it.
      const byClient = new Map<number, Model>(clients.map((c) => [c.k, new Map()]));
      for (const [t, rows] of tables) {
        for (const row of rows.values()) {
          const k = Number(/^c(\d+)-/.exec(row.id)?.[1]);
          const model = byClient.get(k);
          if (!model) {
            problems.push(`${t}/${row.id}: a row no client wrote`);
            continue;
          }
          model.set(`${t}/${row.id}`, { title: row.values.title, mark: row.values.mark, n: row.values.n });
        }
      }
      for (const c of clients) {
        const actual = byClient.get(c.k) as Model;
        const pending = c.pending;
        c.pending = null;
        const without = differences(c.model, actual);
        if (!pending) {
          if (without.length > 0) problems.push(`client ${c.k}: ${without.length} rows differ from its acknowledged writes: ${describe(without, c.model, actual)}`);
          continue;
        }
        stats.cutOff++;
        const withIt = applied(c.model, pending.effects);
        // The cut-off request's marker: on every row it wrote, or on none.
        const marked = (m: Model) => [...m.values()].filter((v) => v.mark === pending.mark).length;
        if (marked(actual) !== 0 && marked(actual) !== marked(withIt)) {
          problems.push(`client ${c.k}, cycle ${cycle}: ${marked(actual)} of the ${marked(withIt)} rows of the cut-off ${pending.what} (${pending.mark}) are there: a partial write`);
        }
        const withDiff = differences(withIt, actual);
        if (without.length === 0) continue; // not applied (or it changed nothing)
        if (withDiff.length === 0) {
          stats.cutOffApplied++;
          c.adopt(withIt);
          continue;
        }
        problems.push(
          `client ${c.k}, cycle ${cycle}: its rows are neither as its acknowledged writes left them (${without.length} differ: ${describe(without, c.model, actual)}) ` +
            `nor as those and the cut-off ${pending.what} would (${withDiff.length} differ: ${describe(withDiff, withIt, actual)})`,
        );
        // Carry on from what is there, so one failure is not reported again every cycle.
        c.adopt(actual);
      }
      // The change log: read on (or whole again), replayed, against the rows.
      for (const t of TABLES) {
        const rows = tables.get(t) as Map<string, Row>;
        const replay = replays.get(t) as Replay;
        problems.push(...(await readFeed(server.base, t, replay)));
        problems.push(...feedMismatches(t, replay.rows, rows).slice(0, 10));
        if (full) {
          const whole: Replay = { rows: new Map(), cursor: 0, changes: 0 };
          problems.push(...(await readFeed(server.base, t, whole)));
          if (whole.cursor !== replay.cursor || whole.changes !== replay.changes) {
            problems.push(`${t}: the whole feed holds ${whole.changes} changes up to ${whole.cursor}; read on cycle by cycle it held ${replay.changes} up to ${replay.cursor}`);
          }
          problems.push(...feedMismatches(t, whole.rows, rows).slice(0, 10));
        }
      }
      stats.rows = [...tables.values()].reduce((s, m) => s + m.size, 0);
      assert.deepEqual(problems, [], `after restart ${cycle} (${kind})`);
    }

    function describe(keys: string[], expected: Model, actual: Model): string {
      return keys
        .slice(0, 5)
        .map((k) => `${k} expected ${expected.has(k) ? canonical(expected.get(k) as Values) : 'absent'}, found ${actual.has(k) ? canonical(actual.get(k) as Values) : 'absent'}`)
        .join('; ');
    }

    const first = await serveOver(project, db);
    for (const t of TABLES) {
      const r = await call(first.base, 'POST', '/api/tables', { code: t, name: t, fields: FIELDS });
      assert.equal(r.status, 201, r.text);
    }
    let refused: string[] = [];
    const server = await killLoop({
      first,
      cycles: CYCLES,
      async start() {
        const t0 = Date.now();
        const restarted = await serveOver(project, db);
        stats.startMs += Date.now() - t0;
        return restarted;
      },
      // A short stream of writes from every client at once, then SIGKILL at a random moment.
      killAfterMs: () => between(20, 300),
      write(server, cycle, killed) {
        refused = [];
        return Promise.all(clients.map((c) => c.run(server.base, cycle, killed, refused)));
      },
      gone(server, exit, cycle) {
        assert.equal(exit.signal, 'SIGKILL', `process of cycle ${cycle} ended by itself (${exit.code})`);
        assert.deepEqual(complaints(server, { allowCutLines: true }), [], `the process of cycle ${cycle}`);
        assert.deepEqual(refused, [], `requests of cycle ${cycle} refused`);
      },
      async restarted(server, cycle) {
        await verify(server, cycle, cycle % FULL_FEED_EVERY === 0 || cycle === CYCLES);
        assert.deepEqual(complaints(server, { allowCutLines: true }), [], `the start after cycle ${cycle}`);
      },
    });
    // A last, orderly stop.
    server.child.kill('SIGTERM');
    const exit = await server.closed;
    assert.equal(exit.code, 0, `SIGTERM: exit ${exit.code ?? exit.signal}\n${server.stderr()}`);
    assert.deepEqual(complaints(server, { allowCutLines: true }), []);

    stats.acknowledged = clients.reduce((s, c) => s + c.acknowledged, 0);
    stats.changes = [...replays.values()].reduce((s, r) => s + r.changes, 0);
    // The kills must have landed among writes: most cycles cut a request off.
    assert.ok(stats.cutOff >= CYCLES / 2, `only ${stats.cutOff} requests were cut off in ${CYCLES} cycles`);
    console.log(`[${kind}] ${CYCLES} kills in ${((Date.now() - started) / 1000).toFixed(1)} s (starts ${(stats.startMs / 1000).toFixed(1)} s): ${JSON.stringify(stats)}`);
  });
});
