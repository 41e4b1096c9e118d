import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bootstrap } from '../../src/store/bootstrap.ts';
import { openDatabase } from '../../src/store/database.ts';
import { MIGRATION_VERSIONS, migrate } from '../../src/store/migrations.ts';
import { databaseKinds, scratchDatabase } from '../support/harness.ts';

// Instances share a database on PostgreSQL. (Several SQLite connections inside one process cannot
// show it: one waiting for the write lock blocks the event loop the holder needs to finish.)
const kind = 'postgres' as const;
if (databaseKinds().includes(kind)) describe('first start [postgres]', () => {
  for (let round = 1; round <= 3; round++) it(`instances migrating together on an empty database all succeed, each migration applied once (round ${round})`, async () => {
    const scratch = await scratchDatabase(kind);
    const instances = await Promise.all(Array.from({ length: 8 }, () => openDatabase(scratch.url)));
    try {
      await Promise.all(instances.map((d) => d.ping()));
      const applied = await Promise.all(instances.map((d) => migrate(d.db, d.dialect)));
      const all = applied.flat().sort((a, b) => a - b);
      assert.deepEqual(all, [...new Set(all)], 'no migration applied twice');
      assert.equal(all.length, MIGRATION_VERSIONS.length);
    } finally {
      for (const d of instances) await d.close();
      await scratch.drop();
    }
  });
  for (let round = 1; round <= 3; round++) it(`instances starting together on an empty database make one owner, one secret and one first key, printed once (round ${round})`, async () => {
    const scratch = await scratchDatabase(kind);
    const instances = await Promise.all(Array.from({ length: 8 }, () => openDatabase(scratch.url)));
    try {
      await migrate(instances[0].db, instances[0].dialect);
      // Every instance connected and ready, so they really start together.
      await Promise.all(instances.map((d) => d.ping()));
      const boots = await Promise.all(instances.map((d) => bootstrap(d.db, { secret: null, apiKey: null })));
      assert.equal(boots.filter((b) => b.createdKey !== null).length, 1);
      assert.equal(new Set(boots.map((b) => b.ownerId)).size, 1);
      assert.equal(new Set(boots.map((b) => b.secret)).size, 1);
      const keys = await instances[0].db.selectFrom('rh_api_keys').select('id').execute();
      assert.equal(keys.length, 1);
      const members = await instances[0].db.selectFrom('rh_members').select('id').execute();
      assert.equal(members.length, 1);
    } finally {
      for (const d of instances) await d.close();
      await scratch.drop();
    }
  });
});
