// Listing generic resources (CONTRACT §9): paging and pagination, every filter operator and
// and/or nesting (checking the exact set answered), sorting, and relations.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { type Item, expectStatus, hook, listAll, namesOf, sleep } from './resources-support.ts';

/** Environment variables created one by one, in this order, a few ms apart (distinct createdAt). */
const VARS = [
  { name: 'ALPHA', value: 'apple', description: 'first' },
  { name: 'BETA', value: 'Banana', description: null },
  { name: 'GAMMA', value: 'cherry', description: 'third one' },
  { name: 'DELTA', value: 'date', description: null },
  { name: 'EPSILON', value: '50%_off', description: 'has_underscore' },
  { name: 'ZETA', value: 'APPLE pie', description: 'x' },
];
const ALL = VARS.map((v) => v.name).sort();

eachDatabase('resources: listing', (kind) => {
  let t: TestApp;
  let vars: Item[];
  const byName = (name: string) => vars.find((v) => v.name === name) as Item;

  before(async () => {
    t = await startApp(kind);
    vars = [];
    for (const v of VARS) {
      vars.push(expectStatus(await t.post('/api/environment-variables', v), 201));
      await sleep(5);
    }
  });
  after(() => t.close());

  /** The sorted names of the environment variables the filter selects. */
  const filtered = async (filter: unknown) => namesOf(await t.get('/api/environment-variables', { query: { filter } }));
  const without = (...names: string[]) => ALL.filter((n) => !names.includes(n));

  describe('filter', () => {
    it('eq and neq (neq, like SQL, leaves out null values: use isNot for those)', async () => {
      assert.deepEqual(await filtered({ value: { eq: 'apple' } }), ['ALPHA']);
      assert.deepEqual(await filtered({ value: { eq: 'APPLE' } }), []);
      assert.deepEqual(await filtered({ value: { neq: 'apple' } }), without('ALPHA'));
      assert.deepEqual(await filtered({ description: { eq: 'x' } }), ['ZETA']);
      assert.deepEqual(await filtered({ description: { neq: 'first' } }), ['EPSILON', 'GAMMA', 'ZETA']);
    });

    it('gt, gte, lt, lte on text, alone and as a range', async () => {
      assert.deepEqual(await filtered({ name: { gt: 'DELTA' } }), ['EPSILON', 'GAMMA', 'ZETA']);
      assert.deepEqual(await filtered({ name: { gte: 'DELTA' } }), ['DELTA', 'EPSILON', 'GAMMA', 'ZETA']);
      assert.deepEqual(await filtered({ name: { lt: 'BETA' } }), ['ALPHA']);
      assert.deepEqual(await filtered({ name: { lte: 'BETA' } }), ['ALPHA', 'BETA']);
      // Operators of one condition are ANDed.
      assert.deepEqual(await filtered({ name: { gte: 'BETA', lt: 'GAMMA' } }), ['BETA', 'DELTA', 'EPSILON']);
    });

    it('comparisons on createdAt, with values in any offset', async () => {
      const at = (name: string) => byName(name).createdAt as string;
      assert.deepEqual(await filtered({ createdAt: { gt: at('GAMMA') } }), ['DELTA', 'EPSILON', 'ZETA']);
      assert.deepEqual(await filtered({ createdAt: { gte: at('GAMMA') } }), ['DELTA', 'EPSILON', 'GAMMA', 'ZETA']);
      assert.deepEqual(await filtered({ createdAt: { lt: at('GAMMA') } }), ['ALPHA', 'BETA']);
      assert.deepEqual(await filtered({ createdAt: { lte: at('GAMMA') } }), ['ALPHA', 'BETA', 'GAMMA']);
      assert.deepEqual(await filtered({ createdAt: { eq: at('GAMMA') } }), ['GAMMA']);
      assert.deepEqual(await filtered({ createdAt: { neq: at('GAMMA') } }), without('GAMMA'));
      assert.deepEqual(await filtered({ createdAt: { in: [at('ALPHA'), at('ZETA')] } }), ['ALPHA', 'ZETA']);
      assert.deepEqual(await filtered({ createdAt: { notIn: [at('ALPHA'), at('ZETA')] } }), ['BETA', 'DELTA', 'EPSILON', 'GAMMA']);
      // The same instant written with another offset.
      const tokyo = new Date(Date.parse(at('GAMMA')) + 9 * 3600_000).toISOString().replace('Z', '+09:00');
      assert.deepEqual(await filtered({ createdAt: { eq: tokyo } }), ['GAMMA']);
      assert.deepEqual(await filtered({ createdAt: { isNot: null } }), ALL);
      assert.deepEqual(await filtered({ createdAt: { is: null } }), []);
    });

    it('like is case-sensitive, iLike is not; _ and % are wildcards', async () => {
      assert.deepEqual(await filtered({ value: { like: 'app%' } }), ['ALPHA']);
      assert.deepEqual(await filtered({ value: { like: 'APP%' } }), ['ZETA']);
      assert.deepEqual(await filtered({ value: { iLike: 'app%' } }), ['ALPHA', 'ZETA']);
      assert.deepEqual(await filtered({ value: { iLike: 'APP%' } }), ['ALPHA', 'ZETA']);
      assert.deepEqual(await filtered({ value: { like: 'banana' } }), []);
      assert.deepEqual(await filtered({ value: { iLike: 'BANANA' } }), ['BETA']);
      assert.deepEqual(await filtered({ value: { like: '%a%' } }), ['ALPHA', 'BETA', 'DELTA']);
      assert.deepEqual(await filtered({ value: { iLike: '%a%' } }), ['ALPHA', 'BETA', 'DELTA', 'ZETA']);
      assert.deepEqual(await filtered({ value: { like: 'd_te' } }), ['DELTA']);
      assert.deepEqual(await filtered({ value: { like: '50%' } }), ['EPSILON']);
      assert.deepEqual(await filtered({ name: { like: '%A' } }), ['ALPHA', 'BETA', 'DELTA', 'GAMMA', 'ZETA']);
    });

    it('iLike ignores the case of non-ASCII letters too, like is case-sensitive for them', async () => {
      const made = expectStatus(await t.post('/api/flows', { name: 'ÄPFEL_Über' }), 201);
      const flows = async (filter: unknown) => namesOf(await t.get('/api/flows', { query: { filter: { and: [{ id: { eq: made.id } }, filter] } } }));
      assert.deepEqual(await flows({ name: { iLike: 'äpfel_über' } }), ['ÄPFEL_Über']);
      assert.deepEqual(await flows({ name: { iLike: '%ÜBER' } }), ['ÄPFEL_Über']);
      assert.deepEqual(await flows({ name: { like: 'äpfel%' } }), []);
      assert.deepEqual(await flows({ name: { like: 'ÄPFEL%' } }), ['ÄPFEL_Über']);
    });

    it('a backslash makes the next %, _ or \\ literal in like, notLike and iLike, on both databases', async () => {
      assert.deepEqual(await filtered({ value: { like: '50\\%%' } }), ['EPSILON']);
      assert.deepEqual(await filtered({ value: { like: '%\\%\\_%' } }), ['EPSILON']);
      assert.deepEqual(await filtered({ description: { like: '%\\_%' } }), ['EPSILON']);
      assert.deepEqual(await filtered({ description: { iLike: '%\\_%' } }), ['EPSILON']);
      assert.deepEqual(await filtered({ description: { notLike: '%\\_%' } }), ['ALPHA', 'GAMMA', 'ZETA']);
      assert.deepEqual(await filtered({ value: { like: 'd\\_te' } }), []);
    });

    it('notLike is the case-sensitive complement of like', async () => {
      assert.deepEqual(await filtered({ value: { notLike: '%a%' } }), ['EPSILON', 'GAMMA', 'ZETA']);
      assert.deepEqual(await filtered({ value: { notLike: 'app%' } }), without('ALPHA'));
      assert.deepEqual(await filtered({ value: { notLike: '%' } }), []);
    });

    it('in and notIn (notIn, like neq, leaves out null values)', async () => {
      assert.deepEqual(await filtered({ name: { in: ['ALPHA', 'GAMMA', 'NOPE'] } }), ['ALPHA', 'GAMMA']);
      assert.deepEqual(await filtered({ name: { in: ['NOPE'] } }), []);
      assert.deepEqual(await filtered({ name: { notIn: ['ALPHA', 'GAMMA'] } }), without('ALPHA', 'GAMMA'));
      assert.deepEqual(await filtered({ description: { notIn: ['first', 'x'] } }), ['EPSILON', 'GAMMA']);
      assert.deepEqual(await filtered({ id: { in: [byName('BETA').id, byName('ZETA').id] } }), ['BETA', 'ZETA']);
    });

    it('is and isNot null', async () => {
      assert.deepEqual(await filtered({ description: { is: null } }), ['BETA', 'DELTA']);
      assert.deepEqual(await filtered({ description: { isNot: null } }), ['ALPHA', 'EPSILON', 'GAMMA', 'ZETA']);
      assert.deepEqual(await filtered({ name: { is: null } }), []);
    });

    it('system columns: id, createdBy, updatedBy', async () => {
      assert.deepEqual(await filtered({ id: { eq: byName('GAMMA').id } }), ['GAMMA']);
      assert.deepEqual(await filtered({ createdBy: { eq: t.ownerId } }), ALL);
      assert.deepEqual(await filtered({ updatedBy: { neq: t.ownerId } }), []);
    });

    it('keys of one filter are ANDed; an empty filter selects everything', async () => {
      assert.deepEqual(await filtered({}), ALL);
      assert.deepEqual(await filtered({ name: { in: ['ALPHA', 'BETA', 'GAMMA'] }, description: { isNot: null } }), ['ALPHA', 'GAMMA']);
    });

    it('nested and/or arrays', async () => {
      assert.deepEqual(await filtered({ or: [{ name: { eq: 'ALPHA' } }, { name: { eq: 'ZETA' } }] }), ['ALPHA', 'ZETA']);
      assert.deepEqual(await filtered({ and: [{ value: { iLike: '%a%' } }, { description: { isNot: null } }] }), ['ALPHA', 'ZETA']);
      assert.deepEqual(
        await filtered({ or: [{ name: { eq: 'ALPHA' } }, { and: [{ value: { like: '%a%' } }, { description: { is: null } }] }] }),
        ['ALPHA', 'BETA', 'DELTA'],
      );
      assert.deepEqual(
        await filtered({ and: [{ or: [{ name: { eq: 'ALPHA' } }, { name: { eq: 'ZETA' } }] }, { value: { iLike: 'apple' } }] }),
        ['ALPHA'],
      );
      // A field beside `or` is ANDed with it.
      assert.deepEqual(
        await filtered({ description: { is: null }, or: [{ name: { eq: 'BETA' } }, { name: { eq: 'ZETA' } }] }),
        ['BETA'],
      );
      assert.deepEqual(
        await filtered({ or: [{ and: [{ or: [{ name: { eq: 'GAMMA' } }] }] }, { value: { eq: 'date' } }] }),
        ['DELTA', 'GAMMA'],
      );
    });

    it('a filter value is a value, never SQL', async () => {
      assert.deepEqual(await filtered({ value: { eq: "apple' OR '1'='1" } }), []);
      assert.deepEqual(await filtered({ value: { like: "%' OR 1=1 --" } }), []);
      assert.deepEqual(await filtered({ name: { in: ["ALPHA') OR ('1'='1"] } }), []);
    });

    it('boolean and JSON attributes (flows): eq, neq, is, isNot', async () => {
      const made = expectStatus(
        await t.post('/api/flows/create-many', [
          { name: 'B_ON', enabled: true, definition: await hook(t) },
          { name: 'B_OFF1', enabled: false },
          { name: 'B_OFF2' },
        ]),
        201,
      );
      assert.equal(made.data.length, 3);
      const flows = async (filter: unknown) =>
        namesOf(await t.get('/api/flows', { query: { filter: { and: [{ name: { like: 'B%' } }, filter] } } }));
      const onlyB = async (filter: unknown) =>
        (await flows(filter)).filter((n) => n.startsWith('B_'));
      assert.deepEqual(await onlyB({ enabled: { eq: true } }), ['B_ON']);
      assert.deepEqual(await onlyB({ enabled: { eq: false } }), ['B_OFF1', 'B_OFF2']);
      assert.deepEqual(await onlyB({ enabled: { neq: true } }), ['B_OFF1', 'B_OFF2']);
      assert.deepEqual(await onlyB({ enabled: { is: true } }), ['B_ON']);
      assert.deepEqual(await onlyB({ enabled: { isNot: true } }), ['B_OFF1', 'B_OFF2']);
      assert.deepEqual(await onlyB({ enabled: { is: false } }), ['B_OFF1', 'B_OFF2']);
      assert.deepEqual(await onlyB({ definition: { isNot: null } }), ['B_OFF1', 'B_OFF2', 'B_ON']);
      assert.deepEqual(await onlyB({ definition: { is: null } }), []);
    });
  });

  describe('paging', () => {
    const PAGED = 123;
    const pagedNames = Array.from({ length: PAGED }, (_, i) => `P${String(i + 1).padStart(3, '0')}`);
    const onlyPaged = { name: { like: 'P%' } };

    before(async () => {
      expectStatus(await t.post('/api/flows/create-many', pagedNames.map((name) => ({ name }))), 201);
    });

    const page = async (paging: unknown, extra: Record<string, unknown> = {}) =>
      expectStatus(await t.get('/api/flows', { query: { filter: onlyPaged, sorting: { name: 'asc' }, paging, ...extra } }), 200);

    it('defaults to limit 50, offset 0', async () => {
      const body = expectStatus(await t.get('/api/flows', { query: { filter: onlyPaged } }), 200);
      assert.equal(body.data.length, 50);
      assert.deepEqual(body.pagination, { limit: 50, count: 50, offset: 0, nextOffset: 50 });
      const offsetOnly = await page({ offset: 100 });
      assert.deepEqual(offsetOnly.pagination, { limit: 50, count: 23, offset: 100, nextOffset: null });
      assert.deepEqual(offsetOnly.data.map((i: Item) => i.name), pagedNames.slice(100));
    });

    it('answers {limit, count, offset, nextOffset} for each page', async () => {
      const first = await page({ limit: 10 });
      assert.deepEqual(first.pagination, { limit: 10, count: 10, offset: 0, nextOffset: 10 });
      assert.deepEqual(first.data.map((i: Item) => i.name), pagedNames.slice(0, 10));
      const middle = await page({ limit: 10, offset: 37 });
      assert.deepEqual(middle.pagination, { limit: 10, count: 10, offset: 37, nextOffset: 47 });
      assert.deepEqual(middle.data.map((i: Item) => i.name), pagedNames.slice(37, 47));
      const last = await page({ limit: 10, offset: 120 });
      assert.deepEqual(last.pagination, { limit: 10, count: 3, offset: 120, nextOffset: null });
    });

    it('nextOffset is null on a last page that is exactly full (no empty extra page)', async () => {
      const last = await page({ limit: 41, offset: 82 });
      assert.deepEqual(last.pagination, { limit: 41, count: 41, offset: 82, nextOffset: null });
      const all = await page({ limit: PAGED });
      assert.deepEqual(all.pagination, { limit: PAGED, count: PAGED, offset: 0, nextOffset: null });
    });

    it('an offset past the end answers an empty page', async () => {
      const body = await page({ limit: 5, offset: 500 });
      assert.deepEqual(body.data, []);
      assert.deepEqual(body.pagination, { limit: 5, count: 0, offset: 500, nextOffset: null });
      const far = await page({ limit: 1000, offset: Number.MAX_SAFE_INTEGER });
      assert.deepEqual(far.pagination, { limit: 1000, count: 0, offset: Number.MAX_SAFE_INTEGER, nextOffset: null });
    });

    it('limits 1 and 1000 are accepted', async () => {
      assert.deepEqual((await page({ limit: 1 })).pagination, { limit: 1, count: 1, offset: 0, nextOffset: 1 });
      assert.deepEqual((await page({ limit: 1000 })).pagination, { limit: 1000, count: PAGED, offset: 0, nextOffset: null });
    });

    for (const sorting of [{ name: 'asc' }, { name: 'desc' }, undefined, { enabled: 'asc' }]) {
      it(`walking every page returns every item exactly once (sorting ${JSON.stringify(sorting)})`, async () => {
        const seen: string[] = [];
        let offset: number | null = 0;
        let pages = 0;
        while (offset !== null) {
          const body = expectStatus(
            await t.get('/api/flows', { query: { filter: onlyPaged, sorting, paging: { limit: 7, offset } } }),
            200,
          );
          assert.equal(body.pagination.offset, offset);
          assert.equal(body.pagination.count, body.data.length);
          seen.push(...body.data.map((i: Item) => i.name as string));
          offset = body.pagination.nextOffset;
          pages += 1;
          assert.ok(pages < 100, 'the walk ends');
        }
        assert.equal(pages, Math.ceil(PAGED / 7));
        assert.equal(new Set(seen).size, seen.length, 'no item twice');
        assert.deepEqual([...seen].sort(), pagedNames);
        if (sorting?.name === 'asc') assert.deepEqual(seen, pagedNames);
        if (sorting?.name === 'desc') assert.deepEqual(seen, [...pagedNames].reverse());
      });
    }
  });

  describe('sorting', () => {
    const names = (body: { data: Item[] }) => body.data.map((i) => i.name);

    it('sorts by a field asc and desc', async () => {
      const asc = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { name: 'asc' } } }), 200);
      assert.deepEqual(names(asc), ALL);
      const desc = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { name: 'desc' } } }), 200);
      assert.deepEqual(names(desc), [...ALL].reverse());
    });

    it('sorts by createdAt and id', async () => {
      const desc = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { createdAt: 'desc' } } }), 200);
      assert.deepEqual(names(desc), VARS.map((v) => v.name).reverse());
      const asc = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { createdAt: 'asc' } } }), 200);
      assert.deepEqual(names(asc), VARS.map((v) => v.name));
      const byId = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { id: 'desc' } } }), 200);
      const ids = vars.map((v) => v.id).sort().reverse();
      assert.deepEqual(byId.data.map((i: Item) => i.id), ids);
    });

    it('key order is priority', async () => {
      const made = expectStatus(
        await t.post('/api/flows/create-many', [
          { name: 'S_B', enabled: false, description: 'B-off' },
          { name: 'S_A', enabled: true, description: 'A-on', definition: await hook(t) },
          { name: 'S_B', enabled: true, description: 'B-on', definition: await hook(t) },
          { name: 'S_A', enabled: false, description: 'A-off' },
        ]),
        201,
      );
      assert.equal(made.data.length, 4);
      const order = async (sorting: Record<string, string>) => {
        const body = expectStatus(await t.get('/api/flows', { query: { filter: { name: { like: 'S%' } }, sorting } }), 200);
        return (body.data as Item[]).filter((i) => (i.name as string).startsWith('S_')).map((i) => i.description);
      };
      assert.deepEqual(await order({ name: 'asc', enabled: 'desc' }), ['A-on', 'A-off', 'B-on', 'B-off']);
      assert.deepEqual(await order({ enabled: 'desc', name: 'asc' }), ['A-on', 'B-on', 'A-off', 'B-off']);
      assert.deepEqual(await order({ enabled: 'asc', name: 'desc' }), ['B-off', 'A-off', 'B-on', 'A-on']);
      assert.deepEqual(await order({ name: 'desc', enabled: 'asc' }), ['B-off', 'B-on', 'A-off', 'A-on']);
    });

    it('places null the same way on both databases: after every value ascending, before every value descending', async () => {
      const asc = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { description: 'asc', name: 'asc' } } }), 200);
      assert.deepEqual(names(asc), ['ALPHA', 'EPSILON', 'GAMMA', 'ZETA', 'BETA', 'DELTA']);
      const desc = expectStatus(await t.get('/api/environment-variables', { query: { sorting: { description: 'desc', name: 'asc' } } }), 200);
      assert.deepEqual(names(desc), ['BETA', 'DELTA', 'ZETA', 'GAMMA', 'EPSILON', 'ALPHA']);
    });
  });

  describe('relations', () => {
    let owner: Item;
    before(async () => {
      owner = expectStatus(await t.get(`/api/members/${t.ownerId}`), 200);
    });

    it('createdByMember and updatedByMember embed the member object, on lists and on one item', async () => {
      const body = expectStatus(
        await t.get('/api/environment-variables', { query: { relations: ['createdByMember', 'updatedByMember'] } }),
        200,
      );
      assert.equal(body.data.length, VARS.length);
      for (const item of body.data as Item[]) {
        assert.deepEqual(item.createdByMember, owner);
        assert.deepEqual(item.updatedByMember, owner);
      }
      const one = expectStatus(
        await t.get(`/api/environment-variables/${byName('ALPHA').id}`, { query: { relations: ['createdByMember'] } }),
        200,
      );
      assert.deepEqual(one.createdByMember, owner);
      assert.equal('updatedByMember' in one, false, 'only the relations asked for');
    });

    it('no relation is embedded unless asked for', async () => {
      const body = expectStatus(await t.get('/api/environment-variables'), 200);
      for (const item of body.data as Item[]) {
        assert.equal('createdByMember' in item, false);
        assert.equal('updatedByMember' in item, false);
      }
      const empty = expectStatus(await t.get('/api/environment-variables', { query: { relations: [] } }), 200);
      assert.equal('createdByMember' in (empty.data[0] as Item), false);
    });

    it('updatedByMember follows the last writer; member on api-keys embeds the key\'s member', async () => {
      const member = expectStatus(await t.post('/api/members', { name: 'Writer', email: 'writer@example.test' }), 201);
      const keyItem = expectStatus(await t.post('/api/api-keys', { name: 'writer key', memberId: member.id }), 201);
      const flow = expectStatus(await t.post('/api/flows', { name: 'R_flow' }), 201);
      expectStatus(await t.put(`/api/flows/${flow.id}`, { description: 'touched' }, { key: keyItem.key }), 200);
      const read = expectStatus(
        await t.get(`/api/flows/${flow.id}`, { query: { relations: ['createdByMember', 'updatedByMember'] } }),
        200,
      );
      const memberNow = expectStatus(await t.get(`/api/members/${member.id}`), 200);
      assert.deepEqual(read.createdByMember, owner);
      assert.deepEqual(read.updatedByMember, memberNow);

      const keys = expectStatus(
        await t.get('/api/api-keys', { query: { filter: { id: { eq: keyItem.id } }, relations: ['member', 'createdByMember'] } }),
        200,
      );
      assert.equal(keys.data.length, 1);
      assert.deepEqual(keys.data[0].member, memberNow);
      assert.deepEqual(keys.data[0].createdByMember, owner);
      assert.equal('key' in keys.data[0], false);
      const one = expectStatus(await t.get(`/api/api-keys/${keyItem.id}`, { query: { relations: ['member'] } }), 200);
      assert.deepEqual(one.member, memberNow);
    });

    it('a relation to a member that no longer exists is null', async () => {
      const member = expectStatus(await t.post('/api/members', { name: 'Leaver' }), 201);
      const keyItem = expectStatus(await t.post('/api/api-keys', { name: 'leaver key', memberId: member.id }), 201);
      const flow = expectStatus(await t.post('/api/flows', { name: 'R_orphan' }, { key: keyItem.key }), 201);
      expectStatus(await t.delete(`/api/api-keys/${keyItem.id}`), 200);
      expectStatus(await t.delete(`/api/members/${member.id}`), 200);
      const read = expectStatus(await t.get(`/api/flows/${flow.id}`, { query: { relations: ['createdByMember'] } }), 200);
      assert.equal(read.createdBy, member.id);
      assert.equal(read.createdByMember, null);
    });

    it('relations combine with filter, sorting and paging', async () => {
      const body = expectStatus(
        await t.get('/api/environment-variables', {
          query: { filter: { name: { in: ['BETA', 'GAMMA', 'ZETA'] } }, sorting: { name: 'desc' }, paging: { limit: 2, offset: 1 }, relations: ['createdByMember'] },
        }),
        200,
      );
      assert.deepEqual(body.data.map((i: Item) => i.name), ['GAMMA', 'BETA']);
      assert.deepEqual(body.pagination, { limit: 2, count: 2, offset: 1, nextOffset: null });
      for (const item of body.data as Item[]) assert.deepEqual(item.createdByMember, owner);
      assert.equal((await listAll(t, 'environment-variables')).length, VARS.length);
    });
  });

  describe('text order', () => {
    it('sorts and compares text in byte order on both databases, whatever the server locale', async () => {
      const names = ['zeta_B', 'zeta_a', 'zeta_Z', 'zeta_é', 'zeta_東'];
      const made = [];
      for (const name of names) {
        const r = await t.post('/api/flows', { name });
        assert.equal(r.status, 201, r.text);
        made.push(r.body.id);
      }
      const mine = { or: made.map((id) => ({ id: { eq: id } })) };
      const sorted = namesOf(await t.get('/api/flows', { query: { filter: mine, sorting: { name: 'asc' } } }));
      assert.deepEqual(sorted, ['zeta_B', 'zeta_Z', 'zeta_a', 'zeta_é', 'zeta_東']);
      const above = namesOf(await t.get('/api/flows', { query: { filter: { and: [mine, { name: { gt: 'zeta_Z' } }] }, sorting: { name: 'asc' } } }));
      assert.deepEqual(above, ['zeta_a', 'zeta_é', 'zeta_東']);
    });
  });
});
