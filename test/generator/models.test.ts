import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveModelBinders } from '../../src/generator/models.js';
import { MemoryStore, openStore, type SqliteStore, type Store } from '../../src/runtime/index.js';

describe('resolveModelBinders', () => {
  let store: Store;

  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    (store as SqliteStore).database.exec(
      "CREATE TABLE invoices (number TEXT PRIMARY KEY, machine_id TEXT); INSERT INTO invoices VALUES ('INV-1', NULL);",
    );
  });

  afterEach(async () => {
    await store.close();
  });

  it('should bind a table model to the rows of that table in the store', async () => {
    const { Invoice } = resolveModelBinders(
      { Invoice: { table: 'invoices', key: 'number' } },
      store,
    );
    const record = await Invoice!.find('INV-1');
    expect(record).toEqual({ number: 'INV-1', machine_id: null });
    await Invoice!.writeMachineId(record, 'machine_id', '01J0000000000000000000000A');
    expect(Invoice!.readMachineId(await Invoice!.find('INV-1'), 'machine_id')).toBe(
      '01J0000000000000000000000A',
    );
    expect(await Invoice!.find('INV-404')).toBeNull();
  });

  it('should keep a binder object of the config as it is', () => {
    const binder = { find: () => null, readMachineId: () => null, writeMachineId: () => undefined };
    expect(resolveModelBinders({ Order: binder }, store)).toEqual({ Order: binder });
    expect(resolveModelBinders({ Order: binder }, store)['Order']).toBe(binder);
  });

  it('should resolve no model when the config has none', () => {
    expect(resolveModelBinders(undefined, store)).toEqual({});
  });

  it('should refuse a table model on a store without SQL tables', () => {
    expect(() =>
      resolveModelBinders({ Invoice: { table: 'invoices', key: 'number' } }, new MemoryStore()),
    ).toThrow("tableModelBinder needs a SQLite or PostgreSQL store, got 'memory'.");
  });
});
