/**
 * The one suite every `Store` passes: memory, SQLite (memory and file) and PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ulid } from 'ulid';
import { SequenceConflictError, type Store } from '../../../src/runtime/persistence/store.js';
import { allBackends, makeStep } from '../../support/stores.js';

const backends = await allBackends('store');

describe.each(backends)('Store ($name)', (backend) => {
  let store: Store;
  let machineId: string;
  let counter = 0;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    // A machine id per test keeps queries of tests sharing one database apart.
    machineId = `m${++counter}_${Math.random().toString(36).slice(2, 7)}`;
  });
  afterEach(() => store.close());

  describe('load', () => {
    it('should return null for an unknown instance', async () => {
      expect(await store.load(ulid())).toBeNull();
    });

    it('should return the committed snapshot with context key order and values intact', async () => {
      const context = { zeta: 1, alpha: { nested: [1, 'two', null], é: 'ü' }, empty: {}, list: [] };
      const step = makeStep({ machineId, value: ['m.idle'], context });
      await store.commit(step);
      const loaded = await store.load(step.snapshot.id);
      expect(loaded).toEqual(step.snapshot);
      expect(JSON.stringify(loaded!.context)).toBe(JSON.stringify(context));
    });

    it('should reflect the latest step only', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 0 } });
      await store.commit(created);
      const next = makeStep({
        machineId,
        from: created.snapshot,
        value: ['m.b'],
        context: { n: 1 },
        status: 'done',
      });
      await store.commit(next);
      expect(await store.load(created.snapshot.id)).toEqual(next.snapshot);
    });
  });

  describe('commit', () => {
    it('should append history in sequence order', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 0 }, records: 4 });
      await store.commit(created);
      const next = makeStep({
        machineId,
        from: created.snapshot,
        value: ['m.b'],
        context: { n: 1 },
        records: 3,
        type: 'GO',
        payload: { amount: 5 },
      });
      await store.commit(next);
      const history = await store.history(created.snapshot.id);
      expect(history).toEqual([...created.history, ...next.history]);
      expect(history.map((record) => record.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    });

    it('should commit a step with hundreds of history records', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 0 }, records: 250 });
      await store.commit(created);
      expect(await store.history(created.snapshot.id)).toEqual(created.history);
    });

    it('should refuse to create an instance twice', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: {} });
      await store.commit(created);
      await expect(store.commit({ ...created })).rejects.toBeInstanceOf(SequenceConflictError);
      expect(await store.history(created.snapshot.id)).toHaveLength(created.history.length);
    });

    it('should fence out a step computed from a stale sequence, writing nothing', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 0 } });
      await store.commit(created);
      const first = makeStep({
        machineId,
        from: created.snapshot,
        value: ['m.b'],
        context: { n: 1 },
      });
      const stale = makeStep({
        machineId,
        from: created.snapshot,
        value: ['m.c'],
        context: { n: 2 },
      });
      await store.commit(first);
      await expect(store.commit(stale)).rejects.toBeInstanceOf(SequenceConflictError);
      expect(await store.load(created.snapshot.id)).toEqual(first.snapshot);
      expect(await store.history(created.snapshot.id)).toEqual([
        ...created.history,
        ...first.history,
      ]);
      expect((await store.currentStates(created.snapshot.id)).map((row) => row.stateId)).toEqual([
        'm.b',
      ]);
    });

    it('should fence out a step of another machine definition', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: {} });
      await store.commit(created);
      const foreign = makeStep({
        machineId: `${machineId}_other`,
        from: created.snapshot,
        value: ['x'],
        context: {},
      });
      await expect(store.commit(foreign)).rejects.toBeInstanceOf(SequenceConflictError);
    });

    it('should write nothing when one row of the step fails', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 0 } });
      await store.commit(created);
      const next = makeStep({
        machineId,
        from: created.snapshot,
        value: ['m.b'],
        context: { n: 1 },
        records: 4,
      });
      // The third record reuses an existing id: the insert fails mid-transaction.
      next.history[2] = { ...next.history[2]!, id: created.history[0]!.id };
      await expect(store.commit(next)).rejects.toThrow();
      expect(await store.load(created.snapshot.id)).toEqual(created.snapshot);
      expect(await store.history(created.snapshot.id)).toEqual(created.history);
      expect((await store.currentStates(created.snapshot.id)).map((row) => row.stateId)).toEqual([
        'm.a',
      ]);
      // The instance is still usable afterwards.
      const retry = makeStep({
        machineId,
        from: created.snapshot,
        value: ['m.b'],
        context: { n: 1 },
      });
      await store.commit(retry);
      expect(await store.load(created.snapshot.id)).toEqual(retry.snapshot);
    });

    it('should reject history that does not continue the snapshot', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: {} });
      created.history[1] = { ...created.history[1]!, sequence: 7 };
      await expect(store.commit(created)).rejects.toThrow(/does not continue/);
      expect(await store.load(created.snapshot.id)).toBeNull();
    });
  });

  describe('current states', () => {
    it('should diff-sync rows: states that stay keep their entered time', async () => {
      const t0 = new Date('2030-01-01T00:00:00.000Z');
      const t1 = new Date('2030-01-01T00:01:00.000Z');
      const t2 = new Date('2030-01-01T00:02:00.000Z');
      const created = makeStep({ machineId, value: ['p.a.one', 'p.b.one'], context: {}, now: t0 });
      await store.commit(created);
      const moved = makeStep({
        machineId,
        from: created.snapshot,
        value: ['p.a.two', 'p.b.one'],
        context: {},
        now: t1,
      });
      await store.commit(moved);
      const selfLoop = makeStep({
        machineId,
        from: moved.snapshot,
        value: ['p.a.two', 'p.b.one'],
        context: {},
        now: t2,
      });
      await store.commit(selfLoop);
      expect(await store.currentStates(created.snapshot.id)).toEqual([
        expect.objectContaining({
          stateId: 'p.a.two',
          stateEnteredAt: t1.toISOString(),
          machineId,
        }),
        expect.objectContaining({
          stateId: 'p.b.one',
          stateEnteredAt: t0.toISOString(),
          scenarioClass: null,
        }),
      ]);
    });

    it('should find instances in a state, oldest entry first, with limit and enteredBefore', async () => {
      const times = [3, 1, 2].map((minute) => new Date(Date.UTC(2031, 0, 1, 0, minute)));
      const ids: string[] = [];
      for (const now of times) {
        const step = makeStep({ machineId, value: ['order.submitted'], context: {}, now });
        await store.commit(step);
        ids.push(step.snapshot.id);
      }
      // Another state and another machine in the same state are not returned.
      await store.commit(makeStep({ machineId, value: ['order.approved'], context: {} }));
      await store.commit(
        makeStep({ machineId: `${machineId}_x`, value: ['order.submitted'], context: {} }),
      );

      const all = await store.findInstancesInState(machineId, 'order.submitted', { limit: 10 });
      expect(all.map((row) => row.rootEventId)).toEqual([ids[1], ids[2], ids[0]]);
      expect(all[0]).toEqual({
        rootEventId: ids[1],
        machineId,
        stateId: 'order.submitted',
        stateEnteredAt: times[1]!.toISOString(),
      });
      const limited = await store.findInstancesInState(machineId, 'order.submitted', { limit: 2 });
      expect(limited.map((row) => row.rootEventId)).toEqual([ids[1], ids[2]]);
      const before = await store.findInstancesInState(machineId, 'order.submitted', {
        limit: 10,
        enteredBefore: times[0],
      });
      expect(before.map((row) => row.rootEventId)).toEqual([ids[1], ids[2]]);
    });

    it('should drop an instance from a state it left', async () => {
      const created = makeStep({ machineId, value: ['order.submitted'], context: {} });
      await store.commit(created);
      await store.commit(
        makeStep({ machineId, from: created.snapshot, value: ['order.approved'], context: {} }),
      );
      expect(await store.findInstancesInState(machineId, 'order.submitted', { limit: 10 })).toEqual(
        [],
      );
      expect(
        await store.findInstancesInState(machineId, 'order.approved', { limit: 10 }),
      ).toHaveLength(1);
    });
  });

  describe('history', () => {
    it('should page with afterSequence and limit', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: {}, records: 6 });
      await store.commit(created);
      const page = await store.history(created.snapshot.id, { afterSequence: 2, limit: 3 });
      expect(page.map((record) => record.sequence)).toEqual([3, 4, 5]);
      expect(await store.history(ulid())).toEqual([]);
    });
  });

  describe('locks', () => {
    it('should give a lock to one owner at a time and release it only for its owner', async () => {
      const id = ulid();
      const [a, b] = [ulid(), ulid()];
      expect(
        await store.tryAcquireLock({ rootEventId: id, ownerId: a, ttlMs: 60_000, context: 'send' }),
      ).toBe(true);
      expect(await store.tryAcquireLock({ rootEventId: id, ownerId: b, ttlMs: 60_000 })).toBe(
        false,
      );
      expect(await store.readLock(id)).toEqual(
        expect.objectContaining({ rootEventId: id, ownerId: a, context: 'send' }),
      );
      expect(await store.releaseLock(id, b)).toBe(false);
      expect(await store.releaseLock(id, a)).toBe(true);
      expect(await store.readLock(id)).toBeNull();
      expect(await store.tryAcquireLock({ rootEventId: id, ownerId: b, ttlMs: 60_000 })).toBe(true);
      await store.releaseLock(id, b);
    });

    it('should let a new owner take over an expired lock, and the old owner not release it', async () => {
      const id = ulid();
      const [dead, next] = [ulid(), ulid()];
      expect(await store.tryAcquireLock({ rootEventId: id, ownerId: dead, ttlMs: 30 })).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(await store.tryAcquireLock({ rootEventId: id, ownerId: next, ttlMs: 60_000 })).toBe(
        true,
      );
      expect(await store.releaseLock(id, dead)).toBe(false);
      expect((await store.readLock(id))?.ownerId).toBe(next);
      await store.releaseLock(id, next);
    });

    it('should give a contended lock to exactly one of many concurrent attempts', async () => {
      const id = ulid();
      const owners = Array.from({ length: 20 }, () => ulid());
      const results = await Promise.all(
        owners.map((ownerId) => store.tryAcquireLock({ rootEventId: id, ownerId, ttlMs: 60_000 })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('should load for a read with the lock expiry in one step: none, held, released, unknown id', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 1, z: [true] } });
      await store.commit(created);
      const id = created.snapshot.id;
      expect(await store.loadForRead(id)).toEqual({
        snapshot: created.snapshot,
        lockExpiresAt: null,
      });
      const owner = ulid();
      await store.tryAcquireLock({ rootEventId: id, ownerId: owner, ttlMs: 60_000 });
      const locked = await store.loadForRead(id);
      expect(locked?.snapshot).toEqual(created.snapshot);
      expect(locked?.lockExpiresAt).toBe(Date.parse((await store.readLock(id))!.expiresAt));
      expect(locked!.lockExpiresAt! - Date.now()).toBeGreaterThan(30_000);
      await store.releaseLock(id, owner);
      expect((await store.loadForRead(id))?.lockExpiresAt).toBeNull();
      expect(await store.loadForRead(ulid())).toBeNull();
    });

    it("should load for a read a child's parent and a done status, as load does", async () => {
      const parent = makeStep({ machineId, value: ['m.a'], context: {} });
      await store.commit(parent);
      const child = makeStep({
        machineId: 'child',
        value: ['child.done'],
        context: { ok: true, list: [1, 'two'] },
        status: 'done',
      });
      child.snapshot.parent = { machineId, id: parent.snapshot.id };
      await store.commit(child);
      const read = await store.loadForRead(child.snapshot.id);
      expect(read).toEqual({ snapshot: child.snapshot, lockExpiresAt: null });
      expect(read?.snapshot).toEqual(await store.load(child.snapshot.id));
    });

    it('should lock and load in one step: the lock with the snapshot, a refusal with it, nothing for an unknown id', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: { n: 1 } });
      await store.commit(created);
      const id = created.snapshot.id;
      const owner = ulid();
      expect(await store.lockAndLoad({ rootEventId: id, ownerId: owner, ttlMs: 60_000 })).toEqual({
        acquired: true,
        snapshot: created.snapshot,
      });
      expect((await store.readLock(id))?.ownerId).toBe(owner);
      // Held: refused, with the last committed snapshot; the holder keeps its row.
      expect(await store.lockAndLoad({ rootEventId: id, ownerId: ulid(), ttlMs: 60_000 })).toEqual({
        acquired: false,
        snapshot: created.snapshot,
      });
      expect((await store.readLock(id))?.ownerId).toBe(owner);
      // Unknown: no snapshot and no lock row.
      const unknown = ulid();
      expect(
        await store.lockAndLoad({ rootEventId: unknown, ownerId: ulid(), ttlMs: 60_000 }),
      ).toEqual({ acquired: false, snapshot: null });
      expect(await store.readLock(unknown)).toBeNull();
      // Expired: taken over.
      await store.releaseLock(id, owner);
      await store.tryAcquireLock({ rootEventId: id, ownerId: ulid(), ttlMs: 1 });
      await new Promise((resolve) => setTimeout(resolve, 20));
      const next = ulid();
      expect(
        (await store.lockAndLoad({ rootEventId: id, ownerId: next, ttlMs: 60_000 })).acquired,
      ).toBe(true);
      expect((await store.readLock(id))?.ownerId).toBe(next);
      await store.releaseLock(id, next);
    });

    it('should release the lock of the committing owner in the commit transaction', async () => {
      const created = makeStep({ machineId, value: ['m.a'], context: {} });
      await store.commit(created);
      const id = created.snapshot.id;
      const owner = ulid();
      await store.tryAcquireLock({ rootEventId: id, ownerId: owner, ttlMs: 60_000 });
      // Another owner's id releases nothing.
      const first = makeStep({ machineId, from: created.snapshot, value: ['m.b'], context: {} });
      await store.commit({ ...first, releaseLockOwner: ulid() });
      expect((await store.readLock(id))?.ownerId).toBe(owner);
      // A fenced-out commit keeps the lock (the release rolls back with the rest).
      const stale = makeStep({ machineId, from: created.snapshot, value: ['m.c'], context: {} });
      await expect(store.commit({ ...stale, releaseLockOwner: owner })).rejects.toBeInstanceOf(
        SequenceConflictError,
      );
      expect((await store.readLock(id))?.ownerId).toBe(owner);
      const second = makeStep({ machineId, from: first.snapshot, value: ['m.c'], context: {} });
      await store.commit({ ...second, releaseLockOwner: owner });
      expect(await store.readLock(id)).toBeNull();
    });

    it('should sweep expired locks only', async () => {
      const [expired, live] = [ulid(), ulid()];
      await store.tryAcquireLock({ rootEventId: expired, ownerId: ulid(), ttlMs: 20 });
      await store.tryAcquireLock({ rootEventId: live, ownerId: ulid(), ttlMs: 60_000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await store.sweepExpiredLocks()).toBeGreaterThanOrEqual(1);
      expect(await store.readLock(expired)).toBeNull();
      expect(await store.readLock(live)).not.toBeNull();
    });
  });

  describe('migrate', () => {
    it('should be idempotent', async () => {
      await store.migrate();
      await store.migrate();
      const step = makeStep({ machineId, value: ['m.a'], context: {} });
      await store.commit(step);
      expect(await store.load(step.snapshot.id)).toEqual(step.snapshot);
    });
  });
});
