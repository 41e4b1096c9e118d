import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DeliveryStore } from '../../src/events/delivery-store.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';
import { verifySignature } from '../../src/events/signature.ts';
import { type TestApp, eachDatabase, expectError, freshTable, startApp } from '../support/harness.ts';
import { WebhookReceiver as Receiver } from '../support/webhook-receiver.ts';
import { until } from '../support/wire.ts';

/**
 * Flows that deliver webhooks (issue "Change events", items 3 to 5), to a real HTTP receiver on
 * 127.0.0.1: payloads and signatures, the filter, retries with backoff, failure and a retry by
 * hand, two instances, and the addresses a webhook may not reach.
 */

const FAST = { ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true', ROWHOUSE_WEBHOOK_RETRY_BASE_MS: '50', ROWHOUSE_WEBHOOK_TIMEOUT_MS: '2000', ROWHOUSE_WEBHOOK_ATTEMPTS: '4' };

eachDatabase('webhooks: flows deliver changes', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind, FAST, { webhookPollMs: 100 });
    t.app.webhooks.start();
  });
  after(() => t.close());

  const table = (app = t) => freshTable(app, 'w', [{ code: 'title', type: 'text' }, { code: 'n', type: 'number' }]);
  async function flow(trigger: Record<string, unknown>, url: string, app = t): Promise<{ id: string; secret: string }> {
    const r = await app.post('/api/flows', { name: 'hook', enabled: true, definition: { trigger, webhook: { url, headers: { 'X-Custom': 'yes' } } } });
    assert.equal(r.status, 201, r.text);
    return { id: r.body.id, secret: r.body.secret };
  }
  async function deliveries(flowId: string, app = t) {
    const r = await app.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: flowId } }, sorting: { sequence: 'asc' }, paging: { limit: 1000 } } });
    assert.equal(r.status, 200, r.text);
    return r.body.data as Record<string, any>[];
  }

  it('delivers single, bulk, batch, upsert and delete changes, signed, with the feed’s change; none of a rolled-back batch', async () => {
    const rx = await new Receiver().start();
    try {
      const { code, id: tableId } = await table();
      assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'before', values: {} })).status, 201);
      const { id: flowId, secret } = await flow({ table: code, events: ['create', 'update', 'delete'] }, rx.url());
      assert.match(secret, /^whsec_/);
      const w = (r: { status: number; text: string }, status: number) => assert.equal(r.status, status, r.text);
      w(await t.post(`/api/tables/${code}/rows`, { id: 'r1', values: { title: 'one', n: 1 } }), 201);
      w(await t.patch(`/api/tables/${code}/rows/r1`, { values: { n: 2 } }), 200);
      w(await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'b1', values: {} }, { id: 'b2', values: {} }] }), 201);
      w(await t.post(`/api/tables/${code}/rows`, { id: 'b2', values: { n: 5 }, options: { upsert: true } }), 200);
      expectError(await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: code, id: 'x9', values: {} }, { type: 'update', tableId: code, id: 'nope', values: {} }] }), 404);
      w(await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: code, id: 'x1', values: {} }, { type: 'delete', tableId: code, id: 'b1' }] }), 200);
      w(await t.delete(`/api/tables/${code}/rows/r1`), 204);

      const expected = [['create', 'r1'], ['update', 'r1'], ['create', 'b1'], ['create', 'b2'], ['update', 'b2'], ['create', 'x1'], ['delete', 'b1'], ['delete', 'r1']];
      await until('every delivery', () => rx.received.length >= expected.length);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(rx.received.length, expected.length, 'each change once, the rolled-back batch and the change before the flow none');
      const feed = (await t.get(`/api/tables/${code}/changes`, { query: { after: '1' } })).body.data;
      rx.received.forEach((r, i) => {
        assert.deepEqual([r.body.change.type, r.body.change.rowId], expected[i]);
        assert.deepEqual(r.body.change, feed[i], 'the change as the feed renders it');
        assert.equal(r.body.flowId, flowId);
        assert.equal(r.body.change.tableId, tableId);
        assert.equal(r.headers['rowhouse-event-id'], r.body.id);
        assert.equal(r.headers['content-type'], 'application/json');
        assert.equal(r.headers['x-custom'], 'yes');
        assert.ok(verifySignature(r.headers['rowhouse-signature'] as string, r.text, secret), 'the signature verifies');
        assert.ok(!verifySignature(r.headers['rowhouse-signature'] as string, r.text, `${secret}x`), 'not with another secret');
        assert.ok(!verifySignature(r.headers['rowhouse-signature'] as string, r.text.replace(r.body.id, '00000000-0000-4000-8000-000000000000'), secret), 'not over another body');
      });
      assert.equal(rx.received[1].body.change.row.values.n, 2);
      assert.deepEqual(rx.received[1].body.change.changedFields, ['n']);
      assert.equal(rx.received[7].body.change.row, null);

      // The deliveries: a read-only resource, each succeeded once, the secret nowhere.
      const list = await deliveries(flowId);
      assert.deepEqual(list.map((d) => [d.status, d.attempts, d.lastResponseStatus, d.type]), expected.map(([type]) => ['succeeded', 1, 200, type]));
      assert.deepEqual(list.map((d) => d.eventId), rx.received.map((r) => r.body.id));
      for (const d of list) assert.deepEqual(Object.keys(d).sort(), ['attempts', 'createdAt', 'createdBy', 'eventId', 'flowId', 'id', 'lastError', 'lastResponseStatus', 'nextAttemptAt', 'sequence', 'status', 'tableId', 'type', 'updatedAt', 'updatedBy']);
      const page = await t.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: flowId }, type: { eq: 'delete' } }, sorting: { sequence: 'desc' }, paging: { limit: 1 } } });
      assert.deepEqual([page.body.data.map((d: any) => d.sequence), page.body.pagination.nextOffset], [[9], 1]);
      assert.equal((await t.get(`/api/flow-deliveries/${list[0].id}`)).body.eventId, list[0].eventId);
      for (const [method, url] of [['POST', '/api/flow-deliveries'], ['PUT', `/api/flow-deliveries/${list[0].id}`], ['DELETE', `/api/flow-deliveries/${list[0].id}`], ['POST', '/api/flow-deliveries/create-many']] as const) {
        expectError(await t.request(method, url, { body: {} }), 404);
      }
      const got = await t.get(`/api/flows/${flowId}`);
      const listed = await t.get('/api/flows');
      for (const text of [got.text, listed.text]) assert.ok(!text.includes(secret) && !text.includes('"secret"'), 'the secret is answered on create only');
      assert.equal(got.body.definition.trigger.table, tableId, 'the table is kept by id');
    } finally {
      await rx.stop();
    }
  });

  it('delivers only the events and rows the trigger selects', async () => {
    const rx = await new Receiver().start();
    try {
      const { code } = await table();
      await flow({ table: code, events: ['create', 'update'], filter: { values: { n: { _gt: 10 } }, _not: { values: { title: { _startsWith: 'skip' } } } } }, rx.url());
      await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: { n: 5 } }, { id: 'b', values: { n: 20 } }, { id: 'c', values: { n: 30, title: 'skip me' } }, { id: 'd', values: {} }] });
      await t.patch(`/api/tables/${code}/rows/a`, { values: { n: 11 } });
      await t.delete(`/api/tables/${code}/rows/b`);
      await until('two deliveries', () => rx.received.length >= 2);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(rx.received.map((r) => [r.body.change.type, r.body.change.rowId]), [['create', 'b'], ['update', 'a']]);
    } finally {
      await rx.stop();
    }
  });

  it('sends each delivery to its flow as it is when sent: a new URL and headers are used for what is still pending', async () => {
    const first = await new Receiver().start();
    const second = await new Receiver().start();
    try {
      const { code } = await table();
      const f = await flow({ table: code, events: ['create'] }, first.url());
      // The first receiver holds its first request unanswered: everything after stays pending behind it.
      first.answer = (_r, n) => (n === 1 ? 'hang' : 200);
      await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: {} }, { id: 'b', values: {} }, { id: 'c', values: {} }] });
      await until('the first request', () => first.received.length === 1);
      const changed = await t.put(`/api/flows/${f.id}`, { definition: { trigger: { table: code, events: ['create'] }, webhook: { url: second.url(), headers: { 'X-Custom': 'changed' } } } });
      assert.equal(changed.status, 200, changed.text);
      // The held request times out; its retry and the two behind it go where the flow now points.
      await until('three deliveries at the new URL', () => second.received.length >= 3, 15_000);
      assert.deepEqual(second.received.map((r) => r.body.change.rowId), ['a', 'b', 'c']);
      assert.ok(second.received.every((r) => r.headers['x-custom'] === 'changed'));
      assert.equal(first.received.length, 1);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it('retries a timeout and a 500 with backoff, with the same event id, until the receiver answers 2xx', async () => {
    const rx = await new Receiver().start();
    rx.answer = (_r, n) => (n === 1 ? 'hang' : n === 2 ? 500 : 204);
    try {
      const { code } = await table();
      const { id: flowId } = await flow({ table: code, events: ['create'] }, rx.url());
      await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: {} }, { id: 'b', values: {} }] });
      await until('both delivered', async () => (await deliveries(flowId)).every((d) => d.status === 'succeeded') && rx.received.length >= 4);
      const [a, b] = await deliveries(flowId);
      assert.deepEqual([a.attempts, a.lastResponseStatus, a.lastError], [3, 204, null]);
      assert.deepEqual(rx.received.map((r) => r.body.change.rowId), ['a', 'a', 'a', 'b'], 'b waits until a is done');
      assert.equal(new Set(rx.received.slice(0, 3).map((r) => r.body.id)).size, 1, 'one event id across retries');
      assert.equal(b.attempts, 1);
    } finally {
      await rx.stop();
    }
  });

  it('fails a delivery after the attempts allowed; the next goes on; a retry by hand sends it again', async () => {
    const rx = await new Receiver().start();
    const port = rx.port;
    await rx.stop();
    const { code } = await table();
    const { id: flowId } = await flow({ table: code, events: ['create'] }, `http://127.0.0.1:${port}/hook`);
    await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: {} }, { id: 'b', values: {} }] });
    const failed = await until('both failed', async () => {
      const list = await deliveries(flowId);
      return list.length === 2 && list.every((d) => d.status === 'failed') && list;
    });
    for (const d of failed) {
      assert.equal(d.attempts, 4);
      assert.equal(d.lastResponseStatus, null);
      assert.match(d.lastError, /ECONNREFUSED/);
      assert.equal(d.nextAttemptAt, null);
    }
    await rx.start(port);
    try {
      const retried = await t.post(`/api/flow-deliveries/${failed[0].id}/retry`);
      assert.equal(retried.status, 200, retried.text);
      assert.deepEqual([retried.body.status, retried.body.attempts, retried.body.lastResponseStatus, retried.body.lastError], ['succeeded', 5, 200, null]);
      assert.deepEqual(rx.received.map((r) => [r.body.id, r.body.change.rowId]), [[failed[0].eventId, 'a']]);
      expectError(await t.post(`/api/flow-deliveries/${failed[0].id}/retry`), 409);
      expectError(await t.post('/api/flow-deliveries/00000000-0000-4000-8000-000000000000/retry'), 404);
      assert.equal((await t.put(`/api/flows/${flowId}`, { enabled: false })).status, 200);
      expectError(await t.post(`/api/flow-deliveries/${failed[1].id}/retry`), 409);
      assert.equal((await t.get(`/api/flow-deliveries/${failed[1].id}`)).body.status, 'failed');
    } finally {
      await rx.stop();
    }
  });

  it('checks a definition on write: 400 naming the problem; {} is a draft, which cannot be enabled', async () => {
    const { code } = await table();
    const url = 'http://127.0.0.1:9/hook';
    const good = { trigger: { table: code, events: ['create'] }, webhook: { url } };
    const cases: [string, unknown, RegExp][] = [
      ['no webhook', { trigger: good.trigger }, /definition\.webhook/],
      ['no trigger', { webhook: good.webhook }, /definition\.trigger/],
      ['no events', { ...good, trigger: { table: code, events: [] } }, /definition\.trigger\.events/],
      ['unknown event', { ...good, trigger: { table: code, events: ['insert'] } }, /definition\.trigger\.events/],
      ['unknown table', { ...good, trigger: { table: 'nope', events: ['create'] } }, /definition\.trigger\.table/],
      ['unknown field in the filter', { ...good, trigger: { ...good.trigger, filter: { values: { nope: { _eq: 1 } } } } }, /definition\.trigger\.filter\.values\.nope/],
      ['bad filter value', { ...good, trigger: { ...good.trigger, filter: { values: { n: { _eq: 'x' } } } } }, /definition\.trigger\.filter\.values\.n\._eq/],
      ['ftp URL', { ...good, webhook: { url: 'ftp://example.com/' } }, /definition\.webhook\.url/],
      ['no URL', { ...good, webhook: {} }, /definition\.webhook\.url/],
      ['reserved header', { ...good, webhook: { url, headers: { 'Rowhouse-Signature': 'x' } } }, /definition\.webhook\.headers/],
      ['unknown key', { ...good, steps: [] }, /definition\.steps/],
    ];
    for (const [what, definition, path] of cases) {
      const e = expectError(await t.post('/api/flows', { name: 'x', definition }), 400);
      assert.match(JSON.stringify(e), path, what);
    }
    expectError(await t.post('/api/flows', { name: 'x', enabled: true }), 400);
    const draft = await t.post('/api/flows', { name: 'draft', definition: {} });
    assert.equal(draft.status, 201, draft.text);
    assert.match(JSON.stringify(expectError(await t.put(`/api/flows/${draft.body.id}`, { enabled: true }), 400)), /enabled/);
    assert.equal((await t.put(`/api/flows/${draft.body.id}`, { definition: good })).status, 200);
    const enabled = await t.put(`/api/flows/${draft.body.id}`, { enabled: true });
    assert.equal(enabled.status, 200, enabled.text);
    expectError(await t.put(`/api/flows/${draft.body.id}`, { definition: {} }), 400);
    assert.equal((await t.put(`/api/flows/${draft.body.id}`, { enabled: false })).status, 200);
    assert.equal((await t.delete(`/api/flows/${draft.body.id}`)).status, 200);
  });

  describe('several instances', () => {
    it('two instances deliver each event once, in order', async () => {
      // On PostgreSQL two instances; two SQLite instances in one process would wait on each other's
      // write lock with the event loop blocked (see test/changes/feed.test.ts), so one there.
      const twin = kind === 'postgres' ? await startApp(kind, FAST, { sharing: t, webhookPollMs: 50 }) : t;
      twin.app.webhooks.start();
      const rx = await new Receiver().start();
      try {
        const { code } = await table();
        const { id: flowId } = await flow({ table: code, events: ['create', 'update'] }, rx.url());
        const n = 60;
        const writes = [];
        for (let i = 0; i < n; i++) writes.push((i % 2 === 0 ? t : twin).post(`/api/tables/${code}/rows`, { id: `r${i}`, values: { n: i } }));
        for (const r of await Promise.all(writes)) assert.equal(r.status, 201, r.text);
        await until('every event', () => rx.received.length >= n, 20_000);
        await new Promise((r) => setTimeout(r, 500));
        const sequences = rx.received.map((r) => r.body.change.sequence);
        assert.deepEqual(sequences, Array.from({ length: n }, (_, i) => i + 1), 'each once, in sequence order');
        assert.equal(new Set(rx.received.map((r) => r.body.id)).size, n);
        assert.ok((await deliveries(flowId)).every((d) => d.status === 'succeeded' && d.attempts === 1));
      } finally {
        await rx.stop();
        if (twin !== t) await twin.close();
      }
    });
  });
});

eachDatabase('webhooks: a flow that is stuck holds back no other, and keeps the worker asleep', (kind) => {
  // Long enough that a receiver which does not answer is still waited for when the test is over.
  const SLOW = { ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true', ROWHOUSE_WEBHOOK_RETRY_BASE_MS: '60000', ROWHOUSE_WEBHOOK_TIMEOUT_MS: '60000' };
  let t: TestApp;
  before(async () => {
    t = await startApp(kind, SLOW, { webhookPollMs: 100 });
    t.app.webhooks.start();
    assert.equal((await t.post('/api/tables', { code: 's', name: 's', fields: [] })).status, 201);
  });
  after(() => t.close());

  async function flow(url: string): Promise<string> {
    const r = await t.post('/api/flows', { name: 'x', enabled: true, definition: { trigger: { table: 's', events: ['create'] }, webhook: { url } } });
    assert.equal(r.status, 201, r.text);
    return r.body.id;
  }

  it('delivers every change of a flow while another flow’s receiver holds its request unanswered; the worker sleeps until the held lease runs out', async () => {
    const held = await new Receiver().start();
    held.answer = () => 'hang';
    const fast = await new Receiver().start();
    try {
      const heldFlow = await flow(held.url());
      const fastFlow = await flow(fast.url());
      for (let i = 0; i < 5; i++) assert.equal((await t.post('/api/tables/s/rows', { id: `h${i}`, values: {} })).status, 201);
      await until('the other flow’s five deliveries', () => fast.received.length >= 5);
      assert.deepEqual(fast.received.map((r) => r.body.change.rowId), ['h0', 'h1', 'h2', 'h3', 'h4']);
      assert.deepEqual(held.received.map((r) => r.body.change.rowId), ['h0'], 'the held flow’s next waits for its head');
      // Pending now: the held head, leased for timeout + 30 s, and four behind it. Nothing is due before the lease runs out.
      const due = await new DeliveryStore(t.database, new TableCatalog(t.database)).nextDue();
      assert.ok(due !== undefined && Date.parse(due) > Date.now() + 60_000, `next due ${due}`);
      for (const id of [heldFlow, fastFlow]) assert.equal((await t.put(`/api/flows/${id}`, { enabled: false })).status, 200);
    } finally {
      await held.stop();
      await fast.stop();
    }
  });

  it('is due again when a flow’s head retries, not for the deliveries behind it; a disabled flow’s pending deliveries are never due', async () => {
    const rx = await new Receiver().start();
    rx.answer = () => 500;
    try {
      const flowId = await flow(rx.url());
      assert.equal((await t.post('/api/tables/s/rows-bulk', { data: [{ id: 'r1', values: {} }, { id: 'r2', values: {} }] })).status, 201);
      const head = await until('the head’s first attempt recorded', async () => {
        const list = (await t.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: flowId } }, sorting: { sequence: 'asc' } } })).body.data;
        return list.length === 2 && list[0].attempts === 1 && list[0];
      });
      assert.equal(rx.received.length, 1);
      const store = new DeliveryStore(t.database, new TableCatalog(t.database));
      assert.equal(await store.nextDue(), head.nextAttemptAt, 'the head’s retry, a minute away; not r2, queued behind it since it was planned');
      assert.equal((await t.put(`/api/flows/${flowId}`, { enabled: false })).status, 200);
      assert.equal(await store.nextDue(), undefined, 'a disabled flow sends nothing, so nothing of it is due');
    } finally {
      await rx.stop();
    }
  });
});

eachDatabase('webhooks: addresses a webhook may not reach', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind, { ROWHOUSE_WEBHOOK_ATTEMPTS: '1' }, { webhookPollMs: 100 });
    t.app.webhooks.start();
  });
  after(() => t.close());

  it('refuses a literal private address on write, and a name resolving to one at send time', async () => {
    const r = await t.post('/api/tables', { code: 's', name: 's', fields: [] });
    assert.equal(r.status, 201, r.text);
    for (const host of ['127.0.0.1', '10.0.0.8', '169.254.169.254', '192.168.1.1', '[::1]', '[fd00::1]', '[::ffff:127.0.0.1]', '0.0.0.0']) {
      const e = expectError(await t.post('/api/flows', { name: 'x', definition: { trigger: { table: 's', events: ['create'] }, webhook: { url: `http://${host}:8080/` } } }), 400);
      assert.match(JSON.stringify(e), /definition\.webhook\.url.*(loopback|private)/, host);
    }
    const rx = await new Receiver().start();
    try {
      const f = await t.post('/api/flows', { name: 'x', enabled: true, definition: { trigger: { table: 's', events: ['create'] }, webhook: { url: `http://localhost:${rx.port}/` } } });
      assert.equal(f.status, 201, f.text);
      assert.equal((await t.post('/api/tables/s/rows', { id: 'a', values: {} })).status, 201);
      const d = await until('the delivery failed', async () => {
        const list = (await t.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: f.body.id } } } })).body.data;
        return list[0]?.status === 'failed' && list[0];
      });
      assert.match(d.lastError, /refused: localhost is resolved to (127\.0\.0\.1|::1)/);
      assert.equal(rx.received.length, 0, 'nothing reached the receiver');
    } finally {
      await rx.stop();
    }
  });
});
