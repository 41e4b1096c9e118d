import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { idHex } from '../../src/domain/row-columns.ts';
import { migrate } from '../../src/store/migrations.ts';
import { type TestApp, allRows, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { pagePlan } from '../support/plans.ts';

/**
 * A field's index is its choice (`options.indexed`, for the types that can be sort keys), and text
 * of any length up to the body limit is storable, filterable and sortable on both databases, its
 * sorted lists still served by an index (PostgreSQL's B-tree cannot hold an entry over ~2.7 KB).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;

/** Code point order, as both databases compare text. */
const byCodePoints = (a: string, b: string) => {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i].codePointAt(0) as number) - (y[i].codePointAt(0) as number);
    if (d !== 0) return d;
  }
  return x.length - y.length;
};

eachDatabase('field indexes and long text', (kind) => {
  let t: TestApp;

  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  async function indexExists(name: string): Promise<boolean> {
    const { rows } =
      kind === 'sqlite'
        ? await sql`select name from sqlite_schema where type = 'index' and name = ${name}`.execute(t.database.db)
        : await sql`select indexname from pg_indexes where indexname = ${name}`.execute(t.database.db);
    return rows.length > 0;
  }

  const indexOf = (field: { id: string }) => `i_${idHex(field.id)}`;

  it('a field has an index only when its options say indexed: true; PUT adds and drops it', async () => {
    const r = await t.post('/api/tables', {
      code: 'ix',
      name: 'ix',
      fields: [
        { code: 'a', type: 'number', options: { indexed: true } },
        { code: 'b', type: 'number' },
        { code: 'c', type: 'text', options: { indexed: false, maxLength: 10 } },
      ],
    });
    assert.equal(r.status, 201, r.text);
    const [a, b, c] = r.body.fields;
    assert.deepEqual([a.options, b.options, c.options], [{ indexed: true }, {}, { indexed: false, maxLength: 10 }]);
    assert.deepEqual([await indexExists(indexOf(a)), await indexExists(indexOf(b)), await indexExists(indexOf(c))], [true, false, false]);

    const u = await t.put('/api/tables/ix', {
      fields: [
        { id: a.id, options: {} },
        { id: b.id, options: { indexed: true } },
        { id: c.id, required: false, options: { indexed: true, maxLength: 10 } },
      ],
    });
    assert.equal(u.status, 200, u.text);
    assert.deepEqual([await indexExists(indexOf(a)), await indexExists(indexOf(b)), await indexExists(indexOf(c))], [false, true, true]);
    // Removing an indexed field removes its index.
    assert.equal((await t.put('/api/tables/ix', { fields: [{ id: a.id }, { id: b.id }] })).status, 200);
    assert.equal(await indexExists(indexOf(c)), false);
  });

  it('indexed is refused where it means nothing or is not a boolean', async () => {
    for (const field of [
      { code: 'l', type: 'list', options: { indexed: true } },
      { code: 'r', type: 'record', options: { indexed: false } },
      { code: 'n', type: 'number', options: { indexed: 'yes' } },
    ]) {
      const r = await t.post('/api/tables', { code: 'bad_ix', name: 'bad', fields: [field] });
      const body = expectError(r, 400);
      assert.match(String(body.message), /fields\[0\]\.options/, String(body.message));
    }
    assert.equal((await t.get('/api/tables/bad_ix')).status, 404);
  });

  it('sorts, ranges and keyset pages agree with or without an index', async () => {
    const fields = [
      { code: 'n', type: 'number', options: { indexed: true } },
      { code: 'm', type: 'number' },
      { code: 's', type: 'text', options: { indexed: true } },
      { code: 'u', type: 'text' },
    ];
    assert.equal((await t.post('/api/tables', { code: 'twins', name: 'twins', fields })).status, 201);
    const data = Array.from({ length: 120 }, (_, i) => {
      const n = i % 7 === 0 ? null : (i * 37) % 50;
      const s = i % 11 === 0 ? null : `k${(i * 13) % 40}`;
      return { id: `r${i}`, values: { n, m: n, s, u: s } };
    });
    assert.equal((await t.post('/api/tables/twins/rows-bulk', { data })).status, 201);
    const walk = async (sort: unknown, filter: unknown) => {
      const ids: string[] = [];
      let url: string | null = `/api/tables/twins/rows?${new URLSearchParams({ pageSize: '7', sort: JSON.stringify(sort), filter: JSON.stringify(filter) })}`;
      while (url) {
        const r = await t.get(url);
        assert.equal(r.status, 200, r.text);
        ids.push(...r.body.data.map((x: Row) => x.id));
        url = r.body.nextUrl ? (r.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, '') : null;
      }
      return ids;
    };
    for (const direction of ['asc', 'desc']) {
      for (const nulls of ['nullsFirst', 'nullsLast']) {
        const spec = { direction, nulls };
        assert.deepEqual(await walk([{ n: spec }], { values: { n: { _gte: 10 } } }), await walk([{ m: spec }], { values: { m: { _gte: 10 } } }));
        assert.deepEqual(await walk([{ s: spec }], { values: { s: { _lt: 'k3' } } }), await walk([{ u: spec }], { values: { u: { _lt: 'k3' } } }));
        assert.deepEqual(await walk([{ s: spec }, { n: spec }], {}), await walk([{ u: spec }, { m: spec }], {}));
      }
    }
  });

  it('one index serves desc nullsLast and asc nullsFirst without a filter, on both databases', async () => {
    const r = await t.post('/api/tables', { code: 'nullable', name: 'nullable', fields: [{ code: 'n', type: 'number', options: { indexed: true } }, { code: 's', type: 'text', options: { indexed: true } }] });
    assert.equal(r.status, 201, r.text);
    const data = Array.from({ length: 300 }, (_, i) => ({ values: { n: i % 5 === 0 ? null : i, s: i % 3 === 0 ? null : `s${i}` } }));
    assert.equal((await t.post('/api/tables/nullable/rows-bulk', { data })).status, 201);
    for (const [code, field] of [['n', r.body.fields[0]], ['s', r.body.fields[1]]] as const) {
      for (const spec of [{ direction: 'desc', nulls: 'nullsLast' }, { direction: 'asc', nulls: 'nullsFirst' }]) {
        // PostgreSQL: may an index serve the order at all (a table this small is cheaper to sort)?
        const plan = await pagePlan(t.database, 'nullable', { sort: [{ [code]: spec }, { id: spec }] }, 'set local enable_sort = off');
        const what = `${code} ${JSON.stringify(spec)}: ${plan}`;
        if (kind === 'sqlite') {
          assert.match(plan, new RegExp(`USING INDEX ${indexOf(field)}\\b`), what);
          assert.doesNotMatch(plan, /TEMP B-TREE/, what);
        } else {
          assert.match(plan, new RegExp(`"Index Name":"${indexOf(field)}"`), what);
          // Text is ordered by its bounded prefix, then by the whole value: an incremental sort on top of the index.
          if (code === 'n') assert.doesNotMatch(plan, /"Node Type":"Sort"/, what);
        }
      }
    }
  });

  it('PostgreSQL: migration 8 makes the field indexes made before with nulls first', { skip: kind !== 'postgres' && 'PostgreSQL only' }, async () => {
    const r = await t.post('/api/tables', { code: 'old_ix', name: 'old', fields: [{ code: 'n', type: 'number', options: { indexed: true } }, { code: 's', type: 'text', options: { indexed: true } }] });
    assert.equal(r.status, 201, r.text);
    const names = r.body.fields.map(indexOf);
    const definitions = async () =>
      (await sql<{ indexdef: string }>`select indexdef from pg_indexes where indexname in (${sql.join(names)}) order by indexname`.execute(t.database.db)).rows.map((x) => x.indexdef);
    const made = await definitions();
    assert.equal(made.length, 2);
    for (const d of made) assert.match(d, / NULLS FIRST, id\)$/, d);
    // As an earlier version made them.
    for (const d of made) {
      await sql`drop index ${sql.id(d.split(' ')[2])}`.execute(t.database.db);
      await sql.raw(d.replace(' NULLS FIRST, id)', ', id)')).execute(t.database.db);
    }
    assert.ok((await definitions()).every((d) => !d.includes('NULLS FIRST')));
    await sql`delete from rh_migrations where version = 8`.execute(t.database.db);
    assert.deepEqual(await migrate(t.database.db, t.database.dialect), [8]);
    assert.deepEqual(await definitions(), made);
  });

  it('text of 3 MiB in an indexed field is stored, read back, filtered and sorted', async () => {
    const r = await t.post('/api/tables', { code: 'long', name: 'long', fields: [{ code: 'body', type: 'text', options: { indexed: true } }] });
    assert.equal(r.status, 201, r.text);
    const big = 'x'.repeat(3 * 1024 * 1024);
    const created = await t.post('/api/tables/long/rows', { id: 'big', values: { body: big } });
    assert.equal(created.status, 201, created.text.slice(0, 300));
    const got = await t.get('/api/tables/long/rows/big');
    assert.equal(got.status, 200);
    assert.equal(got.body.values.body.length, big.length);
    assert.equal(got.body.values.body, big);
    const patched = await t.patch('/api/tables/long/rows/big', { values: { body: `${big}y` } });
    assert.equal(patched.status, 200, patched.text.slice(0, 300));
    const found = await t.get('/api/tables/long/rows', { query: { filter: { values: { body: { _eq: `${big}y` } } } } });
    assert.deepEqual(found.body.data.map((x: Row) => x.id), ['big']);
  });

  it('long values that share a long prefix sort and page by their whole text, in code point order', async () => {
    const r = await t.post('/api/tables', { code: 'prefix', name: 'prefix', fields: [{ code: 'v', type: 'text', options: { indexed: true } }] });
    assert.equal(r.status, 201, r.text);
    const stem = 'あ'.repeat(300);
    const values = [
      `${stem}b`, `${stem}a`, `${stem}`, `${stem}😀`, `${stem}\uffff`, 'short', `${'あ'.repeat(255)}`, `${'あ'.repeat(256)}`,
      `${'あ'.repeat(257)}`, `${stem}a${'z'.repeat(5000)}`, null,
    ];
    const data = values.map((v, i) => ({ id: `p${i}`, values: { v } }));
    assert.equal((await t.post('/api/tables/prefix/rows-bulk', { data })).status, 201);
    const expected = (direction: 'asc' | 'desc') => {
      const nonNull = data.filter((d) => d.values.v !== null).sort((a, b) => byCodePoints(a.values.v as string, b.values.v as string) || (a.id < b.id ? -1 : 1));
      const ordered = direction === 'asc' ? nonNull : nonNull.reverse();
      return [...ordered.map((d) => d.id), 'p10'];
    };
    for (const direction of ['asc', 'desc'] as const) {
      const ids: string[] = [];
      const sort = JSON.stringify([{ v: { direction, nulls: 'nullsLast' } }]);
      let url: string | null = `/api/tables/prefix/rows?${new URLSearchParams({ pageSize: '2', sort })}`;
      while (url) {
        const page = await t.get(url);
        assert.equal(page.status, 200, page.text.slice(0, 300));
        ids.push(...page.body.data.map((x: Row) => x.id));
        url = page.body.nextUrl ? (page.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, '') : null;
      }
      assert.deepEqual(ids, expected(direction), direction);
    }
    // Comparisons with values longer and shorter than any bounded prefix.
    const compare = async (op: string, value: string) =>
      (await t.get('/api/tables/prefix/rows', { query: { pageSize: '200', filter: { values: { v: { [op]: value } } } } })).body.data.map((x: Row) => x.id).sort();
    const reference = (test: (v: string) => boolean) => data.filter((d) => d.values.v !== null && test(d.values.v)).map((d) => d.id).sort();
    for (const probe of [`${stem}a`, `${stem}`, 'あ'.repeat(256), 'あ'.repeat(255), 'short', `${stem}a${'z'.repeat(5000)}`]) {
      assert.deepEqual(await compare('_eq', probe), reference((v) => v === probe), `_eq ${probe.length}`);
      assert.deepEqual(await compare('_gt', probe), reference((v) => byCodePoints(v, probe) > 0), `_gt ${probe.length}`);
      assert.deepEqual(await compare('_gte', probe), reference((v) => byCodePoints(v, probe) >= 0), `_gte ${probe.length}`);
      assert.deepEqual(await compare('_lt', probe), reference((v) => byCodePoints(v, probe) < 0), `_lt ${probe.length}`);
      assert.deepEqual(await compare('_lte', probe), reference((v) => byCodePoints(v, probe) <= 0), `_lte ${probe.length}`);
    }
    assert.equal((await allRows(t, 'prefix')).length, values.length);
    if (kind === 'postgres') {
      // The order is one an index can serve: told to avoid scanning the table, PostgreSQL reads the
      // text field's index (its bounded prefix), not the table and a sort.
      const plan = await pagePlan(t.database, 'prefix', { sort: [{ v: { direction: 'asc', nulls: 'nullsFirst' } }] }, 'set local enable_seqscan = off');
      assert.match(plan, new RegExp(`"Index Name":"${indexOf(r.body.fields[0])}"`), plan);
    }
  });
});
