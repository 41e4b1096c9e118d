import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { allRows, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { type Answer, callJson } from '../support/wire.ts';

/**
 * Bulk writes and batches from several clients at once over a real listening server (CONTRACT §7:
 * atomic, all or nothing): what was acknowledged is there, nothing of a failed request is, no
 * request fails with a 5xx (SQLite writers wait their turn), and readers never see half a bulk.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;

const CLIENTS = 8;

eachDatabase('rows: concurrent bulk writes and batches', (kind) => {
  let t: ListeningApp;
  let base: string;
  /** Every answer of every request, to check that none was a 5xx. */
  const answers: { what: string; status: number; text: string }[] = [];

  before(async () => {
    t = await startListening(kind);
    base = t.base;
    for (const [code, fields] of [
      ['ca', [{ code: 'title', type: 'text', required: true }, { code: 'mark', type: 'text' }, { code: 'n', type: 'number' }]],
      ['cb', [{ code: 'name', type: 'text', required: true }, { code: 'mark', type: 'text' }]],
      ['cr', [{ code: 'title', type: 'text', required: true }, { code: 'mark', type: 'text' }, { code: 'n', type: 'number' }]],
      ['cx', [{ code: 'title', type: 'text', required: true }, { code: 'n', type: 'number' }]],
      ['cy', [{ code: 'title', type: 'text', required: true }, { code: 'n', type: 'number' }]],
    ] as const) {
      const r = await call('POST', '/api/tables', { code, name: code, fields });
      assert.equal(r.status, 201, r.text);
    }
  });
  after(() => t.close());
  // Each test checks the answers of its own requests.
  beforeEach(() => {
    answers.length = 0;
  });

  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    const answer = await callJson(base, method, path, body);
    answers.push({ what: `${method} ${path}`, status: answer.status, text: answer.text.slice(0, 300) });
    return answer;
  }


  async function dump(code: string): Promise<Map<string, Row>> {
    return new Map((await allRows({ get: (path) => call('GET', path) }, code)).map((row) => [row.id, row]));
  }

  function noServerErrors(): void {
    const bad = answers.filter((a) => a.status >= 500);
    assert.deepEqual(bad, [], `${bad.length} requests answered 5xx`);
  }

  it(`${CLIENTS} clients sending overlapping bulks and batches: every acknowledged change is there, nothing of a failed one, no 5xx`, async () => {
    const expectA = new Map<string, Record<string, unknown>>();
    const expectB = new Map<string, Record<string, unknown>>();
    const absentA = new Set<string>();
    const absentB = new Set<string>();
    /** What each client's acknowledged upserts wrote to the shared rows. */
    const sharedWrites = new Map<string, Set<number>>();
    const SHARED = Array.from({ length: 20 }, (_, i) => `shared-${i}`);
    const unexpected: string[] = [];
    const expectStatus = (what: string, r: Answer, ...ok: number[]) => {
      if (!ok.includes(r.status)) unexpected.push(`${what}: expected ${ok.join('/')}, got ${r.status} ${r.text.slice(0, 300)}`);
      return ok.includes(r.status);
    };

    async function client(k: number): Promise<void> {
      for (let j = 0; j < 6; j++) {
        const mark = `k${k}-j${j}`;
        const ids = Array.from({ length: 40 }, (_, m) => `${mark}-${m}`);
        // A bulk create; every third one ends with an id this client created before: 409, all of it undone.
        const failing = j % 3 === 2;
        const items = ids.map((id, m) => ({ id, values: { title: `t${m}`, mark, n: 0 } }));
        if (failing) items.push({ id: `k${k}-j0-0`, values: { title: 'dup', mark, n: -1 } });
        const created = await call('POST', '/api/tables/ca/rows-bulk', { data: items });
        if (failing) {
          expectStatus(`bulk create ${mark}`, created, 409);
          for (const id of ids) absentA.add(id);
        } else if (expectStatus(`bulk create ${mark}`, created, 201)) {
          ids.forEach((id, m) => expectA.set(id, { title: `t${m}`, mark, n: 0 }));
          // A bulk update of half of them; every other one ends with an unknown id: 404, nothing changed.
          const half = ids.slice(0, 20);
          const badUpdate = j % 2 === 1;
          const data = half.map((id) => ({ id, values: { n: j + 1 } }));
          if (badUpdate) data.push({ id: `${mark}-ghost`, values: { n: 99 } });
          const updated = await call('PATCH', '/api/tables/ca/rows-bulk', { data });
          if (badUpdate) expectStatus(`bulk update ${mark}`, updated, 404);
          else if (expectStatus(`bulk update ${mark}`, updated, 200)) {
            for (const id of half) expectA.set(id, { ...expectA.get(id), n: j + 1 });
          }
        }

        // A batch across both tables; every other one ends with a duplicate create: 409, all undone.
        const badBatch = j % 2 === 0;
        const ops: unknown[] = [
          { type: 'create', tableId: 'ca', id: `${mark}-bx`, values: { title: 'bx', mark: `${mark}-batch`, n: 1 } },
          { type: 'create', tableId: 'cb', id: `${mark}-by`, values: { name: 'by', mark } },
          { type: 'update', tableId: 'ca', id: `${mark}-bx`, values: { n: 2 } },
          { type: 'create', tableId: 'cb', id: `${mark}-bz`, values: { name: 'bz', mark } },
          { type: 'delete', tableId: 'cb', id: `${mark}-bz` },
        ];
        if (badBatch) ops.push({ type: 'create', tableId: 'cb', id: `${mark}-by`, values: { name: 'again' } });
        const batched = await call('POST', '/api/rows-batch', { operations: ops });
        if (badBatch) {
          if (expectStatus(`batch ${mark}`, batched, 409)) assert.equal(batched.body.index, 5, batched.text);
          absentA.add(`${mark}-bx`);
          absentB.add(`${mark}-by`);
        } else if (expectStatus(`batch ${mark}`, batched, 200)) {
          expectA.set(`${mark}-bx`, { title: 'bx', mark: `${mark}-batch`, n: 2 });
          expectB.set(`${mark}-by`, { name: 'by', mark });
        }
        absentB.add(`${mark}-bz`);

        // Every client upserts the same shared rows: each request either creates or updates them, never fails.
        if (j < 2) {
          const n = k * 10 + j;
          const up = await call('POST', '/api/tables/ca/rows-bulk', {
            data: SHARED.map((id) => ({ id, values: { title: 'shared', mark: 'shared', n } })),
            options: { upsert: true },
          });
          if (expectStatus(`shared upsert ${n}`, up, 200, 201)) {
            for (const id of SHARED) {
              if (!sharedWrites.has(id)) sharedWrites.set(id, new Set());
              sharedWrites.get(id)?.add(n);
            }
          }
        }
      }
    }

    await Promise.all(Array.from({ length: CLIENTS }, (_, k) => client(k)));
    noServerErrors();
    assert.deepEqual(unexpected, []);

    const a = await dump('ca');
    const b = await dump('cb');
    for (const [id, values] of expectA) assert.deepEqual(a.get(id)?.values, values, `ca row ${id}`);
    for (const [id, values] of expectB) assert.deepEqual(b.get(id)?.values, values, `cb row ${id}`);
    for (const id of absentA) assert.equal(a.has(id), false, `ca row ${id} of a failed request is there`);
    for (const id of absentB) assert.equal(b.has(id), false, `cb row ${id} of a failed request is there`);
    // Nothing else either: no duplicate-carrying row was changed, and no stray row appeared.
    for (const id of a.keys()) assert.ok(expectA.has(id) || sharedWrites.has(id), `unexpected ca row ${id}`);
    for (const id of b.keys()) assert.ok(expectB.has(id), `unexpected cb row ${id}`);
    for (const id of SHARED) {
      const row = a.get(id);
      assert.ok(row, `shared row ${id} missing`);
      assert.ok(sharedWrites.get(id)?.has(row.values.n), `shared row ${id} holds n=${row.values.n}, written by no acknowledged upsert`);
    }
    // All shared rows hold the write of the same request: the upserts did not interleave.
    assert.equal(new Set(SHARED.map((id) => a.get(id)?.values.n)).size, 1);
  });

  it('a reader listing rows while bulks commit never sees half a bulk', async () => {
    const BULKS = 12;
    const SIZE = 100;
    const marks = Array.from({ length: BULKS }, (_, i) => `rb-${i}`);
    let writing = true;
    const violations: string[] = [];
    let reads = 0;
    let nonEmptyReads = 0;

    async function reader(offset: number): Promise<void> {
      let i = offset;
      while (writing) {
        const mark = marks[i++ % BULKS];
        const filter = JSON.stringify({ values: { mark: { _eq: mark } } });
        const r = await call('GET', `/api/tables/cr/rows?${new URLSearchParams({ pageSize: '200', filter })}`);
        if (r.status !== 200) {
          violations.push(`read ${mark}: ${r.status} ${r.text.slice(0, 200)}`);
          continue;
        }
        reads++;
        const rows: Row[] = r.body.data;
        if (rows.length > 0) nonEmptyReads++;
        if (rows.length !== 0 && rows.length !== SIZE) violations.push(`${mark}: saw ${rows.length} of ${SIZE} rows`);
        const ns = new Set(rows.map((x) => x.values.n));
        if (ns.size > 1) violations.push(`${mark}: saw a half-applied bulk update (n = ${[...ns].join(', ')})`);
      }
    }

    async function writer(w: number): Promise<void> {
      for (let i = w; i < BULKS; i += 4) {
        const mark = marks[i];
        const ids = Array.from({ length: SIZE }, (_, m) => `${mark}-${m}`);
        const c = await call('POST', '/api/tables/cr/rows-bulk', { data: ids.map((id, m) => ({ id, values: { title: `t${m}`, mark, n: 0 } })) });
        assert.equal(c.status, 201, c.text);
        const u = await call('PATCH', '/api/tables/cr/rows-bulk', { data: ids.map((id) => ({ id, values: { n: 1 } })) });
        assert.equal(u.status, 200, u.text);
        // A failing bulk create into the same mark (its last id exists): none of it may ever be seen.
        const f = await call('POST', '/api/tables/cr/rows-bulk', {
          data: [...ids.map((_, m) => ({ id: `${mark}-f${m}`, values: { title: 'f', mark, n: 1 } })), { id: ids[0], values: { title: 'f' } }],
        });
        assert.equal(f.status, 409, f.text);
        if (i % 2 === 0) {
          const d = await call('DELETE', '/api/tables/cr/rows-bulk', { ids });
          assert.equal(d.status, 200, d.text);
        }
      }
    }

    const readers = [0, 3, 6].map((o) => reader(o));
    try {
      await Promise.all([0, 1, 2, 3].map((w) => writer(w)));
    } finally {
      writing = false;
      await Promise.all(readers);
    }
    noServerErrors();
    assert.deepEqual(violations, []);
    assert.ok(reads >= 10 && nonEmptyReads > 0, `the readers ran ${reads} reads (${nonEmptyReads} non-empty): too few to tell`);
    const rows = await dump('cr');
    assert.equal(rows.size, (BULKS / 2) * SIZE);
  });

  it(`${CLIENTS} bulk upserts of the same new ids at once: each creates or updates, none fails; one of them created the rows`, async () => {
    for (let round = 0; round < 3; round++) {
      const ids = Array.from({ length: 50 }, (_, m) => `up${round}-${m}`);
      const answers = await Promise.all(
        Array.from({ length: CLIENTS }, (_, k) =>
          call('POST', '/api/tables/cx/rows-bulk', { data: ids.map((id) => ({ id, values: { title: `k${k}`, n: k } })), options: { upsert: true } })),
      );
      const statuses = answers.map((a) => a.status);
      assert.ok(statuses.every((s) => s === 200 || s === 201), `round ${round}: ${answers.map((a) => `${a.status} ${a.text.slice(0, 150)}`).join('\n')}`);
      // All or nothing: the first to commit created all 50 rows; every later one updated them all.
      assert.equal(statuses.filter((s) => s === 201).length, 1, `round ${round}: statuses ${statuses.join(', ')}`);
      for (const a of answers) assert.deepEqual(a.body.data.map((x: Row) => x.id), ids);
      const rows = [...(await dump('cx')).values()].filter((x) => x.id.startsWith(`up${round}-`));
      assert.equal(rows.length, 50);
      // The rows hold one request's values throughout: the upserts did not interleave.
      assert.equal(new Set(rows.map((x) => x.values.n)).size, 1, JSON.stringify(rows.map((x) => x.values.n)));
    }
    noServerErrors();
  });

  it('bulk updates and batches touching the same rows in opposite orders all succeed (no deadlock surfaces as an error)', async () => {
    const ids = Array.from({ length: 60 }, (_, m) => `o-${String(m).padStart(2, '0')}`);
    const c = await call('POST', '/api/tables/cx/rows-bulk', { data: ids.map((id) => ({ id, values: { title: 't', n: 0 } })) });
    assert.equal(c.status, 201, c.text);
    const reversed = [...ids].reverse();
    const work: Promise<Answer>[] = [];
    for (let k = 0; k < CLIENTS; k++) {
      const order = k % 2 === 0 ? ids : reversed;
      work.push(
        k % 4 < 2
          ? call('PATCH', '/api/tables/cx/rows-bulk', { data: order.map((id) => ({ id, values: { n: k + 1 } })) })
          : call('POST', '/api/rows-batch', { operations: order.map((id) => ({ type: 'update', tableId: 'cx', id, values: { n: k + 1 } })) }),
      );
    }
    const done = await Promise.all(work);
    assert.deepEqual(done.map((a) => a.status), done.map(() => 200), done.map((a) => a.text.slice(0, 200)).join('\n'));
    const rows = [...(await dump('cx')).values()].filter((x) => x.id.startsWith('o-'));
    assert.equal(new Set(rows.map((x) => x.values.n)).size, 1, 'each request applied as a whole, one after the other');
    noServerErrors();
  });

  it('a bulk update racing a bulk delete of the same rows: the update is a 404 or updates every row; one delete wins', async () => {
    const SIZE = 150;
    const problems: string[] = [];
    for (let round = 0; round < 8; round++) {
      const ids = Array.from({ length: SIZE }, (_, m) => `x${round}-${m}`);
      const c = await call('POST', '/api/tables/cy/rows-bulk', { data: ids.map((id) => ({ id, values: { title: 't', n: 0 } })) });
      assert.equal(c.status, 201, c.text);
      const [del1, upd, del2] = await Promise.all([
        call('DELETE', '/api/tables/cy/rows-bulk', { ids }),
        call('PATCH', '/api/tables/cy/rows-bulk', { data: ids.map((id) => ({ id, values: { n: round + 1 } })) }),
        call('DELETE', '/api/tables/cy/rows-bulk', { ids }),
      ]);
      if (upd.status === 200) {
        const data: (Row | null)[] = upd.body.data;
        const ok = data.length === SIZE && data.every((row, m) => row !== null && row.id === ids[m] && row.values.n === round + 1);
        if (!ok) problems.push(`round ${round}: update answered 200 with ${JSON.stringify(data.slice(0, 3))}…`);
      } else if (upd.status !== 404) problems.push(`round ${round}: update answered ${upd.status} ${upd.text.slice(0, 200)}`);
      const deletes = [del1, del2].map((d) => d.status).sort();
      // Two deletes of the same rows: one deletes them, the other finds them gone.
      if (JSON.stringify(deletes) !== JSON.stringify([200, 404])) {
        problems.push(`round ${round}: the two deletes answered ${deletes.join(' and ')}`);
      }
      const left = await call('GET', `/api/tables/cy/rows?pageSize=1`);
      assert.equal(left.status, 200, left.text);
      if (left.body.data.length !== 0) problems.push(`round ${round}: rows remain after the deletes`);
    }
    noServerErrors();
    assert.deepEqual(problems, []);
  });
});
