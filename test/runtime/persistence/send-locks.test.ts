/**
 * `send` on a SQLite file (docs/persistence.md "Locks"): lock row and load in one short write
 * transaction, the transition outside any transaction, commit + release in a second one. A lock
 * held elsewhere (another process, `withLock`, a job) or by this process refuses the event with
 * the last committed snapshot; expired locks are taken over; nothing is written on errors.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ulid } from 'ulid';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MachineAlreadyRunningException,
  MachineNotFoundException,
  MachineValidationException,
  NoTransitionDefinitionFoundException,
} from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { LOCK_FREE_MAX_MS } from '../../../src/runtime/engine/lock-free-sends.js';
import { initialize } from '../../../src/runtime/interpreter/initialize.js';
import { transition } from '../../../src/runtime/interpreter/transition.js';
import type { MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { counterMachine } from './fixtures/machines.js';

describe('MachineRuntime.send locks (SQLite file)', () => {
  let dir: string;
  let store: SqliteStore;
  let runtime: MachineRuntime;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mr-send-locks-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    store = new SqliteStore({ filename: join(dir, `${ulid()}.db`) });
    runtime = new MachineRuntime({ store });
  });
  afterEach(async () => {
    await runtime.close();
  });

  it('should take the lock with the load, release it with the commit, and leave no lock row', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    const lockAndLoad = vi.spyOn(store, 'lockAndLoad');
    const load = vi.spyOn(store, 'load');
    const release = vi.spyOn(store, 'releaseLock');
    const sent = await runtime.send(counterMachine, created.id, { type: 'INC', actor: 'u' });
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    // The snapshot came with the lock; the commit deleted the row (no third write).
    expect(load).not.toHaveBeenCalled();
    expect(release).not.toHaveBeenCalled();
    expect(sent.snapshot.context).toEqual({ count: 1 });
    expect(await runtime.restore(counterMachine, created.id)).toEqual(sent.snapshot);
    expect((await store.history(created.id)).slice(created.sequence)).toEqual(sent.history);
    expect(await store.readLock(created.id)).toBeNull();
  });

  it('should commit one of 20 concurrent sends of one process and refuse the others without a lock attempt', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    const lockAndLoad = vi.spyOn(store, 'lockAndLoad');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, () => runtime.send(counterMachine, created.id, { type: 'INC' })),
    );
    const committed = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(committed).toHaveLength(1);
    for (const outcome of refused) {
      expect(outcome.reason).toBeInstanceOf(MachineAlreadyRunningException);
      expect((outcome.reason as MachineAlreadyRunningException).snapshot).toEqual(created);
    }
    // The in-process map refused them: one database lock attempt in all.
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    const restored = await runtime.restore(counterMachine, created.id);
    expect(restored.context.count).toBe(1);
    const history = await store.history(created.id);
    expect(history.map((record) => record.sequence)).toEqual(history.map((_, i) => i + 1));
    expect(restored.sequence).toBe(history.length);
    // Free again once the first has committed.
    expect(
      (await runtime.send(counterMachine, created.id, { type: 'INC' })).snapshot.context,
    ).toEqual({ count: 2 });
  });

  it('should refuse while someone else holds a live lock, with the committed snapshot, writing nothing', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    const owner = ulid();
    await store.tryAcquireLock({ rootEventId: created.id, ownerId: owner, ttlMs: 60_000 });
    const error = await runtime
      .send(counterMachine, created.id, { type: 'INC' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MachineAlreadyRunningException);
    expect((error as MachineAlreadyRunningException).snapshot).toEqual(created);
    expect(await store.history(created.id)).toHaveLength(created.sequence);
    expect((await store.readLock(created.id))?.ownerId).toBe(owner);
  });

  it('should refuse sends while withLock holds the instance, and let the locked instance send', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    const count = await runtime.withLock(created.id, async (instance) => {
      await expect(
        runtime.send(counterMachine, created.id, { type: 'INC' }),
      ).rejects.toBeInstanceOf(MachineAlreadyRunningException);
      return (await instance.send(counterMachine, { type: 'INC' })).snapshot.context.count;
    });
    expect(count).toBe(1);
    expect(await store.readLock(created.id)).toBeNull();
  });

  it('should refuse while another connection holds the database write lock past the busy timeout, writing nothing', async () => {
    const busyStore = new SqliteStore({ filename: join(dir, `${ulid()}.db`), busyTimeoutMs: 50 });
    const busy = new MachineRuntime({ store: busyStore });
    const other = new Database(busyStore.filename);
    try {
      const { snapshot: created } = await busy.create(counterMachine);
      other.exec('BEGIN IMMEDIATE');
      const error = await busy
        .send(counterMachine, created.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineAlreadyRunningException);
      // WAL readers do not wait for the writer: the committed snapshot is read after the refusal.
      expect((error as MachineAlreadyRunningException).snapshot).toEqual(created);

      // The read failing as well: still contention, without a snapshot.
      const load = vi
        .spyOn(busyStore, 'load')
        .mockRejectedValueOnce(new Database.SqliteError('database is locked', 'SQLITE_BUSY'));
      const blind = await busy
        .send(counterMachine, created.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect(blind).toBeInstanceOf(MachineAlreadyRunningException);
      expect((blind as MachineAlreadyRunningException).snapshot).toBeNull();
      load.mockRestore();
      // Unknown ids stay 404 even then.
      await expect(busy.send(counterMachine, ulid(), { type: 'INC' })).rejects.toBeInstanceOf(
        MachineNotFoundException,
      );
      other.exec('ROLLBACK');

      expect(await busy.restore(counterMachine, created.id)).toEqual(created);
      expect(await busyStore.history(created.id)).toHaveLength(created.sequence);
      expect(await busyStore.readLock(created.id)).toBeNull();
      const { snapshot } = await busy.send(counterMachine, created.id, { type: 'INC' });
      expect(snapshot.context.count).toBe(1);
    } finally {
      other.close();
      await busy.close();
    }
  });

  it('should take over an expired lock, commit and leave no row', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await store.tryAcquireLock({ rootEventId: created.id, ownerId: ulid(), ttlMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 40));
    const { snapshot } = await runtime.send(counterMachine, created.id, { type: 'INC' });
    expect(snapshot.context.count).toBe(1);
    expect(await store.readLock(created.id)).toBeNull();
  });

  it('should write nothing when no transition accepts the event, and 404 unknown or foreign ids', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await expect(runtime.send(counterMachine, created.id, { type: 'NOPE' })).rejects.toBeInstanceOf(
      NoTransitionDefinitionFoundException,
    );
    expect(await store.history(created.id)).toHaveLength(created.sequence);
    expect(await runtime.restore(counterMachine, created.id)).toEqual(created);
    await expect(runtime.send(counterMachine, ulid(), { type: 'INC' })).rejects.toBeInstanceOf(
      MachineNotFoundException,
    );
  });

  it('should persist a failed validation guard, then throw', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await expect(
      runtime.send(counterMachine, created.id, { type: 'ADD', payload: { amount: -1 } }),
    ).rejects.toBeInstanceOf(MachineValidationException);
    const restored = await runtime.restore(counterMachine, created.id);
    expect(restored.context).toEqual(created.context);
    expect(restored.sequence).toBeGreaterThan(created.sequence);
    expect(await store.history(created.id)).toHaveLength(restored.sequence);
  });
});

/**
 * Lock-free sends (docs/persistence.md "Lock-free sends"): once an event type's transition was
 * quick, its next events take no lock row; the commit checks the row instead.
 */
describe('MachineRuntime.send without a lock row (SQLite file)', () => {
  let dir: string;
  let store: SqliteStore;
  let runtime: MachineRuntime;
  /**
   * Milliseconds the next transitions take, as the runtime measures them: `performance.now`
   * follows this clock, so which send is quick does not depend on the machine's load.
   */
  let spinMs = 0;
  let clock = 0;
  /** Runs inside the next transition (another process acting meanwhile). */
  let during: (() => void) | null = null;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mr-lock-free-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    spinMs = 0;
    clock = 0;
    during = null;
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    store = new SqliteStore({ filename: join(dir, `${ulid()}.db`) });
    runtime = new MachineRuntime({
      store,
      engine: {
        initialize,
        transition: (...args: Parameters<typeof transition>) => {
          clock += spinMs;
          during?.();
          during = null;
          return transition(...args);
        },
      },
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await runtime.close();
  });

  /** An instance whose INC is known quick: one INC sent through the locking path. */
  async function warmed(): Promise<MachineSnapshot> {
    const { snapshot } = await runtime.create(counterMachine);
    return (await runtime.send(counterMachine, snapshot.id, { type: 'INC' })).snapshot;
  }

  it('should commit a quick event type in one transaction, with no lock row at any time', async () => {
    const lockAndLoad = vi.spyOn(store, 'lockAndLoad');
    const commit = vi.spyOn(store, 'commit');
    const warm = await warmed();
    // The first INC of this runtime took the lock row: its speed was not known yet.
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    let lockDuring: unknown = 'unread';
    during = () => {
      lockDuring = new Database(store.filename, { readonly: true })
        .prepare('SELECT * FROM machine_locks')
        .all();
    };
    const sent = await runtime.send(counterMachine, warm.id, { type: 'INC' });
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    expect(lockDuring).toEqual([]);
    expect(commit.mock.calls.at(-1)![0]).toMatchObject({ lockFree: true });
    expect(sent.snapshot.context).toEqual({ count: 2 });
    expect(await runtime.restore(counterMachine, warm.id)).toEqual(sent.snapshot);
    const history = await store.history(warm.id);
    expect(history.map((record) => record.sequence)).toEqual(history.map((_, i) => i + 1));
  });

  it('should refuse at commit when another process took the lock during the transition, writing nothing', async () => {
    const warm = await warmed();
    const other = new Database(store.filename);
    try {
      during = () => {
        const now = Date.now();
        other
          .prepare(
            'INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context) VALUES (?, ?, ?, ?, ?)',
          )
          .run(
            warm.id,
            ulid(),
            new Date(now).toISOString(),
            new Date(now + 60_000).toISOString(),
            'x',
          );
      };
      const error = await runtime
        .send(counterMachine, warm.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineAlreadyRunningException);
      expect((error as MachineAlreadyRunningException).snapshot).toEqual(warm);
      expect(await store.history(warm.id)).toHaveLength(warm.sequence);
      // Refused while the row lives, by the read (before any transition) this time.
      const read = await runtime
        .send(counterMachine, warm.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect((read as MachineAlreadyRunningException).snapshot).toEqual(warm);
    } finally {
      other.close();
    }
  });

  it('should lose to another process whose send took the lock during the transition', async () => {
    const warm = await warmed();
    // Its INC is not known quick there: it takes the lock row (synchronously, in its first call).
    const other = new MachineRuntime({ store: new SqliteStore({ filename: store.filename }) });
    try {
      let theirs: Promise<unknown> = Promise.resolve();
      during = () => {
        theirs = other.send(counterMachine, warm.id, { type: 'INC' });
      };
      const [ours] = await Promise.allSettled([
        runtime.send(counterMachine, warm.id, { type: 'INC' }),
      ]);
      // `during` ran in our transition, before our send settled: their send has started.
      const [their] = await Promise.allSettled([theirs]);
      expect(ours.status).toBe('rejected');
      expect((ours as PromiseRejectedResult).reason).toBeInstanceOf(MachineAlreadyRunningException);
      expect(their.status).toBe('fulfilled');
      const restored = await runtime.restore(counterMachine, warm.id);
      expect(restored.context).toEqual({ count: 2 });
      const history = await store.history(warm.id);
      expect(history.map((record) => record.sequence)).toEqual(history.map((_, i) => i + 1));
      expect(restored.sequence).toBe(history.length);
    } finally {
      await other.close();
    }
  });

  it('should refuse at commit when the instance moved during the transition (sequence fence)', async () => {
    const warm = await warmed();
    const other = new Database(store.filename);
    try {
      during = () => {
        other
          .prepare(
            `UPDATE machine_instances SET sequence_number = sequence_number + 1,
               context = '{"count":41}' WHERE root_event_id = ?`,
          )
          .run(warm.id);
      };
      const error = await runtime
        .send(counterMachine, warm.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineAlreadyRunningException);
      // The refusal carries the state committed meanwhile; nothing of this step was written.
      expect((error as MachineAlreadyRunningException).snapshot).toMatchObject({
        context: { count: 41 },
      });
      expect(await store.history(warm.id)).toHaveLength(warm.sequence);
    } finally {
      other.close();
    }
  });

  it('should take the lock row again for the event after a slow transition of its type', async () => {
    const warm = await warmed();
    const lockAndLoad = vi.spyOn(store, 'lockAndLoad');
    spinMs = LOCK_FREE_MAX_MS * 5;
    await runtime.send(counterMachine, warm.id, { type: 'INC' });
    // That one ran lock-free (INC was quick); it was slow, so the next one announces itself.
    expect(lockAndLoad).not.toHaveBeenCalled();
    spinMs = 0;
    const reader = new Database(store.filename, { readonly: true });
    const locks = reader.prepare('SELECT context FROM machine_locks');
    let lockDuring: unknown = null;
    during = () => {
      lockDuring = locks.all();
    };
    await runtime.send(counterMachine, warm.id, { type: 'INC' });
    reader.close();
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    expect(lockDuring).toEqual([{ context: 'send' }]);
    // Quick again: lock-free again.
    await runtime.send(counterMachine, warm.id, { type: 'INC' });
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    expect(await store.readLock(warm.id)).toBeNull();
  });

  it('should commit one of 20 concurrent lock-free sends of one process and refuse the others with the committed state', async () => {
    const warm = await warmed();
    const commit = vi.spyOn(store, 'commit');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, () => runtime.send(counterMachine, warm.id, { type: 'INC' })),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes.filter((o) => o.status === 'rejected'))
      expect((outcome.reason as MachineAlreadyRunningException).snapshot).toEqual(warm);
    expect(commit).toHaveBeenCalledTimes(1);
    expect((await runtime.restore(counterMachine, warm.id)).context).toEqual({ count: 2 });
    // Free again.
    expect((await runtime.send(counterMachine, warm.id, { type: 'INC' })).snapshot.context).toEqual(
      { count: 3 },
    );
  });

  it('should refuse while withLock holds the instance, as on the locking path', async () => {
    const warm = await warmed();
    await runtime.withLock(warm.id, async () => {
      const error = await runtime
        .send(counterMachine, warm.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect((error as MachineAlreadyRunningException).snapshot).toEqual(warm);
    });
  });
});
