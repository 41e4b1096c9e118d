/** Measuring two sides against each other on a shared machine: paired rounds, and their median. */

/** The middle value; of an even number of values, the lower of the two middle ones. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
}

/**
 * `rounds` rounds, each measuring both sides back to back, alternating which goes first: a burst
 * of other load on the machine falls on both sides of one round, and neither side always runs
 * second. Answers each side's measurements in round order.
 */
export async function pairedRounds<K extends string, T>(rounds: number, sides: readonly [K, K], measure: (side: K) => Promise<T>): Promise<Record<K, T[]>> {
  const out = { [sides[0]]: [], [sides[1]]: [] } as unknown as Record<K, T[]>;
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [sides[1], sides[0]]) out[side].push(await measure(side));
  }
  return out;
}
