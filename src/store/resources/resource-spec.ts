import type { Grant, RateLimit } from '../../domain/access.ts';
import type { ErrorDetail } from '../../domain/errors.ts';
import type { AttrType } from '../../domain/resource-query.ts';
import type { Meta, MetaDb } from '../meta-schema.ts';
import type { AnswerWithWrite } from '../change-entries.ts';

/** One attribute of a generic resource; its name is both the API key and the column name. */
export interface AttrSpec {
  type: AttrType;
  /** JSON Schema of a written value (without null; `nullable` adds it). */
  schema: Record<string, unknown>;
  nullable?: boolean;
  /** On create: must be given, may be given (default), or is never written by the client. */
  create?: 'required' | 'optional' | 'no';
  /** Whether PUT may change it (default true when it can be created). */
  update?: boolean;
  /** The value on create when the client leaves it out. */
  default?: () => unknown;
  /** Stored but never returned, filtered or sorted on (a key's hash). */
  hidden?: boolean;
  /** Returned and written, but not a column of the resource's table: hooks handle it. */
  virtual?: boolean;
}

/** Attribute values by name: a request body's, or the columns a write sets. */
export type Attrs = Record<string, unknown>;

/** An item as stored and answered: its attributes, and always its id. */
export interface Item extends Attrs {
  id: string;
}

export interface WriteContext {
  /** The member whose key makes the request: createdBy/updatedBy. */
  memberId: string;
  /** One timestamp for the whole request. */
  now: string;
  /** What the request's key may do, for the checks a write makes inside its transaction (no escalation, a flow's table); absent: the service itself. */
  grant?: Grant;
  /**
   * With `grant`: the request's key's own rate limit (null: none of its own, so the default), for no
   * escalation through the rate limit (api-keys.ts).
   */
  rateLimit?: RateLimit | null;
  /**
   * A request's answer its one single-row create keeps in the same atomic step (an
   * Idempotency-Key's, AnswerWithWrite; http/idempotency.ts): then any other write of the request is
   * refused before it writes (NotKeptByWrite), and the request runs again the general way.
   */
  keptAnswer?: AnswerWithWrite;
}

/** Where a resource needs more than rows in its own table. Every hook runs inside the write's transaction. */
export interface ResourceHooks {
  /** Turns a reference in a URL into the item's id (a table may be named by its code); undefined: none. */
  resolveId?(db: MetaDb, ref: string): Promise<string | undefined>;
  /** Checks beyond JSON Schema; paths relative to the item. Runs on bodies that failed the schema too: take nothing's shape for granted. */
  check?(input: Attrs, mode: 'create' | 'update'): ErrorDetail[];
  /** May change the columns; what it returns is added to the answer of this create only. */
  beforeInsert?(tx: MetaDb, columns: Item, input: Attrs, ctx: WriteContext): Promise<Attrs | void>;
  afterInsert?(tx: MetaDb, item: Item, input: Attrs, ctx: WriteContext): Promise<void>;
  beforeUpdate?(tx: MetaDb, before: Item, changes: Attrs, input: Attrs, ctx: WriteContext): Promise<void>;
  afterUpdate?(tx: MetaDb, item: Item, input: Attrs, ctx: WriteContext): Promise<void>;
  beforeDelete?(tx: MetaDb, item: Item, ctx: WriteContext): Promise<void>;
  afterDelete?(tx: MetaDb, item: Item, ctx: WriteContext): Promise<void>;
  /** Adds to items read what is not in their row (a table's fields). */
  decorate?(db: MetaDb, items: Item[]): Promise<void>;
}

/** The metadata tables that hold generic resources. */
export type ResourceTable = keyof Meta & ('rh_members' | 'rh_api_keys' | 'rh_environment_variables' | 'rh_flows' | 'rh_tables' | 'rh_flow_deliveries');

export interface ResourceSpec {
  /** The URL segment: /api/<name>. */
  name: string;
  /** The metadata table that holds it. */
  table: ResourceTable;
  /** How one item is named in messages. */
  label: string;
  attrs: Record<string, AttrSpec>;
  /** Relation name → the attribute holding a member id; the member is embedded under the name. */
  relations: Record<string, string>;
  hooks?: ResourceHooks;
  /** What a create answers beyond the item (what beforeInsert returns), by name: JSON Schemas, for the OpenAPI document. */
  createAnswers?: Record<string, Record<string, unknown>>;
  /**
   * Those of `createAnswers` that are stored nowhere, not even in an Idempotency-Key's kept answer
   * (an API key's secret, stored only as its hash): a replay of the create answers without them.
   */
  unkeptAnswers?: readonly string[];
  /**
   * Where an item names the user table it belongs to, for keys limited to some tables (CONTRACT
   * §12): they see only the items of their tables, and those naming none (a flow's draft). The
   * column holding the table's id, and `path` to it within the JSON when the column is json;
   * `list`: the column holds a JSON array of table ids, or ["*"] (an API key's `tables`), and such
   * a key sees the item only when it covers every one.
   */
  tableRef?: { column: string; path?: readonly string[]; list?: boolean };
  /** Only list and get: the service writes the items itself (flow deliveries). */
  readOnly?: boolean;
  /**
   * `POST /api/<name>/{id}/<action>`, answering the item after it (registered by the resource's own
   * route module): name → what it does and its error statuses, for the OpenAPI document.
   */
  actions?: Record<string, { summary: string; description: string; errors: number[] }>;
}

/** Relations every resource has: who created and who last updated it. */
export const AUDIT_RELATIONS = { createdByMember: 'createdBy', updatedByMember: 'updatedBy' } as const;

/** Attributes every item carries and only the service writes. */
export const SYSTEM_ATTRS: Record<string, AttrType> = {
  id: 'text',
  createdAt: 'timestamp',
  updatedAt: 'timestamp',
  createdBy: 'text',
  updatedBy: 'text',
};
