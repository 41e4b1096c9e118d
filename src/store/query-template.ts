import { type Compilable, type CompiledQuery, type QueryResult, SelectQueryNode } from 'kysely';
import { type Db, readRows } from './database.ts';

const MARK = '\u0000slot:';

/**
 * A query built and compiled once, then run with new arguments: the row routes' hot statements
 * skip the query builder. Built with markers for its arguments, so each SQL parameter is mapped
 * to the argument it stands for, in whatever order the dialect's compiler emits them. A template
 * may keep other values it was built with (`keep`), for queries cached by everything but their
 * arguments (a list's filter, by its text).
 */
export class QueryTemplate<R = Record<string, unknown>> {
  /** A SELECT: outside a transaction it may go to a read-only connection. */
  private readonly reads: boolean;

  private constructor(
    private readonly compiled: CompiledQuery,
    private readonly slots: (number | { value: unknown })[],
  ) {
    this.reads = SelectQueryNode.is(compiled.query);
  }

  static build<R = Record<string, unknown>>(make: (arg: (i: number) => string) => Compilable<unknown>, keep = false): QueryTemplate<R> {
    const compiled = make((i) => `${MARK}${i}`).compile();
    const slots = compiled.parameters.map((p) => {
      if (typeof p === 'string' && p.startsWith(MARK)) return Number(p.slice(MARK.length));
      if (!keep) throw new Error('a query template may bind only its arguments');
      return { value: p };
    });
    return new QueryTemplate(compiled, slots);
  }

  /** The statement's SQL text. */
  get sql(): string {
    return this.compiled.sql;
  }

  /** The statement with these arguments. */
  with(args: readonly unknown[]): CompiledQuery<R> {
    return { ...this.compiled, parameters: this.slots.map((s) => (typeof s === 'number' ? args[s] : s.value)) } as CompiledQuery<R>;
  }

  run(db: Db, args: readonly unknown[]): Promise<QueryResult<R>> {
    const query = this.with(args);
    if (this.reads) return readRows(db, query).then((rows) => ({ rows: rows as R[] }));
    return db.executeQuery<R>(query);
  }
}

const perDatabase = new WeakMap<Db, Map<string, QueryTemplate<unknown>>>();

/** The template named `key` for this database handle, built on first use; its rows are typed as `make`'s query says. */
export function cachedTemplate<R>(db: Db, key: string, make: (arg: (i: number) => string) => Compilable<R>): QueryTemplate<R> {
  let templates = perDatabase.get(db);
  if (!templates) {
    templates = new Map();
    perDatabase.set(db, templates);
  }
  let t = templates.get(key);
  if (!t) {
    t = QueryTemplate.build<R>(make);
    templates.set(key, t);
  }
  // A key names one statement, so the template it holds is the one `make` builds.
  return t as QueryTemplate<R>;
}
