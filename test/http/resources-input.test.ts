// Bad input to the generic resources (CONTRACT §3, §9): each is a 4xx in the one error format whose
// message names what is wrong, and the data is left as it was (read back). SQL-looking strings are
// stored and returned literally.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { type Item, expectStatus, listAll } from './resources-support.ts';

type Query = Record<string, unknown>;

eachDatabase('resources: bad input', (kind) => {
  let t: TestApp;
  let flow: Item;
  let envVar: Item;
  before(async () => {
    t = await startApp(kind);
    // A draft: enabling a flow needs a complete definition (CONTRACT §9, flows).
    const { secret: _secret, ...made } = expectStatus(await t.post('/api/flows', { name: 'Keep', description: 'kept', enabled: false, definition: {} }), 201);
    flow = made as Item;
    envVar = expectStatus(await t.post('/api/environment-variables', { name: 'KEEP', value: 'kept' }), 201);
  });
  after(() => t.close());

  /** Everything the tests could have changed, to compare before and after. */
  const snapshot = async () => ({
    flows: await listAll(t, 'flows'),
    vars: await listAll(t, 'environment-variables'),
    members: await listAll(t, 'members'),
    keys: await listAll(t, 'api-keys'),
  });

  /** A 400 whose message names the thing at fault (a regexp, or the literal text). */
  function expect400(reply: Awaited<ReturnType<TestApp['get']>>, names: RegExp | string, what: string): Record<string, unknown> {
    let body: Record<string, unknown>;
    try {
      body = expectError(reply, 400);
    } catch (err) {
      throw new Error(`${what}: ${(err as Error).message}`);
    }
    const message = body.message as string;
    const ok = typeof names === 'string' ? message.includes(names) : names.test(message);
    assert.ok(ok, `${what}: message ${JSON.stringify(message)} should name ${names}`);
    return body;
  }

  describe('list query', () => {
    const cases: Array<[string, Query, RegExp | string]> = [
      // Broken JSON in each parameter.
      ['paging', { paging: '{"limit": 5' }, 'paging'],
      ['filter', { filter: '{"name":' }, 'filter'],
      ['sorting', { sorting: '{name: asc}' }, 'sorting'],
      ['relations', { relations: 'createdByMember' }, 'relations'],
      ['paging empty', { paging: '' }, 'paging'],
      // Paging values.
      ['limit 0', { paging: { limit: 0 } }, 'paging.limit'],
      ['limit 1001', { paging: { limit: 1001 } }, 'paging.limit'],
      ['limit "abc"', { paging: { limit: 'abc' } }, 'paging.limit'],
      ['limit "10"', { paging: { limit: '10' } }, 'paging.limit'],
      ['limit 1.5', { paging: { limit: 1.5 } }, 'paging.limit'],
      ['limit -1', { paging: { limit: -1 } }, 'paging.limit'],
      ['limit null', { paging: { limit: null } }, 'paging.limit'],
      ['offset -1', { paging: { offset: -1 } }, 'paging.offset'],
      ['offset "a"', { paging: { offset: 'a' } }, 'paging.offset'],
      ['offset 2.5', { paging: { offset: 2.5 } }, 'paging.offset'],
      ['offset 1e300', { paging: { offset: 1e300 } }, 'paging.offset'],
      ['paging key', { paging: { page: 2 } }, 'paging.page'],
      ['paging array', { paging: [10, 0] }, 'paging'],
      ['paging number', { paging: 10 }, 'paging'],
      // Filter shape, fields and operators.
      ['unknown field', { filter: { colour: { eq: 'x' } } }, 'filter.colour'],
      ['hidden field', { filter: { keyHash: { eq: 'x' } } }, 'filter.keyHash'],
      ['unknown operator', { filter: { name: { equals: 'x' } } }, 'filter.name.equals'],
      ['underscore operator', { filter: { name: { _eq: 'x' } } }, 'filter.name._eq'],
      ['empty condition', { filter: { name: {} } }, 'filter.name'],
      ['bare value', { filter: { name: 'x' } }, 'filter.name'],
      ['filter array', { filter: [{ name: { eq: 'x' } }] }, 'filter'],
      ['filter null', { filter: 'null' }, 'filter'],
      ['and object', { filter: { and: { name: { eq: 'x' } } } }, 'filter.and'],
      ['or empty', { filter: { or: [] } }, 'filter.or'],
      ['nested unknown field', { filter: { or: [{ name: { eq: 'x' } }, { and: [{ nope: { eq: 1 } }] }] } }, 'filter.or[1].and[0].nope'],
      ['nested non-object', { filter: { and: ['name'] } }, 'filter.and[0]'],
      // Comparison values.
      ['eq number', { filter: { name: { eq: 5 } } }, 'filter.name.eq'],
      ['eq null', { filter: { name: { eq: null } } }, 'filter.name.eq'],
      ['eq object', { filter: { name: { eq: { a: 1 } } } }, 'filter.name.eq'],
      ['like number', { filter: { name: { like: 5 } } }, 'filter.name.like'],
      ['like lone backslash', { filter: { name: { like: 'abc\\' } } }, 'filter.name.like'],
      ['iLike lone backslash', { filter: { name: { iLike: '\\' } } }, 'filter.name.iLike'],
      ['in string', { filter: { name: { in: 'x' } } }, 'filter.name.in'],
      ['in empty', { filter: { name: { in: [] } } }, 'filter.name.in'],
      ['in mixed', { filter: { name: { in: ['a', 5] } } }, 'filter.name.in[1]'],
      ['notIn null', { filter: { name: { notIn: null } } }, 'filter.name.notIn'],
      ['is string', { filter: { name: { is: 'x' } } }, 'filter.name.is'],
      ['isNot true on text', { filter: { name: { isNot: true } } }, 'filter.name.isNot'],
      ['timestamp not a date', { filter: { createdAt: { gt: 'yesterday' } } }, 'filter.createdAt.gt'],
      ['timestamp without offset', { filter: { createdAt: { gt: '2020-01-01T00:00:00' } } }, 'filter.createdAt.gt'],
      ['like on a timestamp', { filter: { createdAt: { like: '2020%' } } }, 'filter.createdAt.like'],
      // Sorting.
      ['sort unknown field', { sorting: { colour: 'asc' } }, 'sorting.colour'],
      ['sort direction', { sorting: { name: 'up' } }, 'sorting.name'],
      ['sort direction case', { sorting: { name: 'ASC' } }, 'sorting.name'],
      ['sort array', { sorting: [{ name: 'asc' }] }, 'sorting'],
      ['sort string', { sorting: '"name"' }, 'sorting'],
      // Relations.
      ['unknown relation', { relations: ['owner'] }, 'owner'],
      ['member on env vars', { relations: ['member'] }, 'member'],
      ['relation not a string', { relations: [5] }, 'relations[0]'],
      ['relations object', { relations: { createdByMember: true } }, 'relations'],
      ['relations string', { relations: '"createdByMember"' }, 'relations'],
      // Unknown parameters.
      ['unknown parameter', { colour: 'red' }, 'colour'],
      ['limit as a parameter', { limit: '10' }, 'limit'],
      ['sort instead of sorting', { sort: { name: 'asc' } }, 'sort'],
    ];
    for (const [what, query, names] of cases) {
      it(`${what} → 400 naming ${names}`, async () => {
        expect400(await t.get('/api/environment-variables', { query }), names, what);
      });
    }

    it('keys that are names of Object.prototype are unknown fields, not a 500', async () => {
      for (const key of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) {
        const raw = (json: string) => t.get(`/api/environment-variables?${json}`);
        expect400(await raw(`filter=${encodeURIComponent(`{"${key}": {"eq": "x"}}`)}`), key, `filter.${key}`);
        expect400(await raw(`sorting=${encodeURIComponent(`{"${key}": "asc"}`)}`), key, `sorting.${key}`);
        expect400(await raw(`relations=${encodeURIComponent(`["${key}"]`)}`), key, `relations ${key}`);
        expect400(await raw(`filter=${encodeURIComponent(`{"name": {"${key}": "x"}}`)}`), key, `operator ${key}`);
        expect400(await raw(`paging=${encodeURIComponent(`{"${key}": 1}`)}`), key, `paging.${key}`);
      }
    });

    it('type-specific operators and values (flows): boolean and JSON attributes', async () => {
      const flowCases: Array<[string, Query, string]> = [
        ['boolean eq string', { filter: { enabled: { eq: 'true' } } }, 'filter.enabled.eq'],
        ['boolean eq null', { filter: { enabled: { eq: null } } }, 'filter.enabled.eq'],
        ['boolean gt', { filter: { enabled: { gt: false } } }, 'filter.enabled.gt'],
        ['boolean like', { filter: { enabled: { like: 't%' } } }, 'filter.enabled.like'],
        ['boolean is string', { filter: { enabled: { is: 'true' } } }, 'filter.enabled.is'],
        ['json eq', { filter: { definition: { eq: { k: 1 } } } }, 'filter.definition.eq'],
        ['json like', { filter: { definition: { like: '%k%' } } }, 'filter.definition.like'],
        ['sort by json', { sorting: { definition: 'asc' } }, 'sorting.definition'],
        ['member relation on flows', { relations: ['member'] }, 'member'],
      ];
      for (const [what, query, names] of flowCases) expect400(await t.get('/api/flows', { query }), names, what);
    });

    it('a parameter given twice is refused', async () => {
      expect400(await t.get('/api/flows?paging=%7B%7D&paging=%7B%7D'), 'paging', 'paging twice');
      expect400(await t.get('/api/flows?filter=%7B%7D&filter=%7B%7D'), 'filter', 'filter twice');
    });

    it('reports every problem of the request at once', async () => {
      const body = expect400(
        await t.get('/api/environment-variables', {
          query: { paging: { limit: 0, offset: -1 }, filter: { colour: { eq: 1 } }, sorting: { name: 'up' }, relations: ['nope'], extra: '1' },
        }),
        'paging.limit',
        'many problems',
      );
      const paths = (body.details as Array<{ path: string }>).map((d) => d.path).sort();
      assert.deepEqual(paths, ['extra', 'filter.colour', 'paging.limit', 'paging.offset', 'relations[0]', 'sorting.name']);
    });

    it('get-one takes only relations: other or bad parameters are 400', async () => {
      const url = `/api/flows/${flow.id}`;
      expect400(await t.get(url, { query: { colour: 'red' } }), 'colour', 'unknown');
      expect400(await t.get(url, { query: { paging: { limit: 1 } } }), 'relations', 'paging on one item');
      expect400(await t.get(url, { query: { filter: { name: { eq: 'x' } } } }), 'relations', 'filter on one item');
      expect400(await t.get(url, { query: { relations: ['nope'] } }), 'nope', 'unknown relation');
      expect400(await t.get(url, { query: { relations: '[' } }), 'relations', 'broken relations');
    });

    it('a filter too large is one 400, however large (issue 17: an or of 5,000 answered 500 on SQLite)', async () => {
      const url = '/api/environment-variables';
      for (const filter of [{ or: Array(5000).fill({ name: { eq: 'x' } }) }, { and: Array(100_000).fill({}) }]) {
        const body = expect400(await t.get(url, { query: { filter } }), 'more than 500 parts', 'a large filter');
        assert.equal((body.details as unknown[]).length, 1, 'one problem, not one per part');
      }
      // Unknown operators and fields are parts too: their problems stop at the limit.
      for (const filter of [{ name: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`op${i}`, 'x'])) }, { or: Array(5000).fill({ nope: { eq: 1 } }) }]) {
        const body = expect400(await t.get(url, { query: { filter } }), 'more than 500 parts', 'a large filter');
        assert.ok((body.details as unknown[]).length <= 501, `${(body.details as unknown[]).length} problems`);
      }
      const lists = (n: number) => ({ or: Array(n).fill({ name: { in: Array(1000).fill('x') } }) });
      expect400(await t.get(url, { query: { filter: lists(11) } }), 'more than 10000 values', 'in lists');
      expectStatus(await t.get(url, { query: { filter: lists(10) } }), 200);
      expectStatus(await t.get(url, { query: { filter: { or: Array(165).fill({ name: { eq: 'x' } }) } } }), 200);
    });

    it('values nested deeper than the stack goes are a 400, not a 500 (issue 17)', async () => {
      const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
      const raw = (query: string) => t.get(`/api/environment-variables?${query}`);
      expect400(await raw(`relations=${encodeURIComponent(deep(100_000))}`), 'relations[0]', 'relations');
      expect400(await t.get(`/api/flows/${flow.id}?relations=${encodeURIComponent(`[${deep(100_000)}]`)}`), 'relations[0]', 'relations of one');
      expect400(await raw(`filter=${encodeURIComponent(`{"name":{"eq":${deep(100_000)}}}`)}`), 'filter.name.eq', 'filter value');
    });

    it('a bad filter never reaches the data: the item is still there, unchanged', async () => {
      assert.deepEqual(expectStatus(await t.get(`/api/flows/${flow.id}`), 200), flow);
      assert.deepEqual(expectStatus(await t.get(`/api/environment-variables/${envVar.id}`), 200), envVar);
    });
  });

  describe('bodies', () => {
    it('create refuses unknown properties, wrong types, missing or read-only properties, naming each; nothing is stored', async () => {
      const before = await snapshot();
      const cases: Array<[string, string, unknown, RegExp | string]> = [
        ['flows', 'unknown property', { name: 'x', colour: 'red' }, 'colour'],
        ['flows', 'name number', { name: 5 }, 'name'],
        ['flows', 'name empty', { name: '' }, 'name'],
        ['flows', 'name null', { name: null }, 'name'],
        ['flows', 'name missing', { description: 'x' }, 'name'],
        ['flows', 'enabled string', { name: 'x', enabled: 'yes' }, 'enabled'],
        ['flows', 'enabled number', { name: 'x', enabled: 1 }, 'enabled'],
        ['flows', 'enabled null', { name: 'x', enabled: null }, 'enabled'],
        ['flows', 'definition array', { name: 'x', definition: [1, 2] }, 'definition'],
        ['flows', 'definition string', { name: 'x', definition: '{}' }, 'definition'],
        ['flows', 'definition null', { name: 'x', definition: null }, 'definition'],
        ['flows', 'description number', { name: 'x', description: 5 }, 'description'],
        ['flows', 'id', { name: 'x', id: '00000000-0000-4000-8000-000000000001' }, 'id'],
        ['flows', 'createdAt', { name: 'x', createdAt: '2020-01-01T00:00:00Z' }, 'createdAt'],
        ['flows', 'updatedAt', { name: 'x', updatedAt: '2020-01-01T00:00:00Z' }, 'updatedAt'],
        ['flows', 'createdBy', { name: 'x', createdBy: '00000000-0000-4000-8000-000000000001' }, 'createdBy'],
        ['flows', 'updatedBy', { name: 'x', updatedBy: '00000000-0000-4000-8000-000000000001' }, 'updatedBy'],
        ['flows', 'relation as property', { name: 'x', createdByMember: {} }, 'createdByMember'],
        ['environment-variables', 'value number', { name: 'N', value: 5 }, 'value'],
        ['environment-variables', 'value null', { name: 'N', value: null }, 'value'],
        ['environment-variables', 'value missing', { name: 'N' }, 'value'],
        ['members', 'email number', { name: 'm', email: 5 }, 'email'],
        ['members', 'name missing', { email: 'm@example.test' }, 'name'],
        ['api-keys', 'name missing', {}, 'name'],
        ['api-keys', 'memberId number', { name: 'k', memberId: 5 }, 'memberId'],
      ];
      for (const [resource, what, body, names] of cases) {
        expect400(await t.post(`/api/${resource}`, body), names, `${resource}: ${what}`);
      }
      assert.deepEqual(await snapshot(), before);
    });

    it('create reports every problem of the body at once', async () => {
      const body = expect400(await t.post('/api/flows', { colour: 'red', enabled: 'yes', definition: [] }), 'colour', 'many');
      const paths = (body.details as Array<{ path: string }>).map((d) => d.path).sort();
      for (const p of ['colour', 'definition', 'enabled', 'name']) assert.ok(paths.includes(p), `${p} in ${JSON.stringify(paths)}`);
    });

    it('update refuses the same, naming each, and leaves the item unchanged', async () => {
      const before = await snapshot();
      const other = '00000000-0000-4000-8000-000000000001';
      const cases: Array<[string, unknown, RegExp | string]> = [
        ['unknown property', { colour: 'red' }, 'colour'],
        ['name null', { name: null }, 'name'],
        ['name number', { name: 5 }, 'name'],
        ['enabled string', { enabled: 'no' }, 'enabled'],
        ['definition array', { definition: [1] }, 'definition'],
        ['definition null', { definition: null }, 'definition'],
        ['createdAt', { createdAt: '2020-01-01T00:00:00Z' }, 'createdAt'],
        ['updatedAt', { updatedAt: '2020-01-01T00:00:00Z' }, 'updatedAt'],
        ['createdBy', { createdBy: other }, 'createdBy'],
        ['updatedBy', { updatedBy: other }, 'updatedBy'],
        ['another id', { id: other, name: 'x' }, 'id'],
        ['id number', { id: 5 }, 'id'],
      ];
      for (const [what, body, names] of cases) {
        expect400(await t.put(`/api/flows/${flow.id}`, body), names, what);
      }
      expect400(await t.put(`/api/environment-variables/${envVar.id}`, { value: null }), 'value', 'env value null');
      expect400(await t.put(`/api/environment-variables/${envVar.id}`, { name: '9LIVES' }), 'name', 'env name pattern');
      assert.deepEqual(await snapshot(), before);
    });

    it('a body that is not a JSON object where one is expected is a 400; nothing is stored', async () => {
      const before = await snapshot();
      for (const body of [[{ name: 'x' }], 'name', 5, null, true]) {
        expect400(await t.post('/api/flows', body), /object/, `create with ${JSON.stringify(body)}`);
        expect400(await t.put(`/api/flows/${flow.id}`, body), /object/, `update with ${JSON.stringify(body)}`);
      }
      assert.deepEqual(await snapshot(), before);
    });

    it('broken JSON, an empty JSON body and no body are 400; a body that is not JSON is 415; nothing is stored', async () => {
      const before = await snapshot();
      const json = { 'content-type': 'application/json' };
      for (const [method, url] of [
        ['POST', '/api/flows'], ['PUT', `/api/flows/${flow.id}`], ['POST', '/api/flows/create-many'],
        ['PUT', '/api/flows/update-many'], ['DELETE', '/api/flows/delete-many'],
      ] as const) {
        expectError(await t.request(method, url, { raw: '{"name": "x"', headers: json }), 400);
        expectError(await t.request(method, url, { raw: '[{"name": "x"},]', headers: json }), 400);
        expectError(await t.request(method, url, { raw: '', headers: json }), 400);
        expectError(await t.request(method, url, { raw: 'name=x', headers: { 'content-type': 'text/plain' } }), 415);
        expectError(await t.request(method, url, { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415);
      }
      expectError(await t.request('POST', '/api/flows'), 400);
      assert.deepEqual(await snapshot(), before);
    });

    it('write routes take no query parameters: an unknown one is a 400 naming it, and nothing is stored', async () => {
      const before = await snapshot();
      const query = { colour: 'red' };
      expect400(await t.post('/api/flows', { name: 'q' }, { query }), 'colour', 'create');
      expect400(await t.put(`/api/flows/${flow.id}`, { name: 'q' }, { query }), 'colour', 'update');
      expect400(await t.delete(`/api/flows/${flow.id}`, undefined, { query }), 'colour', 'delete');
      expect400(await t.post('/api/flows/create-many', [{ name: 'q' }], { query }), 'colour', 'create-many');
      expect400(await t.put('/api/flows/update-many', [{ id: flow.id, name: 'q' }], { query }), 'colour', 'update-many');
      expect400(await t.delete('/api/flows/delete-many', [flow.id], { query }), 'colour', 'delete-many');
      assert.deepEqual(await snapshot(), before);
    });

    it('a NUL character in a string is refused the same way on both databases (400 naming the property)', async () => {
      const before = await snapshot();
      expect400(await t.post('/api/flows', { name: 'a\u0000b' }), 'name', 'name');
      expect400(await t.post('/api/flows', { name: 'x', definition: { k: 'a\u0000b' } }), 'definition', 'definition value');
      expect400(await t.post('/api/flows', { name: 'x', definition: { 'a\u0000b': 1 } }), 'definition', 'definition key');
      expect400(await t.put(`/api/flows/${flow.id}`, { description: '\u0000' }), 'description', 'update');
      expect400(await t.post('/api/flows/create-many', [{ name: 'ok' }, { name: '\u0000' }]), '[1].name', 'create-many');
      expect400(await t.get('/api/flows', { query: { filter: { name: { eq: 'a\u0000b' } } } }), 'filter.name.eq', 'filter');
      // An id with a NUL names nothing: 404, not a database failure.
      expectError(await t.get('/api/flows/a%00b'), 404);
      expectError(await t.put('/api/flows/a%00b', { name: 'x' }), 404);
      expectError(await t.delete('/api/flows/a%00b'), 404);
      expectError(await t.get('/api/tables/a%00b'), 404);
      expectError(await t.delete('/api/flows/delete-many', [flow.id, 'a\u0000b']), 404);
      expect400(await t.put('/api/flows/update-many', [{ id: flow.id, name: 'x' }, { id: 'a\u0000b', name: 'x' }]), '[1].id', 'update-many id');
      assert.deepEqual(await snapshot(), before);
    });

    it('values nested deeper than the stack goes are a 400 naming them, not a 500; nothing is stored (issue 17)', async () => {
      const before = await snapshot();
      const json = { 'content-type': 'application/json' };
      const deep = (n: number, inner = '') => '['.repeat(n) + inner + ']'.repeat(n);
      // In a JSON attribute: checked for unstorable text without recursion, then refused as a definition.
      expect400(await t.request('POST', '/api/flows', { raw: `{"name":"x","definition":{"k":${deep(100_000)}}}`, headers: json }), 'definition.k', 'definition');
      expect400(await t.request('POST', '/api/flows', { raw: `{"name":"x","definition":{"k":${deep(100_000, '"\\u0000"')}}}`, headers: json }), `definition.k${'[0]'.repeat(3)}`, 'a NUL deep down');
      // As the id of an update: refused by the bound on a body's nesting (100), named by its place, not written out.
      const body = expect400(await t.request('PUT', `/api/flows/${flow.id}`, { raw: `{"id":${deep(100_000)}}`, headers: json }), /nests more than 100 levels .*at id\[0\]/, 'id');
      assert.ok((body.message as string).length < 200);
      assert.deepEqual(await snapshot(), before);
    });

    it('prototype-poisoning keys in a body are refused', async () => {
      const before = await snapshot();
      const json = { 'content-type': 'application/json' };
      expectError(await t.request('POST', '/api/flows', { raw: '{"name": "x", "__proto__": {"admin": true}}', headers: json }), 400);
      expectError(await t.request('POST', '/api/flows', { raw: '{"name": "x", "constructor": {"prototype": {"a": 1}}}', headers: json }), 400);
      expect400(await t.post('/api/flows', { name: 'x', toString: 'y' }), 'toString', 'toString');
      assert.deepEqual(await snapshot(), before);
    });
  });

  describe('SQL-looking strings', () => {
    const nasty = [
      "'; DROP TABLE rh_flows; --",
      "Robert'); DROP TABLE rh_environment_variables;--",
      '" OR ""="',
      "x' OR '1'='1",
      '1; DELETE FROM rh_members WHERE 1=1',
      "\\'; SELECT pg_sleep(1); --",
      '%_\\',
      '$1 $$ :name ?',
    ];

    it('are stored and returned literally, and found by eq exactly', async () => {
      // A flow's definition has a shape (CONTRACT §9): the text goes in its trigger's filter.
      const table = expectStatus(await t.post('/api/tables', { name: 'sql', fields: [{ code: 't', type: 'text' }] }), 201);
      const definition = (text: string) => ({ trigger: { table: table.id, events: ['create'], filter: { values: { t: { _eq: text } } } }, webhook: { url: 'https://example.com/hook' } });
      for (const [i, text] of nasty.entries()) {
        const { secret: _secret, ...created } = expectStatus(
          await t.post('/api/flows', { name: text, description: text, definition: definition(text) }),
          201,
        );
        assert.equal(created.name, text);
        assert.equal(created.description, text);
        assert.deepEqual(created.definition, definition(text));
        assert.deepEqual(expectStatus(await t.get(`/api/flows/${created.id}`), 200), created);
        const found = expectStatus(await t.get('/api/flows', { query: { filter: { name: { eq: text } } } }), 200);
        assert.deepEqual(found.data, [created]);
        const variable = expectStatus(await t.post('/api/environment-variables', { name: `SQL_${i}`, value: text, description: text }), 201);
        assert.equal(variable.value, text);
        const updated = expectStatus(await t.put(`/api/environment-variables/${variable.id}`, { value: `${text}${text}` }), 200);
        assert.equal(updated.value, `${text}${text}`);
        const member = expectStatus(await t.post('/api/members', { name: text }), 201);
        assert.equal(expectStatus(await t.get(`/api/members/${member.id}`), 200).name, text);
      }
      const flows = await listAll(t, 'flows');
      for (const text of nasty) assert.equal(flows.filter((f) => f.name === text).length, 1);
      assert.deepEqual(expectStatus(await t.get(`/api/flows/${flow.id}`), 200), flow);
      assert.ok((await listAll(t, 'members')).some((m) => m.id === t.ownerId));
    });

    it('in ids, field names, sort keys and relation names they are simply unknown', async () => {
      const before = await snapshot();
      for (const id of ["1' OR '1'='1", "x'; DROP TABLE rh_flows; --", '%', '*']) {
        const path = `/api/flows/${encodeURIComponent(id)}`;
        expectError(await t.get(path), 404);
        expectError(await t.put(path, { name: 'hacked' }), 404);
        expectError(await t.delete(path), 404);
        expectError(await t.delete('/api/flows/delete-many', [id]), 404);
        expectError(await t.put('/api/flows/update-many', [{ id, name: 'hacked' }]), 404);
      }
      const field = 'name" IS NOT NULL OR "name';
      expect400(await t.get('/api/flows', { query: { filter: { [field]: { eq: 'x' } } } }), 'filter.', 'field');
      expect400(await t.get('/api/flows', { query: { sorting: { 'name; DROP TABLE rh_flows': 'asc' } } }), 'sorting.', 'sort key');
      expect400(await t.get('/api/flows', { query: { sorting: { name: 'asc; DROP TABLE rh_flows' } } }), 'sorting.name', 'direction');
      expect400(await t.get('/api/flows', { query: { relations: ["createdByMember' OR 1=1"] } }), 'relations', 'relation');
      expect400(await t.get('/api/flows', { query: { filter: { name: { "= 'x' OR 1=1 --": 'x' } } } }), 'filter.name', 'operator');
      assert.deepEqual(await snapshot(), before);
    });
  });
});
