/**
 * Row numbers 0 … rows − 1 in a scattered order that reaches every row once in `rows` calls: each
 * the one before plus a stride prime to `rows` (7,919 rows apart, or the first number from
 * 7,919 mod rows up that is prime to it; 1, rows in order, for a table of exactly 7,919 rows),
 * so consecutive requests read rows far apart and, over a run, the whole table, as reads by id from
 * many clients do. (The benches drew `(n * 7919 + 13) % rows` before: it comes back to where it began
 * after 5,000 of 200,000 rows and 50,000 of 2,000,000, so a run read 2.5% of the table over and
 * over, a working set that stayed in every cache.)
 */
export function scatteredRows(rows: number, start = 13): () => number {
  let stride = 7919 % rows || 1;
  while (gcd(stride, rows) !== 1) stride++;
  let n = start % rows;
  return () => (n = (n + stride) % rows);
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
