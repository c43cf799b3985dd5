import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableModelBinder } from '../../../src/runtime/http/model-binder.js';
import { MemoryStore } from '../../../src/runtime/persistence/memory-store.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import {
  createTestSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';

const runPostgres = await shouldRunPostgresTests('test/runtime/http/model-binder.test.ts');
const ID = '01J0000000000000000000MCHN';

async function execute(store: Store, sql: string): Promise<void> {
  if (store instanceof SqliteStore) store.database.exec(sql);
  else if (store instanceof PostgresStore) await store.pool.query(sql);
}

describe.each([
  ['sqlite', true],
  ['postgres', runPostgres],
])('tableModelBinder on %s', (kind, enabled) => {
  let store: Store;
  let schema: TestSchema | undefined;

  beforeAll(async () => {
    if (!enabled) return;
    if (kind === 'postgres') schema = await createTestSchema('http_model_binder');
    store = await openStore(schema?.url ?? 'sqlite::memory:', { migrate: true });
    await execute(
      store,
      'CREATE TABLE orders (id TEXT PRIMARY KEY, machine_id TEXT, total INTEGER)',
    );
    await execute(store, "INSERT INTO orders (id, machine_id, total) VALUES ('o-1', NULL, 5)");
  });

  afterAll(async () => {
    await store?.close();
    await schema?.drop();
  });

  it.skipIf(!enabled)(
    'should find a record by key and write the machine id to the attribute',
    async () => {
      const binder = tableModelBinder({ store, table: 'orders', key: 'id' });
      expect(await binder.find('missing')).toBeNull();
      const record = await binder.find('o-1');
      expect(record).toEqual({ id: 'o-1', machine_id: null, total: 5 });
      expect(binder.readMachineId(record!, 'machine_id')).toBeNull();
      await binder.writeMachineId(record!, 'machine_id', ID);
      expect(binder.readMachineId(record!, 'machine_id')).toBe(ID);
      expect(await binder.find('o-1')).toEqual({ id: 'o-1', machine_id: ID, total: 5 });
    },
  );

  it.skipIf(!enabled)('should find nothing for a key holding a NUL byte', async () => {
    // PostgreSQL text cannot hold NUL: the query itself would fail (invalid byte sequence).
    const binder = tableModelBinder({ store, table: 'orders', key: 'id' });
    expect(await binder.find('o-1\u0000')).toBeNull();
    expect(await binder.find('\u0000')).toBeNull();
  });

  it.skipIf(!enabled)('should refuse identifiers that are not plain names', async () => {
    expect(() => tableModelBinder({ store, table: 'orders; DROP TABLE x', key: 'id' })).toThrow(
      "tableModelBinder: 'table' must be a plain SQL identifier",
    );
    const binder = tableModelBinder({ store, table: 'orders', key: 'id' });
    const record = (await binder.find('o-1'))!;
    await expect(binder.writeMachineId(record, 'machine_id = 1 --', ID)).rejects.toThrow(
      "'attribute' must be a plain SQL identifier",
    );
  });
});

describe('tableModelBinder', () => {
  it('should need a SQL store', () => {
    expect(() =>
      tableModelBinder({ store: new MemoryStore(), table: 'orders', key: 'id' }),
    ).toThrow("tableModelBinder needs a SQLite or PostgreSQL store, got 'memory'.");
  });
});
