/**
 * A SQLite file whose write lock another connection holds past the busy timeout: the store's
 * commit reports `StoreBusyError` (nothing applied) and `send` answers contention with the last
 * committed snapshot. And a runtime opened without its worker closes without reporting anything.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MachineAlreadyRunningException,
  MachineRuntime,
  SqliteStore,
  StoreBusyError,
} from '../../../src/runtime/index.js';
import { makeStep } from '../../support/stores.js';
import { counterMachine } from '../persistence/fixtures/machines.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mr-store-busy-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

describe('SqliteStore.commit', () => {
  it('should report SQLITE_BUSY as StoreBusyError and apply nothing', async () => {
    const filename = join(dir, 'machines.db');
    const store = new SqliteStore({ filename, busyTimeoutMs: 20 });
    await store.migrate();
    const other = new SqliteStore({ filename });
    try {
      other.database.prepare('BEGIN IMMEDIATE').run();
      const step = makeStep({ machineId: 'counter', value: ['counter.counting'], context: {} });

      await expect(store.commit(step)).rejects.toBeInstanceOf(StoreBusyError);
      other.database.prepare('ROLLBACK').run();
      expect(await store.load(step.snapshot.id)).toBeNull();
    } finally {
      await other.close();
      await store.close();
    }
  });
});

describe('MachineRuntime.send on a busy SQLite file', () => {
  it('should answer contention with the last committed snapshot', async () => {
    const filename = join(dir, 'machines.db');
    const store = new SqliteStore({ filename, busyTimeoutMs: 20 });
    await store.migrate();
    const runtime = new MachineRuntime({ store });
    const other = new SqliteStore({ filename });
    try {
      const { snapshot } = await runtime.create(counterMachine);
      // The lock row is taken before the other connection locks the database; the commit meets it.
      const locked = vi.spyOn(store, 'lockAndLoad').mockImplementation(async (request) => {
        locked.mockRestore();
        const acquired = await store.lockAndLoad(request);
        other.database.prepare('BEGIN IMMEDIATE').run();
        return acquired;
      });

      const sent = runtime.send(counterMachine, snapshot.id, { type: 'INC' });

      await expect(sent).rejects.toBeInstanceOf(MachineAlreadyRunningException);
      await expect(sent).rejects.toMatchObject({ snapshot });
      other.database.prepare('ROLLBACK').run();
    } finally {
      await other.close();
      await runtime.close();
    }
  });
});

describe('MachineRuntime.open({ worker: false })', () => {
  it('should close without reporting anything', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const runtime = await MachineRuntime.open({
      databaseUrl: `sqlite:${join(dir, 'machines.db')}`,
      worker: false,
    });

    await runtime.close();

    expect(errors).not.toHaveBeenCalled();
  });
});
