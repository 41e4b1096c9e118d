// create-many, update-many and delete-many of the generic resources (CONTRACT §9): answers in
// request order, atomic (a failing item leaves nothing of the request: checked by reading back),
// at most 1000 items, a repeated id refused, errors naming the index.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { GENERATED_KEY, type Item, UUID, expectStatus, hook, listAll, sleep, unique, withoutSecret } from './resources-support.ts';

eachDatabase('resources: *-many', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  const allVars = () => listAll(t, 'environment-variables');
  const allFlows = () => listAll(t, 'flows');
  const byId = (items: Item[]) => new Map(items.map((i) => [i.id, i]));

  describe('create-many', () => {
    it('answers 201 {data} with every item in request order, each readable', async () => {
      const names = [unique('CM_A'), unique('CM_B'), unique('CM_C')];
      const body = expectStatus(
        await t.post('/api/environment-variables/create-many', names.map((name, i) => ({ name, value: String(i) }))),
        201,
      );
      assert.deepEqual(Object.keys(body), ['data']);
      assert.deepEqual(body.data.map((i: Item) => i.name), names);
      assert.deepEqual(body.data.map((i: Item) => i.value), ['0', '1', '2']);
      for (const item of body.data as Item[]) {
        assert.match(item.id, UUID);
        assert.equal(item.createdBy, t.ownerId);
        assert.equal(item.description, null);
        assert.deepEqual(expectStatus(await t.get(`/api/environment-variables/${item.id}`), 200), item);
      }
      assert.equal(new Set(body.data.map((i: Item) => i.id)).size, 3);
    });

    it('applies defaults to each item (flows)', async () => {
      const definition = await hook(t);
      const body = expectStatus(await t.post('/api/flows/create-many', [{ name: 'one' }, { name: 'two', enabled: true, definition }]), 201);
      assert.deepEqual(
        body.data.map((i: Item) => [i.name, i.enabled, i.definition]),
        [['one', false, {}], ['two', true, definition]],
      );
      assert.ok(body.data.every((i: Item) => typeof i.secret === 'string'), 'each flow answers its secret once');
    });

    it('answers each api key once, and each works', async () => {
      const body = expectStatus(await t.post('/api/api-keys/create-many', [{ name: 'k1' }, { name: 'k2' }]), 201);
      assert.equal(body.data.length, 2);
      for (const item of body.data as Item[]) {
        assert.match(item.key as string, GENERATED_KEY);
        expectStatus(await t.get('/api/flows', { key: item.key as string }), 200);
        assert.equal('key' in expectStatus(await t.get(`/api/api-keys/${item.id}`), 200), false);
      }
      assert.notEqual(body.data[0].key, body.data[1].key);
    });

    it('an empty array creates nothing: 201 {data: []}', async () => {
      const before = await allFlows();
      assert.deepEqual(expectStatus(await t.post('/api/flows/create-many', []), 201), { data: [] });
      assert.deepEqual(await allFlows(), before);
    });

    it('is atomic: a unique conflict at a later index (409 naming it) leaves nothing', async () => {
      const existing = expectStatus(await t.post('/api/environment-variables', { name: unique('TAKEN'), value: 'x' }), 201);
      const before = await allVars();
      const fresh = [unique('NEW_A'), unique('NEW_B')];
      const body = expectError(
        await t.post('/api/environment-variables/create-many', [
          { name: fresh[0], value: '1' },
          { name: fresh[1], value: '2' },
          { name: existing.name, value: '3' },
        ]),
        409,
      );
      assert.match(body.message as string, /\[2\]/);
      assert.deepEqual(await allVars(), before);
    });

    it('is atomic: a repeated unique value inside the request (409 naming the later index) leaves nothing', async () => {
      const before = await allVars();
      const name = unique('TWICE');
      const body = expectError(
        await t.post('/api/environment-variables/create-many', [{ name: unique('OK'), value: '0' }, { name, value: '1' }, { name, value: '2' }]),
        409,
      );
      assert.match(body.message as string, /\[2\]/);
      assert.deepEqual(await allVars(), before);
    });

    it('is atomic: an invalid item (400 naming its index and property) leaves nothing, and every problem is named', async () => {
      const before = await allFlows();
      const reply = await t.post('/api/flows/create-many', [{ name: 'fine' }, { name: 'fine too' }, { name: 5 }, { enabled: 'yes', name: 'x' }]);
      const body = expectError(reply, 400);
      assert.match(body.message as string, /\[2\]\.name/);
      assert.match(body.message as string, /\[3\]\.enabled/);
      const paths = (body.details as Array<{ path: string }>).map((d) => d.path);
      assert.ok(paths.includes('[2].name'), JSON.stringify(paths));
      assert.ok(paths.includes('[3].enabled'), JSON.stringify(paths));
      assert.deepEqual(await allFlows(), before);
    });

    it('is atomic across a hook failure: an api key for an unknown member at a later index leaves nothing', async () => {
      const before = await listAll(t, 'api-keys');
      const body = expectError(
        await t.post('/api/api-keys/create-many', [{ name: 'a' }, { name: 'b', memberId: '00000000-0000-4000-8000-000000000000' }]),
        400,
      );
      assert.match(body.message as string, /\[1\]/);
      assert.deepEqual(await listAll(t, 'api-keys'), before);
    });

    it('takes 1000 items; 1001 is a 400 that creates nothing', async () => {
      const before = (await allFlows()).length;
      const tooMany = Array.from({ length: 1001 }, (_, i) => ({ name: `many ${i}` }));
      const body = expectError(await t.post('/api/flows/create-many', tooMany), 400);
      assert.match(body.message as string, /1000/);
      assert.equal((await allFlows()).length, before);
      const created = expectStatus(await t.post('/api/flows/create-many', tooMany.slice(0, 1000)), 201);
      assert.equal(created.data.length, 1000);
      assert.deepEqual(created.data.map((i: Item) => i.name), tooMany.slice(0, 1000).map((i) => i.name));
      assert.equal((await allFlows()).length, before + 1000);
    });
  });

  describe('update-many', () => {
    let a: Item;
    let b: Item;
    let c: Item;
    before(async () => {
      const body = expectStatus(
        await t.post('/api/environment-variables/create-many', [
          { name: unique('UM_A'), value: 'a', description: 'da' },
          { name: unique('UM_B'), value: 'b', description: 'db' },
          { name: unique('UM_C'), value: 'c', description: 'dc' },
        ]),
        201,
      );
      [a, b, c] = body.data;
    });

    it('answers 200 {data} in request order; each update is partial; updatedAt moves', async () => {
      await sleep(5);
      const body = expectStatus(
        await t.put('/api/environment-variables/update-many', [
          { id: c.id, value: 'c2' },
          { id: a.id, description: null },
        ]),
        200,
      );
      assert.deepEqual(Object.keys(body), ['data']);
      assert.deepEqual(body.data.map((i: Item) => i.id), [c.id, a.id]);
      const [c2, a2] = body.data as Item[];
      assert.deepEqual({ name: c2.name, value: c2.value, description: c2.description }, { name: c.name, value: 'c2', description: 'dc' });
      assert.deepEqual({ name: a2.name, value: a2.value, description: a2.description }, { name: a.name, value: 'a', description: null });
      for (const [after, before] of [[c2, c], [a2, a]]) {
        assert.equal(after.createdAt, before.createdAt);
        assert.equal(after.createdBy, before.createdBy);
        assert.ok((after.updatedAt as string) > (before.updatedAt as string));
        assert.deepEqual(expectStatus(await t.get(`/api/environment-variables/${after.id}`), 200), after);
      }
      assert.deepEqual(expectStatus(await t.get(`/api/environment-variables/${b.id}`), 200), b);
      a = a2;
      c = c2;
    });

    it('is atomic: an unknown id at a later index (404 naming it) leaves the earlier items unchanged', async () => {
      const before = await allVars();
      const body = expectError(
        await t.put('/api/environment-variables/update-many', [
          { id: a.id, value: 'changed' },
          { id: '00000000-0000-4000-8000-000000000000', value: 'x' },
        ]),
        404,
      );
      assert.match(body.message as string, /\[1\]/);
      assert.deepEqual(await allVars(), before);
    });

    it('is atomic: a unique conflict at a later index (409) leaves the earlier items unchanged', async () => {
      const before = await allVars();
      const body = expectError(
        await t.put('/api/environment-variables/update-many', [
          { id: a.id, value: 'changed' },
          { id: b.id, value: 'changed too' },
          { id: c.id, name: a.name },
        ]),
        409,
      );
      assert.match(body.message as string, /\[2\]/);
      assert.deepEqual(await allVars(), before);
    });

    it('a later item may take a unique name that an earlier item of the same request gave up', async () => {
      const freed = unique('UM_FREED');
      const body = expectStatus(
        await t.put('/api/environment-variables/update-many', [
          { id: a.id, name: freed },
          { id: b.id, name: a.name },
        ]),
        200,
      );
      assert.deepEqual(body.data.map((i: Item) => i.name), [freed, a.name]);
      a = body.data[0];
      b = body.data[1];
    });

    it('refuses a repeated id (400 naming the index), changing nothing', async () => {
      const before = await allVars();
      const body = expectError(
        await t.put('/api/environment-variables/update-many', [{ id: a.id, value: '1' }, { id: b.id, value: '2' }, { id: a.id, value: '3' }]),
        400,
      );
      assert.match(body.message as string, /\[2\]/);
      assert.deepEqual(await allVars(), before);
    });

    it('refuses items without a string id, or invalid items, naming the index; nothing changes', async () => {
      const before = await allVars();
      for (const [items, index] of [
        [[{ id: a.id, value: 'x' }, { value: 'no id' }], 1],
        [[{ id: a.id, value: 'x' }, { id: 5, value: 'x' }], 1],
        [[{ id: a.id, value: 'x' }, 'not an object'], 1],
        [[{ id: a.id, value: 'x' }, { id: b.id, value: 'x' }, { id: c.id, value: 7 }], 2],
        [[{ id: a.id, value: 'x' }, { id: b.id, name: 'bad-name' }], 1],
        [[{ id: a.id, value: 'x' }, { id: b.id, createdAt: new Date().toISOString() }], 1],
      ] as const) {
        const body = expectError(await t.put('/api/environment-variables/update-many', items), 400);
        assert.match(body.message as string, new RegExp(`\\[${index}\\]`), body.message as string);
      }
      assert.deepEqual(await allVars(), before);
    });

    it('an empty array changes nothing: 200 {data: []}', async () => {
      const before = await allVars();
      assert.deepEqual(expectStatus(await t.put('/api/environment-variables/update-many', []), 200), { data: [] });
      assert.deepEqual(await allVars(), before);
    });

    it('takes 1000 items; 1001 is a 400 that changes nothing', async () => {
      const created = expectStatus(
        await t.post('/api/flows/create-many', Array.from({ length: 1001 }, (_, i) => ({ name: `um ${i}` })).slice(0, 1000)),
        201,
      );
      const ids = (created.data as Item[]).map((i) => i.id);
      const extra = expectStatus(await t.post('/api/flows', { name: 'um extra' }), 201);
      const before = byId(await allFlows());
      const tooMany = [...ids, extra.id].map((id) => ({ id, description: 'changed' }));
      expectError(await t.put('/api/flows/update-many', tooMany), 400);
      const unchanged = byId(await allFlows());
      for (const id of [...ids, extra.id]) assert.deepEqual(unchanged.get(id), before.get(id));
      const body = expectStatus(await t.put('/api/flows/update-many', tooMany.slice(0, 1000)), 200);
      assert.equal(body.data.length, 1000);
      assert.ok((body.data as Item[]).every((i) => i.description === 'changed'));
      assert.equal(expectStatus(await t.get(`/api/flows/${extra.id}`), 200).description, null);
    });
  });

  describe('concurrency', () => {
    it('update-many requests over the same items in opposite orders all succeed (no deadlock reaches a client)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await t.post('/api/flows', { name: `dl${i}` });
        assert.equal(r.status, 201, r.text);
        ids.push(r.body.id);
      }
      for (let round = 0; round < 6; round++) {
        const forward = ids.map((id) => ({ id, name: `a${round}` }));
        const backward = [...ids].reverse().map((id) => ({ id, name: `b${round}` }));
        const replies = await Promise.all([t.put('/api/flows/update-many', forward), t.put('/api/flows/update-many', backward)]);
        for (const r of replies) assert.equal(r.status, 200, r.text);
        // One request won last, whole: every item carries the same round's name.
        const names = new Set<string>();
        for (const id of ids) names.add((await t.get(`/api/flows/${id}`)).body.name);
        assert.equal(names.size, 1, [...names].join(', '));
      }
    });
  });

  describe('delete-many', () => {
    it('answers 200 {data} with the deleted items in request order; they are gone', async () => {
      const created = expectStatus(await t.post('/api/flows/create-many', [{ name: 'dm1' }, { name: 'dm2' }, { name: 'dm3' }]), 201);
      const [x, y, z] = (created.data as Item[]).map(withoutSecret);
      const body = expectStatus(await t.delete('/api/flows/delete-many', [z.id, x.id]), 200);
      assert.deepEqual(body, { data: [z, x] });
      expectError(await t.get(`/api/flows/${x.id}`), 404);
      expectError(await t.get(`/api/flows/${z.id}`), 404);
      assert.deepEqual(expectStatus(await t.get(`/api/flows/${y.id}`), 200), y);
    });

    it('is atomic: an unknown id at a later index (404 naming it) deletes nothing', async () => {
      const created = expectStatus(await t.post('/api/flows/create-many', [{ name: 'dm4' }, { name: 'dm5' }]), 201);
      const before = await allFlows();
      const body = expectError(
        await t.delete('/api/flows/delete-many', [created.data[0].id, created.data[1].id, '00000000-0000-4000-8000-000000000000']),
        404,
      );
      assert.match(body.message as string, /\[2\]/);
      assert.deepEqual(await allFlows(), before);
    });

    it('is atomic: a member that cannot be deleted at a later index (409) leaves the earlier ones', async () => {
      const m1 = expectStatus(await t.post('/api/members', { name: 'deletable' }), 201);
      const m2 = expectStatus(await t.post('/api/members', { name: 'has key' }), 201);
      expectStatus(await t.post('/api/api-keys', { name: 'k', memberId: m2.id }), 201);
      const before = await listAll(t, 'members');
      let body = expectError(await t.delete('/api/members/delete-many', [m1.id, m2.id]), 409);
      assert.match(body.message as string, /\[1\]/);
      body = expectError(await t.delete('/api/members/delete-many', [m1.id, t.ownerId]), 409);
      assert.match(body.message as string, /\[1\]/);
      assert.deepEqual(await listAll(t, 'members'), before);
    });

    it('refuses a repeated id (400 naming the index), deleting nothing', async () => {
      const created = expectStatus(await t.post('/api/flows/create-many', [{ name: 'dm6' }, { name: 'dm7' }]), 201);
      const before = await allFlows();
      const [p, q] = (created.data as Item[]).map((i) => i.id);
      const body = expectError(await t.delete('/api/flows/delete-many', [p, q, p]), 400);
      assert.match(body.message as string, /\[2\]/);
      assert.deepEqual(await allFlows(), before);
    });

    it('refuses items that are not id strings, naming the index; nothing is deleted', async () => {
      const created = expectStatus(await t.post('/api/flows', { name: 'dm8' }), 201);
      const before = await allFlows();
      for (const [ids, index] of [
        [[created.id, 5], 1],
        [[created.id, { id: created.id }], 1],
        [[created.id, created.id.toUpperCase(), ''], 2],
        [[created.id, null], 1],
      ] as const) {
        const body = expectError(await t.delete('/api/flows/delete-many', ids), 400);
        assert.match(body.message as string, new RegExp(`\\[${index}\\]`), body.message as string);
      }
      assert.deepEqual(await allFlows(), before);
    });

    it('an empty array deletes nothing: 200 {data: []}', async () => {
      const before = await allFlows();
      assert.deepEqual(expectStatus(await t.delete('/api/flows/delete-many', []), 200), { data: [] });
      assert.deepEqual(await allFlows(), before);
    });

    it('takes 1000 ids; 1001 is a 400 that deletes nothing', async () => {
      const made = expectStatus(await t.post('/api/flows/create-many', Array.from({ length: 1000 }, (_, i) => ({ name: `dmx ${i}` }))), 201);
      const extra = expectStatus(await t.post('/api/flows', { name: 'dmx extra' }), 201);
      const ids = [...(made.data as Item[]).map((i) => i.id), extra.id];
      const before = (await allFlows()).length;
      expectError(await t.delete('/api/flows/delete-many', ids), 400);
      assert.equal((await allFlows()).length, before);
      const body = expectStatus(await t.delete('/api/flows/delete-many', ids.slice(0, 1000)), 200);
      assert.equal(body.data.length, 1000);
      assert.equal((await allFlows()).length, before - 1000);
      expectStatus(await t.get(`/api/flows/${extra.id}`), 200);
    });

    it('deleting api keys with delete-many makes them 401', async () => {
      const made = expectStatus(await t.post('/api/api-keys/create-many', [{ name: 'd1' }, { name: 'd2' }]), 201);
      for (const k of made.data as Item[]) expectStatus(await t.get('/api/flows', { key: k.key as string }), 200);
      const body = expectStatus(await t.delete('/api/api-keys/delete-many', (made.data as Item[]).map((k) => k.id)), 200);
      assert.ok((body.data as Item[]).every((k) => !('key' in k) && !('keyHash' in k)));
      for (const k of made.data as Item[]) expectError(await t.get('/api/flows', { key: k.key as string }), 401);
    });
  });

  describe('body shape', () => {
    it('*-many refuses an object body (400) and single routes refuse an array (400); nothing changes', async () => {
      const before = await allFlows();
      for (const [method, url, body] of [
        ['POST', '/api/flows/create-many', { name: 'x' }],
        ['POST', '/api/flows/create-many', { data: [{ name: 'x' }] }],
        ['PUT', '/api/flows/update-many', { id: 'x', name: 'x' }],
        ['DELETE', '/api/flows/delete-many', { ids: ['x'] }],
        ['DELETE', '/api/flows/delete-many', 'x'],
        ['POST', '/api/flows', [{ name: 'x' }]],
        ['POST', '/api/flows/create-many', null],
      ] as const) {
        const err = expectError(await t.request(method, url, { body }), 400);
        assert.match(err.message as string, /array|object/, `${method} ${url}`);
      }
      const flow = before[0];
      expectError(await t.put(`/api/flows/${flow.id}`, [{ name: 'x' }]), 400);
      assert.deepEqual(await allFlows(), before);
    });
  });
});
