/**
 * Expired lock rows left by killed processes are deleted by the worker's periodic sweep, without
 * waiting for the instance to be used again; live locks stay. A real process takes the lock and
 * is SIGKILLed, on a SQLite file and on PostgreSQL. The same sweep deletes Idempotency-Key
 * records past their ttl, in a worker and in a server runtime running its own jobs.
 */
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { startWorker } from '../../../src/runtime/engine/worker.js';
import { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { LockManager } from '../../../src/runtime/persistence/locks.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { startFixture } from '../../support/child-process.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';

const HOLD_LOCK = fileURLToPath(new URL('./fixtures/hold-lock.ts', import.meta.url));
const TTL_MS = 300;

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('engine/lock-sweep.test.ts');
if (postgres) backends.push(postgres);

/**
 * A lock row written by a process that is then SIGKILLed; resolves once the row has expired.
 * `sweeping`: a sweeper already runs and may delete the row as soon as it expires, so its
 * presence is not checked (on a loaded machine the kill alone can outlast the TTL).
 */
async function lockOfKilledProcess(store: Store, url: string, sweeping = false): Promise<string> {
  const rootEventId = ulid();
  const holder = startFixture(HOLD_LOCK, [url, rootEventId, String(TTL_MS)]);
  const line = await holder.waitForLine((text) => text.startsWith('LOCKED '), 45_000);
  holder.child.kill('SIGKILL');
  expect(await holder.exited).toBe('SIGKILL');
  if (!sweeping)
    expect(await store.readLock(rootEventId)).toMatchObject({ ownerId: line.split(' ')[1] });
  await delay(TTL_MS + 100);
  return rootEventId;
}

async function waitUntilGone(store: Store, rootEventId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await store.readLock(rootEventId)) !== null) {
    if (Date.now() > deadline) throw new Error(`lock row of ${rootEventId} was never swept`);
    await delay(25);
  }
}

describe.each(backends)('expired lock sweep on $name', (backend) => {
  let store: Store;

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
  });
  afterAll(async () => {
    await store?.close();
    await backend.tearDown();
  });

  it('should keep the expired row of a killed process while nothing sweeps', async () => {
    const rootEventId = await lockOfKilledProcess(store, backend.url());
    await delay(300);
    expect(await store.readLock(rootEventId)).not.toBeNull();
    expect(await store.sweepExpiredLocks()).toBeGreaterThanOrEqual(1);
    expect(await store.readLock(rootEventId)).toBeNull();
  }, 60_000);

  it('should sweep it in a worker opened on the URL, and leave live locks alone', async () => {
    const expired = await lockOfKilledProcess(store, backend.url());
    const live = await new LockManager(store, 60_000).tryAcquire(ulid(), 'live holder');
    // The first sweep runs at start; the second killed holder shows the sweep repeats.
    const worker = await startWorker({
      databaseUrl: backend.url(),
      lockSweepIntervalMs: 50,
      handleSignals: false,
      onError: (error) => {
        throw error;
      },
    });
    try {
      await waitUntilGone(store, expired);
      const again = await lockOfKilledProcess(store, backend.url(), true);
      await waitUntilGone(store, again);
      expect(await store.readLock(live!.rootEventId)).toMatchObject({ ownerId: live!.ownerId });
    } finally {
      await worker.stop();
      await live?.release();
    }
  }, 90_000);

  it('should sweep in a worker given an open store and leave that store open', async () => {
    const expired = await lockOfKilledProcess(store, backend.url());
    const worker = await startWorker({ store, lockSweepIntervalMs: 50, handleSignals: false });
    try {
      await waitUntilGone(store, expired);
    } finally {
      await worker.stop();
    }
    expect(await store.readLock(expired)).toBeNull();
    expect(await store.load(ulid())).toBeNull();
  }, 60_000);

  it('should not sweep when lockSweepIntervalMs is false', async () => {
    const expired = await lockOfKilledProcess(store, backend.url());
    const worker = await startWorker({ store, lockSweepIntervalMs: false, handleSignals: false });
    try {
      await delay(300);
      expect(await store.readLock(expired)).not.toBeNull();
    } finally {
      await worker.stop();
      await store.sweepExpiredLocks();
    }
  }, 60_000);
});

/** Idempotency-Key records of `scope` in the store's table (read directly, nothing claimed). */
async function keysOf(store: Store, scope: string): Promise<string[]> {
  if (store instanceof PostgresStore) {
    const result = await store.pool.query<{ key: string }>(
      'SELECT idempotency_key AS key FROM machine_idempotency_keys WHERE scope = $1 ORDER BY key',
      [scope],
    );
    return result.rows.map((row) => row.key);
  }
  return (
    (store as SqliteStore).database
      .prepare(
        'SELECT idempotency_key AS key FROM machine_idempotency_keys WHERE scope = ? ORDER BY key',
      )
      .all(scope) as { key: string }[]
  ).map((row) => row.key);
}

/** A `done` record of `key` in `scope`, expiring after `ttlMs`. */
async function storeKey(store: Store, scope: string, key: string, ttlMs: number): Promise<void> {
  const ownerId = ulid();
  const claim = { scope, key, fingerprint: 'f', ownerId, leaseMs: 60_000, ttlMs };
  expect(await store.idempotencyKeys.claim(claim)).toEqual({ kind: 'claimed' });
  const response = { status: 200, body: { ok: true } };
  expect(await store.idempotencyKeys.complete({ scope, key, ownerId, response })).toBe(true);
}

async function waitUntilKeys(store: Store, scope: string, expected: string[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const keys = await keysOf(store, scope);
    if (JSON.stringify(keys) === JSON.stringify(expected)) return;
    if (Date.now() > deadline) throw new Error(`keys of ${scope}: ${keys.join(', ')}`);
    await delay(25);
  }
}

describe.each(backends)('expired Idempotency-Key sweep on $name', (backend) => {
  let store: Store;

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
  });
  afterAll(async () => {
    await store?.close();
    await backend.tearDown();
  });

  it('should keep expired records while nothing sweeps', async () => {
    const scope = `idle ${ulid()}`;
    await storeKey(store, scope, 'expired', 1);
    await delay(50);
    expect(await keysOf(store, scope)).toEqual(['expired']);
  });

  it('should delete expired records in a worker and keep live ones', async () => {
    const scope = `worker ${ulid()}`;
    await storeKey(store, scope, 'expired', 1);
    await storeKey(store, scope, 'live', 86_400_000);
    const worker = await startWorker({
      databaseUrl: backend.url(),
      lockSweepIntervalMs: 50,
      handleSignals: false,
      onError: (error) => {
        throw error;
      },
    });
    try {
      await waitUntilKeys(store, scope, ['live']);
      // The sweep repeats: a record expiring later goes too.
      await storeKey(store, scope, 'later', 1);
      await waitUntilKeys(store, scope, ['live']);
    } finally {
      await worker.stop();
    }
  }, 60_000);

  it('should delete expired records in a server runtime that runs its own jobs', async () => {
    const scope = `server ${ulid()}`;
    await storeKey(store, scope, 'expired', 1);
    await storeKey(store, scope, 'live', 86_400_000);
    const failures: unknown[] = [];
    const runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      lockSweepIntervalMs: 50,
      logger: { error: (fields, message) => void failures.push({ fields, message }) },
    });
    try {
      await waitUntilKeys(store, scope, ['live']);
      await storeKey(store, scope, 'later', 1);
      await waitUntilKeys(store, scope, ['live']);
    } finally {
      await runtime.close();
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('should not sweep in a runtime opened with worker: false or lockSweepIntervalMs: false', async () => {
    const scope = `off ${ulid()}`;
    await storeKey(store, scope, 'expired', 1);
    const noWorker = await MachineRuntime.open({ databaseUrl: backend.url(), worker: false });
    const noSweep = await MachineRuntime.open({
      databaseUrl: backend.url(),
      lockSweepIntervalMs: false,
    });
    try {
      await delay(300);
      expect(await keysOf(store, scope)).toEqual(['expired']);
    } finally {
      await noWorker.close();
      await noSweep.close();
      await store.idempotencyKeys.sweepExpired();
    }
  }, 60_000);
});
