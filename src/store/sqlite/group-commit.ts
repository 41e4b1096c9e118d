import type SqliteDatabase from 'better-sqlite3';

/** Runs one statement at once on the main connection, answering the rows it returns. */
export type Run = (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[];

/** What a write of a group may leave to the group (a change entry, written with the others of the group). */
export interface WriteGroup {
  /**
   * Runs `last` once every write of the group has run, just before the group commits, in the
   * order given. If it throws, every write of the group fails (nothing of it commits).
   */
  beforeCommit(last: (run: Run) => void): void;
}

/**
 * Runs `work` at once in a savepoint on the main connection, once no other transaction holds the
 * connection, and answers after its commit (rolled back to the savepoint when it throws); the writes
 * of one turn of the event loop commit together. `run` is runNow. For a single-row write and its
 * change entry: one step where the query builder's transaction takes five rounds of promises.
 * `atomic`, how the work is made all or nothing without a savepoint of its own (a savepoint is two
 * statements more):
 * - `true`: it runs one statement and no more (a statement that fails is backed out by SQLite
 *   itself); should the work throw after its statement ran, the whole group fails rather than
 *   commit the statement without what was to follow it.
 * - an Undo: when the work throws, `undo` backs out what it wrote, in the group's transaction (the
 *   statement that failed was backed out by SQLite); should undo throw, the whole group fails.
 */
export type WriteNow = <T>(work: (run: Run, group: WriteGroup) => T, atomic?: boolean | Undo) => Promise<T>;

/** Backs out what a write of a group wrote before it threw (WriteNow); throws when it cannot (the group then fails). */
export interface Undo {
  undo(run: Run): void;
}

/**
 * SQLite's writeNow, with group commit: the single-row writes of one turn of the event loop share
 * one transaction, each in a savepoint of its own (or, one statement or a write that undoes itself,
 * in none), and one commit. A commit writes the pages the writes changed to the log, and writes of
 * one turn change many of the same pages (the change log's, its counter's, an index's inner pages),
 * so one commit for several costs little more than for one. A write's promise settles after the commit: none is answered
 * before it is durable. A write that throws is rolled back to its savepoint alone; when SQLite has
 * rolled the whole transaction back (a full disk), or what the writes left for the end of the group
 * (WriteGroup.beforeCommit) or the commit fails, every write of the group fails with it.
 * `hold` runs the commit while no transaction of the query builder's holds the connection.
 */
export function groupCommits(raw: SqliteDatabase.Database, run: Run, hold: (commit: () => Promise<void>) => Promise<void>): WriteNow {
  interface Member {
    work: (run: Run, group: WriteGroup) => unknown;
    atomic: boolean | Undo;
    /** What the work answered, or threw (then it was rolled back to its savepoint). */
    outcome?: { value: unknown } | { error: unknown };
    resolve: (value: unknown) => void;
    reject: (error: unknown) => void;
  }
  interface Group {
    members: Member[];
    /** Whether its transaction has begun: a write joining then runs at once. */
    began: boolean;
    /** Why the whole group failed (nothing of it is committed). */
    failed?: { error: unknown };
    /** What its writes left to run before it commits (WriteGroup.beforeCommit). */
    last: ((run: Run) => void)[];
    hooks: WriteGroup;
  }
  let open: Group | undefined;
  const runMember = (group: Group, member: Member) => {
    if (group.failed) return;
    const { atomic } = member;
    if (typeof atomic === 'object') {
      try {
        member.outcome = { value: member.work(run, group.hooks) };
      } catch (error) {
        member.outcome = { error };
        try {
          if (!raw.inTransaction) throw error;
          atomic.undo(run);
        } catch (undoError) {
          group.failed = { error: undoError };
        }
      }
      return;
    }
    if (atomic) {
      let ran = false;
      const once: Run = (source, parameters) => {
        if (ran) throw new Error('writeNow: a one-statement write ran a second statement');
        const rows = run(source, parameters);
        ran = true;
        return rows;
      };
      try {
        member.outcome = { value: member.work(once, group.hooks) };
      } catch (error) {
        member.outcome = { error };
        // A statement that failed was backed out by SQLite; one that ran stands, and must not commit alone.
        if (ran || !raw.inTransaction) group.failed = { error };
      }
      return;
    }
    run('savepoint write_now', []);
    try {
      member.outcome = { value: member.work(run, group.hooks) };
      run('release write_now', []);
    } catch (error) {
      member.outcome = { error };
      if (!raw.inTransaction) group.failed = { error };
      else {
        run('rollback to write_now', []);
        run('release write_now', []);
      }
    }
  };
  const settle = (group: Group) => {
    for (const m of group.members) {
      if (m.outcome && 'error' in m.outcome) m.reject(m.outcome.error);
      else if (group.failed || !m.outcome) m.reject(group.failed?.error ?? new Error('writeNow: the write did not run'));
      else m.resolve(m.outcome.value);
    }
  };
  const commit = async (group: Group) => {
    try {
      run('begin immediate', []);
      group.began = true;
      for (const member of group.members) runMember(group, member);
      // The writes that come in this turn of the event loop join; then the group commits.
      await new Promise((resolve) => setImmediate(resolve));
      if (!group.failed) {
        for (const last of group.last) last(run);
        run('commit', []);
      }
    } catch (error) {
      group.failed ??= { error };
    } finally {
      if (open === group) open = undefined;
      if (raw.inTransaction) run('rollback', []);
      settle(group);
    }
  };
  return <T>(work: (run: Run, group: WriteGroup) => T, atomic: boolean | Undo = false) =>
    new Promise<T>((resolve, reject) => {
      const member: Member = { work, atomic, resolve: resolve as (value: unknown) => void, reject };
      if (open && !open.failed) {
        open.members.push(member);
        if (open.began) runMember(open, member);
        return;
      }
      const last: Group['last'] = [];
      const group: Group = { members: [member], began: false, last, hooks: { beforeCommit: (step) => void last.push(step) } };
      open = group;
      hold(() => commit(group)).catch((error: unknown) => {
        // Not run at all (the connection's holder failed): nothing of the group was written.
        group.failed ??= { error };
        if (open === group) open = undefined;
        settle(group);
      });
    });
}
