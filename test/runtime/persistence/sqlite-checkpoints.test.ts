/**
 * WAL checkpoints off the request thread (docs/persistence.md "Checkpoints"): a SQLite file store
 * starts a checkpoint thread after its first commits, raises its own connection's automatic
 * checkpoint to the fallback, and stops the thread on close; `inline` and `:memory:` keep
 * SQLite's default. Real files, real threads.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import {
  CHECKPOINT_WORKER_AFTER_COMMITS,
  SqliteStore,
} from '../../../src/runtime/persistence/sqlite-store.js';
import { startFixture } from '../../support/child-process.js';
import { counterMachine } from './fixtures/machines.js';

const CLOSER = fileURLToPath(new URL('./fixtures/close-after-checkpoints.ts', import.meta.url));

describe('SQLite checkpoints', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mr-checkpoints-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Sends `count` events to one new instance; returns its id. */
  async function commits(runtime: MachineRuntime, count: number): Promise<string> {
    const { snapshot } = await runtime.create(counterMachine);
    for (let index = 1; index < count; index += 1)
      await runtime.send(counterMachine, snapshot.id, { type: 'INC' });
    return snapshot.id;
  }

  it('should checkpoint from a thread once the store has committed, and stop it on close', async () => {
    const filename = join(dir, `${ulid()}.db`);
    const store = new SqliteStore({ filename });
    const runtime = new MachineRuntime({ store });
    let id: string;
    try {
      id = await commits(runtime, CHECKPOINT_WORKER_AFTER_COMMITS - 1);
      expect(store.checkpointWorker).toBeNull();
      expect(store.database.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      await runtime.send(counterMachine, id, { type: 'INC' });
      const worker = store.checkpointWorker!;
      expect(worker).not.toBeNull();
      // The store's own connection checkpoints only past the fallback now.
      expect(store.database.pragma('wal_autocheckpoint', { simple: true })).toBe(8000);
      // The thread's first checkpoint (shared memory) can be seen before its 'ready' message
      // (an event of this thread) arrives: wait for both.
      for (
        let round = 0;
        round < 400 && (worker.checkpoints.count === 0 || !worker.running);
        round += 1
      ) {
        await runtime.send(counterMachine, id, { type: 'INC' });
        await sleep(25);
      }
      expect(worker.running).toBe(true);
      expect(worker.checkpoints.count).toBeGreaterThan(0);
      expect(worker.checkpoints.lastCheckpointedPages).toBeGreaterThan(0);
    } finally {
      await runtime.close();
    }
    // The thread's connection closed first, the store's last: it removed the WAL.
    expect(existsSync(`${filename}-wal`)).toBe(false);
    const reader = new Database(filename, { readonly: true });
    try {
      const row = reader
        .prepare('SELECT sequence_number FROM machine_instances WHERE root_event_id = ?')
        .get(id) as { sequence_number: number };
      const events = reader
        .prepare('SELECT count(*) AS n FROM machine_events WHERE root_event_id = ?')
        .get(id) as { n: number };
      expect(events.n).toBe(row.sequence_number);
    } finally {
      reader.close();
    }
  }, 60_000);

  it('should keep checkpoints on the committing connection with inline, and in memory', async () => {
    for (const options of [
      { filename: join(dir, `${ulid()}.db`), checkpoints: 'inline' as const },
      { filename: ':memory:' },
    ]) {
      const store = new SqliteStore(options);
      const runtime = new MachineRuntime({ store });
      try {
        await commits(runtime, CHECKPOINT_WORKER_AFTER_COMMITS + 5);
        expect(store.checkpointWorker).toBeNull();
        if (options.filename !== ':memory:')
          expect(store.database.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      } finally {
        await runtime.close();
      }
    }
  }, 60_000);

  it('should give the committing connection its checkpoints back when the thread is stopped', async () => {
    const store = new SqliteStore({ filename: join(dir, `${ulid()}.db`) });
    const runtime = new MachineRuntime({ store });
    try {
      await commits(runtime, CHECKPOINT_WORKER_AFTER_COMMITS + 1);
      await store.checkpointWorker!.stop();
      expect(store.checkpointWorker!.running).toBe(false);
      expect(store.database.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    } finally {
      await runtime.close();
    }
  }, 60_000);

  it('should resolve close() with the thread running and nothing else keeping the process alive', async () => {
    // The thread is unref'd: close() must keep the event loop alive until it exits, or its
    // promise never settles once the process has nothing else to do (a server after its last
    // request, a script).
    const child = startFixture(CLOSER, ['--file', join(dir, `${ulid()}.db`)]);
    const closed = child.waitForLine((line) => line === 'CLOSED', 60_000);
    const exit = await child.exited;
    expect({ exit, stderr: child.stderr() }).toEqual({ exit: 0, stderr: '' });
    await expect(closed).resolves.toBe('CLOSED');
  }, 90_000);
});
