import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, allRows, eachDatabase } from '../support/harness.ts';
import { killLoop, serveOver } from '../support/kill-loop.ts';
import { buildProject, servedDatabase, stopAll } from '../support/served.ts';
import { overHttp } from '../support/wire.ts';

/**
 * Idempotency-Key across a crash (CONTRACT §12): `rowhouse serve` takes a stream of creates from
 * several clients, each with a key of its own and no row id (so a create run twice would make a
 * second row), and is killed with SIGKILL at a random moment, several times. After each restart
 * every request that got no answer is sent again with its key, as a client would. At the end
 * every intended row exists exactly once: a create whose answer was kept is replayed, one whose
 * writes were lost with their answer runs again, and none has its writes without its answer.
 */

const CYCLES = Number(process.env.ROWHOUSE_IDEMPOTENCY_CRASH_CYCLES || 10);
const CLIENTS = 4;

let project: string;
before(() => {
  project = buildProject('rowhouse-idempotency-crash-');
});
after(stopAll);

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  replayed: boolean;
}

async function create(base: string, n: number): Promise<Answer> {
  const res = await fetch(`${base}/api/tables/crash/rows`, {
    method: 'POST',
    headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json', 'idempotency-key': `create-${n}` },
    body: JSON.stringify({ values: { n } }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

eachDatabase('Idempotency-Key across SIGKILL', (kind) => {
  const db = servedDatabase(kind);

  it(`killed ${CYCLES} times during idempotent creates: every intended row exists exactly once`, { timeout: 10 * 60_000 }, async () => {
    const first = await serveOver(project, db);
    const made = await fetch(`${first.base}/api/tables`, {
      method: 'POST',
      headers: { 'x-api-key': TEST_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'crash', name: 'Crash', fields: [{ code: 'n', type: 'number', required: true }] }),
    });
    assert.equal(made.status, 201, await made.text());

    /** The row id each answered create named. */
    const answered = new Map<number, string>();
    /** Sent, never answered: sent again after the restart. */
    const unanswered = new Set<number>();
    let next = 0;
    const stats = { replayed: 0, cutOff: 0 };

    /** Sends `n` until it is answered with the row (a 409 of a key still held by the killed process: again shortly); false when the server died. */
    const settle = async (base: string, n: number): Promise<boolean> => {
      for (let attempt = 0; attempt < 100; attempt++) {
        let a: Answer;
        try {
          a = await create(base, n);
        } catch {
          unanswered.add(n);
          return false;
        }
        if (a.status === 409) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          continue;
        }
        assert.equal(a.status, 201, `create ${n}: ${a.status} ${JSON.stringify(a.body)}`);
        assert.equal(a.body.values.n, n);
        if (a.replayed) stats.replayed++;
        const before = answered.get(n);
        if (before !== undefined) assert.equal(a.body.id, before, `create ${n} answered two rows`);
        answered.set(n, a.body.id);
        unanswered.delete(n);
        return true;
      }
      throw new Error(`create ${n}: still in flight after 100 tries`);
    };

    const server = await killLoop({
      first,
      start: () => serveOver(project, db),
      cycles: CYCLES,
      killAfterMs: () => 300 + Math.random() * 700,
      write: (server, cycle, killed) =>
        Promise.all(
          Array.from({ length: CLIENTS }, async () => {
            while (!killed()) {
              const n = next++;
              if (!(await settle(server.base, n))) return;
            }
          }),
        ),
      gone() {
        stats.cutOff += unanswered.size;
      },
      // Every request the last process left unanswered, again with its key.
      async restarted(server) {
        for (const n of [...unanswered]) assert.ok(await settle(server.base, n), `create ${n} after the restart: the server died`);
      },
    });

    // Every intended row once: 0 … next-1.
    const rows = (await allRows(overHttp(server.base), 'crash')) as { id: string; values: { n: number } }[];
    const counts = new Map<number, number>();
    for (const r of rows) counts.set(r.values.n, (counts.get(r.values.n) ?? 0) + 1);
    const twice = [...counts].filter(([, c]) => c > 1).map(([n]) => n);
    const missing = Array.from({ length: next }, (_, n) => n).filter((n) => !counts.has(n));
    assert.deepEqual(twice, [], 'creates written twice');
    assert.deepEqual(missing, [], 'creates missing');
    assert.equal(rows.length, next);
    for (const r of rows) assert.equal(answered.get(r.values.n), r.id, `the answer to create ${r.values.n} names another row`);
    assert.ok(next > CYCLES * CLIENTS, `only ${next} creates were sent`);
    console.log(`  ${next} creates, ${stats.cutOff} cut off by a kill and sent again, ${stats.replayed} answered by a replay`);
    server.child.kill('SIGTERM');
    await server.closed;
  });
});
