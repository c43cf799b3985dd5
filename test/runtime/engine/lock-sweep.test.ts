/**
 * Expired lock rows left by killed processes are deleted by the worker's periodic sweep, without
 * waiting for the instance to be used again; live locks stay. A real process takes the lock and
 * is SIGKILLed, on a SQLite file and on PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { ulid } from 'ulidx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../../src/runtime/engine/worker.js';
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
