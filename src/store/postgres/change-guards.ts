import { CompiledQuery } from 'kysely';
import { changeNumbers } from '../../domain/row-columns.ts';
import { readRows } from '../read-rows.ts';
import type { Db } from '../dialect.ts';

/**
 * PostgreSQL's guards on the change log's numbers (change-log.ts says why): before it takes a
 * number, a transaction holds a shared advisory lock naming the table and a bound no higher than
 * the numbers it will take, until it ends; a reader passes no number a guard may still commit.
 */

/** A guard's key: GUARD_BASE, the table's 20 bits times 2^41, and the bound modulo 2^41. */
export const GUARD_BASE = 2n ** 62n;
export const BOUND_SPAN = 2 ** 41;

const bitsOf = new Map<string, number>();

/** The 20 bits of a table's id (a UUID) its guards are named by; tables that share them only read more cautiously. */
export function tableBits(tableId: string): number {
  let bits = bitsOf.get(tableId);
  if (bits === undefined) {
    // Every write binds them: worked out once per table.
    bits = parseInt(tableId.replace(/-/g, '').slice(0, 5), 16) || 0;
    if (bitsOf.size >= 1000) bitsOf.clear();
    bitsOf.set(tableId, bits);
  }
  return bits;
}

/**
 * PostgreSQL: a CTE taking the transaction's guard on the table (its bits bound at `bits`), with
 * the last number its sequence handed out as the bound: the numbers taken after are higher.
 */
export const guardCte = (tableId: string, bits: string) =>
  `g as (select pg_advisory_xact_lock_shared(${GUARD_BASE}::bigint + ${bits}::bigint * ${BOUND_SPAN} + s.last_value % ${BOUND_SPAN}) as held from "${changeNumbers(tableId)}" s)`;

/**
 * The highest number of the table's entries a reader may pass: no entry numbered up to it will
 * commit later. PostgreSQL: the last number handed out is noted first, then the guards held, and
 * the caller reads after both (a later statement: a snapshot of its own). A guard's bound,
 * modulo 2^41, lies behind that last number, or ahead of it (a writer that began after: its
 * numbers are higher).
 */
export async function readableThrough(db: Db, tableId: string): Promise<number> {
  const numbers = `"${changeNumbers(tableId)}"`;
  // null when none was handed out yet; a table deleted has no sequence, and no entry still to come:
  // its deletion dropped the sequence, which waited for every writer that took a number from it.
  const query = (what: string) => readRows(db, CompiledQuery.raw(`select ${what}to_regclass($1) is null as gone`, [numbers]));
  let row: Record<string, unknown>;
  try {
    [row] = await query('pg_sequence_last_value(to_regclass($1)) as last, ');
  } catch (err) {
    // The table's deletion dropped the sequence after this statement found it, and committed while
    // the statement waited for the drop's lock ("could not open relation with OID"): then it is
    // gone, as above. (Unanswered, the error ended the table's streams before they had sent its
    // last changes, a client's reconnect then hearing 404, and failed a read of the feed with a 500.)
    // (Inside a transaction the error has ended it: the question fails too, and the error stands.)
    if (await query('').then(([r]) => r.gone === true, () => false)) return Number.MAX_SAFE_INTEGER;
    throw err;
  }
  if (row.gone === true) return Number.MAX_SAFE_INTEGER;
  const last = row.last as string | number | null;
  const handed = last === null ? 0 : Number(last);
  const guards = await readRows(
    db,
    CompiledQuery.raw(
      `select (k - ${GUARD_BASE}) % ${BOUND_SPAN} as bound from (
         -- Other advisory keys (a migration's is negative) would overflow the arithmetic: left out first.
         select case when classid::bigint between 1073741824 and 2147483647 then classid::bigint * 4294967296 + objid::bigint end as k
         from pg_locks where locktype = 'advisory' and objsubid = 1) l
       where k >= ${GUARD_BASE} and (k - ${GUARD_BASE}) / ${BOUND_SPAN} = $1`,
      [tableBits(tableId)],
    ),
  );
  let through = handed;
  for (const { bound } of guards) {
    const behind = ((((handed % BOUND_SPAN) - Number(bound)) % BOUND_SPAN) + BOUND_SPAN) % BOUND_SPAN;
    // Its numbers lie above its bound (or at it: a sequence not called yet starts there).
    if (behind < BOUND_SPAN / 2) through = Math.min(through, handed - behind - 1);
  }
  return through;
}
