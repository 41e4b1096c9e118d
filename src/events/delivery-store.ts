import { randomUUID } from 'node:crypto';
import { type CompiledQuery, sql } from 'kysely';
import type { FlowDefinition } from '../domain/flow-definition.ts';
import { parseRowFilter } from '../domain/row-filter.ts';
import { type LinkedMatches, linkQuantifiers, matchesRowFilter } from '../domain/row-filter-match.ts';
import type { ErrorDetail } from '../domain/errors.ts';
import { changeJson } from '../render/change-json.ts';
import { type Database, inTransaction } from '../store/database.ts';
import { entriesAfter } from '../store/change-log.ts';
import type { Meta, MetaDb } from '../store/meta-schema.ts';
import type { TableCatalog } from '../store/table-catalog.ts';
import { linkedMatches } from '../store/links/linked-matches.ts';
import { withLinkedTables } from '../store/links/linked-tables.ts';
import type { FieldLookup } from '../domain/row-columns.ts';
import type { RowRecord } from '../domain/row.ts';

/**
 * The delivery queue in the database (rh_flow_cursors, rh_flow_deliveries), so that it survives
 * a crash and is shared by every instance:
 *
 * - plan: a flow's new changes become delivery rows, and its cursor moves past them, in one
 *   transaction. It reads only as far as no change may still commit below (change-log.ts
 *   readableThrough), so a cursor past n has seen every change up to n: none is skipped, and
 *   none planned twice. On PostgreSQL the cursor row is locked (SKIP LOCKED: another instance
 *   planning the flow is left to it).
 * - claim: each flow's head (its pending delivery of lowest sequence) when due, leased to one
 *   sender (FOR UPDATE SKIP LOCKED on PostgreSQL, as file-store.ts claims files). A later delivery
 *   of the flow is never claimed while an earlier one is pending: per-flow order. A sender that
 *   dies leaves its lease to run out; another then sends again (at least once).
 * - finish: the attempt's outcome, under the lease it was made with.
 */

export type Delivery = Meta['rh_flow_deliveries'];

/** What a claimed delivery is sent with: its flow's webhook and secret, as they are now. */
export interface Claimed {
  delivery: Delivery;
  flow: { enabled: boolean; definition: FlowDefinition | Record<string, never>; secret: string | null } | null;
}

export interface Outcome {
  status: number | null;
  error: string | null;
}

/** A claimed delivery's flow, as the claim reads it beside the delivery. */
interface FlowColumns {
  flowEnabled: unknown;
  flowDefinition: unknown;
  flowSecret: string | null;
}

/** Changes read per planning transaction. */
const PLAN_BATCH = 500;
const INSERT_BATCH = 100;

export class DeliveryStore {
  /** `catalog`: the tables a flow's filter is read against (its own, and those its links lead to). */
  constructor(
    private readonly database: Database,
    private readonly catalog: TableCatalog,
  ) {}

  private get db(): MetaDb {
    return this.database.db;
  }

  /** Enabled flows whose table has changes past their cursor. */
  /** The tables that enabled flows watch. */
  async watchedTables(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('rh_flow_cursors as c')
      .innerJoin('rh_flows as f', 'f.id', 'c.flowId')
      .select('c.tableId')
      .distinct()
      .where('f.enabled', '=', this.database.dialect.encodeBoolean(true))
      .execute();
    return rows.map((r) => r.tableId);
  }

  async behind(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('rh_flow_cursors as c')
      .innerJoin('rh_flows as f', 'f.id', 'c.flowId')
      .select('c.flowId')
      .where('f.enabled', '=', this.database.dialect.encodeBoolean(true))
      .where(({ exists, selectFrom }) =>
        exists(selectFrom('rh_changes as e').select('e.sequence').whereRef('e.tableId', '=', 'c.tableId').whereRef('e.sequence', '>', 'c.sequence')),
      )
      .execute();
    return rows.map((r) => r.flowId);
  }

  /** Plans the next changes of a flow; answers how many changes it read (0: none, or another instance holds the flow). */
  async plan(flowId: string, now: string): Promise<number> {
    const { dialect } = this.database;
    return inTransaction(this.database, async (tx: MetaDb) => {
      let q = tx.selectFrom('rh_flow_cursors').selectAll().where('flowId', '=', flowId);
      if (dialect.lockRows) q = q.forUpdate().skipLocked();
      const cursor = await q.executeTakeFirst();
      if (!cursor) return 0;
      const flow = await tx.selectFrom('rh_flows').select(['enabled', 'definition']).where('id', '=', flowId).executeTakeFirst();
      if (!flow || !dialect.decodeBoolean(flow.enabled)) return 0;
      const definition = dialect.decodeJson(flow.definition) as FlowDefinition;
      if (definition.trigger?.table !== cursor.tableId) return 0;
      // Only as far as no change may still commit below (change-log.ts): the cursor never passes one.
      const through = await this.database.changeNumbering.readableThrough(tx, cursor.tableId);
      const changes = await entriesAfter(tx, cursor.tableId, Number(cursor.sequence), through, PLAN_BATCH);
      if (changes.length === 0) return 0;
      const triggered = changes.filter((c) => definition.trigger.events.includes(c.type));
      const judge = await this.judge(tx, definition, triggered);
      const rows: Delivery[] = [];
      for (const c of triggered) {
        const verdict = judge(c);
        if (verdict === false) continue;
        const failed = typeof verdict === 'string';
        rows.push({
          id: randomUUID(), createdAt: now, updatedAt: now, createdBy: c.memberId, updatedBy: c.memberId,
          flowId, eventId: randomUUID(), tableId: c.tableId, sequence: Number(c.sequence), type: c.type, change: changeJson(c),
          status: failed ? 'failed' : 'pending', attempts: 0, lastResponseStatus: null, lastError: failed ? verdict : null,
          nextAttemptAt: failed ? null : now, leaseUntil: null,
        });
      }
      for (let i = 0; i < rows.length; i += INSERT_BATCH) await tx.insertInto('rh_flow_deliveries').values(rows.slice(i, i + INSERT_BATCH)).execute();
      const last = Number(changes[changes.length - 1].sequence);
      await tx.updateTable('rh_flow_cursors').set({ sequence: last }).where('flowId', '=', flowId).execute();
      return changes.length;
    });
  }

  /**
   * Whether each of a batch's changes passes the flow's filter: true, false, or why it cannot be
   * told (the filter no longer fits the table's fields, or the tables its links lead to: the
   * delivery is then failed, with that reason, rather than lost). A delete carries no row: every
   * delete passes a filter. A filter through links (`_some`, `_none`, `_every`, CONTRACT §11)
   * judges the rows the changed row links to after the change as they are now, in the planning
   * transaction: the database is asked about the whole batch's linked rows at once
   * (linkedMatches: one statement per such condition), not once per change.
   */
  private async judge(tx: MetaDb, definition: FlowDefinition, changes: readonly Meta['rh_changes'][]): Promise<(c: Meta['rh_changes']) => boolean | string> {
    const raw = definition.trigger.filter;
    if (raw === undefined) return () => true;
    const tableId = definition.trigger.table;
    const table = await this.catalog.find(tx, tableId);
    // A table deleted meanwhile has no fields: a filter naming one no longer fits.
    const lookup: FieldLookup = table ? await withLinkedTables(this.catalog, tx, table) : { id: tableId, fields: [], fieldsByCode: new Map() };
    const details: ErrorDetail[] = [];
    const filter = parseRowFilter(raw, lookup, details);
    if (!filter) {
      const why = `the flow's filter no longer fits its table: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`;
      return (c) => (c.row === null ? true : why);
    }
    const records = new Map<Meta['rh_changes'], RowRecord>();
    for (const c of changes) if (c.row !== null) records.set(c, JSON.parse(c.row) as RowRecord);
    let linked: LinkedMatches | undefined;
    if (linkQuantifiers(filter).length > 0 && records.size > 0) linked = await linkedMatches(this.database, filter, [...records.values()], tx);
    return (c) => {
      const record = records.get(c);
      return record === undefined || matchesRowFilter(filter, record, linked);
    };
  }

  /** Leases up to `limit` due flow heads (of one flow, when given) until `leaseUntil`; answers them with their flows. */
  async claimHeads(now: string, leaseUntil: string, limit: number, flowId?: string): Promise<Claimed[]> {
    const { dialect } = this.database;
    const lock = dialect.lockRows ? sql`for update of d skip locked` : sql``;
    const ofFlow = flowId === undefined ? sql`` : sql`and f.id = ${flowId}`;
    // Each enabled flow's head (its first pending delivery, one lookup in rh_flow_deliveries_flow), when due.
    // (Asking of every pending delivery whether an earlier one is pending took 62 ms a claim with 10,000 pending.)
    const ids = sql`select d.id from rh_flows f
      join rh_flow_deliveries d on d.id = (
        select e.id from rh_flow_deliveries e where e."flowId" = f.id and e.status = 'pending' order by e.sequence limit 1)
      where f.enabled = ${dialect.encodeBoolean(true)} ${ofFlow}
        and d."nextAttemptAt" <= ${now} and (d."leaseUntil" is null or d."leaseUntil" < ${now})
      order by d."nextAttemptAt" limit ${limit} ${lock}`;
    // Each with its flow as it is now, read by the same statement.
    const flow = (column: string) => sql.raw(`(select f.${column} from rh_flows f where f.id = rh_flow_deliveries."flowId")`);
    const claimed = await this.run(
      sql<Delivery & FlowColumns>`update rh_flow_deliveries set "leaseUntil" = ${leaseUntil} where id in (${ids})
        returning *, ${flow('enabled')} as "flowEnabled", ${flow('definition')} as "flowDefinition", ${flow('secret')} as "flowSecret"`.compile(this.db),
    );
    return claimed.map(({ flowEnabled, flowDefinition, flowSecret, ...delivery }) => ({
      delivery,
      // A flow deleted meanwhile: none (its enabled column is never null).
      flow: flowEnabled === null ? null : this.flowOf({ enabled: flowEnabled, definition: flowDefinition, secret: flowSecret }),
    }));
  }

  /** Leases one failed delivery for a retry by hand; undefined when it is not failed (or another retry holds it). */
  async claimFailed(id: string, now: string, leaseUntil: string): Promise<Claimed | undefined> {
    const claimed = await this.db
      .updateTable('rh_flow_deliveries')
      .set({ leaseUntil })
      .where('id', '=', id)
      .where('status', '=', 'failed')
      .where((eb) => eb.or([eb('leaseUntil', 'is', null), eb('leaseUntil', '<', now)]))
      .returningAll()
      .execute();
    return (await this.withFlows(claimed))[0];
  }

  private async withFlows(deliveries: Delivery[]): Promise<Claimed[]> {
    if (deliveries.length === 0) return [];
    const ids = [...new Set(deliveries.map((d) => d.flowId))];
    const flows = await this.run(this.db.selectFrom('rh_flows').select(['id', 'enabled', 'definition', 'secret']).where('id', 'in', ids).compile());
    const byId = new Map(flows.map((f) => [f.id, this.flowOf(f)]));
    return deliveries.map((delivery) => ({ delivery, flow: byId.get(delivery.flowId) ?? null }));
  }

  private flowOf(f: { enabled: unknown; definition: unknown; secret: string | null }): NonNullable<Claimed['flow']> {
    const { dialect } = this.database;
    return { enabled: dialect.decodeBoolean(f.enabled), definition: dialect.decodeJson(f.definition) as FlowDefinition, secret: f.secret };
  }

  /**
   * Records an attempt made under `lease`: succeeded on a 2xx; otherwise pending again at
   * `retryAt`, or failed when that is null. Nothing changes when the lease was lost meanwhile.
   */
  async finish(d: Delivery, lease: string, outcome: Outcome, now: string, retryAt: string | null): Promise<void> {
    const ok = outcome.error === null;
    const query = this.db
      .updateTable('rh_flow_deliveries')
      .set({
        status: ok ? 'succeeded' : retryAt === null ? 'failed' : 'pending',
        attempts: sql`attempts + 1`,
        lastResponseStatus: outcome.status,
        lastError: outcome.error === null ? null : outcome.error.slice(0, 1000),
        nextAttemptAt: ok ? null : retryAt,
        leaseUntil: null,
        updatedAt: now,
      })
      .where('id', '=', d.id)
      .where('leaseUntil', '=', lease)
      .compile();
    await this.run(query);
  }

  /**
   * The statements a sender makes for every delivery (claim the next, read its flow, record the
   * outcome) run prepared on PostgreSQL: planning the claim cost about 1 ms, more than running it.
   * Their plans do not depend on the values bound (times, ids, a limit).
   */
  private async run<R>(query: CompiledQuery<R>): Promise<R[]> {
    this.database.prepare(query.sql);
    return (await this.db.executeQuery(query)).rows;
  }

  /** Gives a lease back with nothing recorded. */
  async release(d: Delivery, lease: string): Promise<void> {
    await this.db.updateTable('rh_flow_deliveries').set({ leaseUntil: null }).where('id', '=', d.id).where('leaseUntil', '=', lease).execute();
  }

  /**
   * When the next claim can be made (undefined: none is pending): the earliest, over enabled flows,
   * of the head's next attempt, or of the end of its lease while one holds it. The deliveries queued
   * behind a head are not due before it, whatever their nextAttemptAt (the time they were planned);
   * counting them, or a disabled flow's, had the worker look again every 10 ms. One index lookup per
   * enabled flow.
   */
  async nextDue(): Promise<string | undefined> {
    const { dialect } = this.database;
    const { rows } = await sql<{ due: string | null }>`select min(case when d."leaseUntil" > d."nextAttemptAt" then d."leaseUntil" else d."nextAttemptAt" end) as due
      from rh_flows f join rh_flow_deliveries d on d.id = (
        select e.id from rh_flow_deliveries e where e."flowId" = f.id and e.status = 'pending' order by e.sequence limit 1)
      where f.enabled = ${dialect.encodeBoolean(true)}`.execute(this.db);
    return rows[0]?.due ?? undefined;
  }
}
