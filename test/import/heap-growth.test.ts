import assert from 'node:assert/strict';
import { it } from 'node:test';
import { givenHeapGrowing } from '../../src/import/heap-growth.ts';

// Imports bound V8's heap growth only where the operator gave no value of their own (heap-growth.ts).

it('finds the heap growth an operator gave the process, on its command line or in NODE_OPTIONS; the command line wins, as in Node', () => {
  assert.equal(givenHeapGrowing([]), null);
  assert.equal(givenHeapGrowing(['--max-old-space-size=512', '--enable-source-maps']), null);
  assert.equal(givenHeapGrowing(['--heap-growing-percent=50']), 50);
  assert.equal(givenHeapGrowing(['--heap_growing_percent=30']), 30);
  assert.equal(givenHeapGrowing(['--heap-growing-percent', '40']), 40);
  assert.equal(givenHeapGrowing([], '--max-old-space-size=512 --heap-growing-percent=25'), 25);
  assert.equal(givenHeapGrowing(['--heap-growing-percent=10'], '--heap-growing-percent=20'), 10);
  assert.equal(givenHeapGrowing([], '--heap-growing-percent=20 --heap-growing-percent=15'), 15);
  assert.equal(givenHeapGrowing([], '--heap-growing-percentage=20'), null);
});
