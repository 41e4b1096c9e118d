import { randomBytes } from 'node:crypto';
import { type FlowDefinition, isDraft, parseFlowDefinition } from '../../domain/flow-definition.ts';
import { isObject } from '../../domain/json.ts';
import { parseRowFilter } from '../../domain/row-filter.ts';
import { type ErrorDetail, invalid } from '../../domain/errors.ts';
import type { Dialect } from '../dialect.ts';
import type { MetaDb } from '../meta-schema.ts';
import { lastNumber } from '../change-log.ts';
import type { TableCatalog } from '../table-catalog.ts';
import { withLinkedTables } from '../links/linked-tables.ts';
import { namedTableRefusal } from './table-names.ts';
import { AUDIT_RELATIONS, type Attrs, type ResourceSpec, type WriteContext } from './resource-spec.ts';

/**
 * Flows (CONTRACT §9; issue "Change events", item 3): a trigger on a table's changes and the
 * webhook they are delivered to (events/). A create answers the signing secret once; it is kept
 * (the signature needs it) but never answered again. Enabling a flow starts its cursor at the
 * table's latest change: it delivers what is committed from then on.
 */

export interface FlowSpecOptions {
  dialect: Dialect;
  /** The tables a trigger names and its filter reads through links. */
  catalog: TableCatalog;
  /** ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: whether a literal private address is a URL a flow may have. */
  allowPrivate: boolean;
}

export const newFlowSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

/** A key limited to some tables writes only the flows whose trigger is one of them (CONTRACT §12). */
async function requireFlowTable(tx: MetaDb, ctx: WriteContext, definition: unknown): Promise<void> {
  const table = isObject(definition) && isObject(definition.trigger) ? definition.trigger.table : undefined;
  if (!ctx.grant || typeof table !== 'string') return;
  const refused = await namedTableRefusal(tx, ctx.grant, 'flows:write', table);
  if (refused) throw refused;
}

const ENABLE_DRAFT: ErrorDetail = { path: 'enabled', message: 'a flow can be enabled only with a complete definition {trigger: {table, events, filter?}, webhook: {url, headers?}}' };

/**
 * A key limited to some tables writes only the flows whose filter reads tables it may read: the
 * tables a filter's `_some`, `_none` and `_every` reach need rows:read (CONTRACT §12, as a list's
 * filter does), since the deliveries tell which rows the linked rows meet it. `_has`, `_eq` and
 * `_isNull` read only the row's own link value. The trigger table itself needs flows:write only.
 */
async function requireFilterReads(tx: MetaDb, ctx: WriteContext, tableId: string, reached: ReadonlySet<string>): Promise<void> {
  if (!ctx.grant) return;
  for (const id of reached) {
    if (id === tableId) continue;
    const refused = await namedTableRefusal(tx, ctx.grant, 'rows:read', id);
    if (refused) throw refused;
  }
}

/**
 * The table a definition names, its filter read against that table and the tables its links lead
 * to (so `_some`, `_none` and `_every` take the target table's grammar), and the writing key's
 * rows:read on those it reaches (requireFilterReads): checked before a problem of the filter is
 * answered, so a key learns nothing from a 400 of the fields of a table it may not read. The
 * definition answered names the table by id. A problem is a 400 naming its path (`definition.trigger.filter.…`).
 */
async function resolveDefinition(tx: MetaDb, ctx: WriteContext, catalog: TableCatalog, definition: FlowDefinition): Promise<FlowDefinition> {
  const ref = definition.trigger.table;
  const table = await catalog.find(tx, ref);
  if (!table) throw invalid([{ path: 'definition.trigger.table', message: `no table ${ref}` }], 'Invalid flow');
  if (definition.trigger.filter !== undefined) {
    const details: ErrorDetail[] = [];
    const reached = new Set<string>();
    parseRowFilter(definition.trigger.filter, await withLinkedTables(catalog, tx, table), details, reached);
    await requireFilterReads(tx, ctx, table.id, reached);
    if (details.length > 0) throw invalid(details.map((d) => ({ path: `definition.trigger.${d.path}`, message: d.message })), 'Invalid flow');
  }
  return { ...definition, trigger: { ...definition.trigger, table: table.id } };
}

/** The tables a stored definition's filter reaches through links, as its tables are now (as far as it still reads). */
async function storedFilterReaches(tx: MetaDb, catalog: TableCatalog, definition: FlowDefinition): Promise<Set<string>> {
  const reached = new Set<string>();
  const table = definition.trigger.filter === undefined ? undefined : await catalog.find(tx, definition.trigger.table);
  if (table) parseRowFilter(definition.trigger.filter, await withLinkedTables(catalog, tx, table), [], reached);
  return reached;
}

/** Starts (or starts again) the flow's reading of its table's change log after the latest change. */
async function startCursor(tx: MetaDb, flowId: string, tableId: string): Promise<void> {
  const sequence = await lastNumber(tx, tableId);
  await tx
    .insertInto('rh_flow_cursors')
    .values({ flowId, tableId, sequence })
    .onConflict((oc) => oc.column('flowId').doUpdateSet({ tableId, sequence }))
    .execute();
}

export function flowsSpec({ dialect, catalog, allowPrivate }: FlowSpecOptions): ResourceSpec {
  const check = (input: Attrs): ErrorDetail[] => {
    const problems: ErrorDetail[] = [];
    if (input.definition !== undefined) parseFlowDefinition(input.definition, allowPrivate, problems);
    return problems;
  };
  return {
    name: 'flows',
    table: 'rh_flows',
    label: 'flow',
    // A key limited to some tables sees only the flows they trigger, and drafts (CONTRACT §12).
    tableRef: { column: 'definition', path: ['trigger', 'table'] },
    attrs: {
      name: { type: 'text', schema: { type: 'string', minLength: 1, maxLength: 255 }, create: 'required' },
      description: { type: 'text', schema: { type: 'string', maxLength: 10_000 }, nullable: true, default: () => null },
      enabled: { type: 'boolean', schema: { type: 'boolean' }, default: () => false },
      definition: { type: 'json', schema: { type: 'object' }, default: () => ({}) },
      secret: { type: 'text', schema: { type: 'string' }, create: 'no', update: false, hidden: true },
    },
    relations: AUDIT_RELATIONS,
    createAnswers: {
      secret: { type: 'string', description: 'The key of the webhook signatures (Rowhouse-Signature): answered on create only.' },
    },
    hooks: {
      check(input, mode) {
        const problems = check(input);
        if (mode === 'create' && input.enabled === true && (input.definition === undefined || isDraft(input.definition))) problems.push(ENABLE_DRAFT);
        return problems;
      },
      async beforeInsert(tx, columns, input, ctx) {
        const parsed = parseFlowDefinition(input.definition, allowPrivate, []);
        if (parsed) {
          const definition = await resolveDefinition(tx, ctx, catalog, parsed);
          await requireFlowTable(tx, ctx, definition);
          columns.definition = dialect.encodeJson(definition);
          if (input.enabled === true) await startCursor(tx, columns.id, definition.trigger.table);
        }
        const secret = newFlowSecret();
        columns.secret = secret;
        // Answered this once; list and get answers never carry it (a hidden attribute).
        return { secret };
      },
      async beforeUpdate(tx, before, changes, input, ctx) {
        await requireFlowTable(tx, ctx, before.definition);
        const enabled = typeof input.enabled === 'boolean' ? input.enabled : before.enabled === true;
        const given = input.definition !== undefined;
        const raw = given ? input.definition : before.definition;
        if (enabled && (!isObject(raw) || isDraft(raw))) throw invalid([ENABLE_DRAFT], 'Invalid flow');
        const problems: ErrorDetail[] = [];
        let definition = parseFlowDefinition(raw, allowPrivate, problems);
        // A stored definition is checked again: a setting may have changed since it was written.
        if (enabled && !definition) throw invalid(problems.length > 0 ? problems : [ENABLE_DRAFT], 'Invalid flow');
        if (definition && given) {
          definition = await resolveDefinition(tx, ctx, catalog, definition);
          await requireFlowTable(tx, ctx, definition);
          changes.definition = dialect.encodeJson(definition);
        } else if (definition && ctx.grant) {
          // Any change to a flow (enabling it, say) is a write of its filter as stored.
          await requireFilterReads(tx, ctx, definition.trigger.table, await storedFilterReaches(tx, catalog, definition));
        }
        if (!enabled || !definition) return;
        const beforeTable = (before.definition as FlowDefinition | undefined)?.trigger?.table;
        if (before.enabled !== true || beforeTable !== definition.trigger.table) await startCursor(tx, before.id, definition.trigger.table);
      },
      async beforeDelete(tx, item, ctx) {
        await requireFlowTable(tx, ctx, item.definition);
        await tx.deleteFrom('rh_flow_cursors').where('flowId', '=', item.id).execute();
        await tx.deleteFrom('rh_flow_deliveries').where('flowId', '=', item.id).execute();
      },
    },
  };
}
