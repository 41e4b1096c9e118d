import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../domain/errors.ts';
import { feedQuery } from '../domain/requests/changes-query.ts';
import { JSON_TYPE } from '../render/row-json.ts';
import type { ChangeLog } from '../store/change-log.ts';
import { changeJson } from '../render/change-json.ts';
import { needs } from './access.ts';
import type { RowsDeps } from './rows-routes.ts';
import { tableOr404 } from '../store/execute.ts';

/**
 * GET /api/tables/{t}/changes?after&limit&wait (issue "Change events", item 2): the table's
 * change log in sequence order, from a cursor the consumer keeps.
 */

/** While a long poll waits, how often it looks for changes another instance committed. */
const POLL_MS = 500;

export function changesRoutes(app: FastifyInstance, deps: RowsDeps, log: ChangeLog): void {
  // Long polls waiting now: a shutdown answers them at once (with what there is, often nothing), so
  // they do not hold it up for up to 30 seconds.
  const polls = new Set<AbortController>();
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    for (const poll of polls) poll.abort();
    done();
  });

  app.get<{ Params: { table: string }; Querystring: Record<string, unknown> }>('/api/tables/:table/changes', needs.onTable('rows:read'), async (request, reply) => {
    const table = await tableOr404(deps, request.params.table);
    const q = feedQuery(request.query);
    const db = deps.database.db;
    const purged = await log.purgedThrough(db, table.id);
    if (q.after !== undefined && q.after < purged) throw changesGone(q.after, purged);
    const after = q.after ?? purged;
    let changes = await log.read(db, table.id, after, q.limit);
    if (changes.length === 0 && q.wait > 0 && !closing) {
      // Long poll: woken by a commit of this instance, or by the next look for other instances' commits.
      const deadline = Date.now() + q.wait * 1000;
      // Ends the wait: the client has gone, or the server shuts down.
      const over = new AbortController();
      const gone = () => over.abort();
      request.raw.once('close', gone);
      polls.add(over);
      try {
        while (changes.length === 0 && Date.now() < deadline && !over.signal.aborted) {
          // A timer of its own, not AbortSignal.timeout(): that one does not keep the process waiting.
          const look = new AbortController();
          const timer = setTimeout(() => look.abort(), Math.min(POLL_MS, deadline - Date.now()));
          await waitFor(log, table.id, AbortSignal.any([over.signal, look.signal]));
          clearTimeout(timer);
          changes = await log.read(db, table.id, after, q.limit);
        }
      } finally {
        polls.delete(over);
        request.raw.off('close', gone);
      }
    }
    const nextCursor = changes.length > 0 ? Number(changes[changes.length - 1].sequence) : after;
    return reply.type(JSON_TYPE).send(`{"data":[${changes.map(changeJson).join(',')}],"nextCursor":${nextCursor}}`);
  });
}

/** A cursor (the feed's or a stream's) older than the changes kept: 410. */
export function changesGone(after: number, purged: number): ServiceError {
  return new ServiceError('changes_gone', `Changes after ${after} are no longer kept (ROWHOUSE_CHANGES_RETENTION_SECONDS); the oldest kept come after ${purged}. Read the table again, then follow the feed from there.`);
}

/** Resolves when a commit adds entries of the table, or when `signal` aborts. */
async function waitFor(log: ChangeLog, tableId: string, signal: AbortSignal): Promise<void> {
  try {
    for (;;) {
      const [id] = await once(log.committed, 'table', { signal });
      if (id === tableId) return;
    }
  } catch {
    // aborted: time to look again, or the client has gone
  }
}
