/**
 * Flow-control rows on PostgreSQL (persistence/flow-control-sql.ts).
 *
 * - In-flight slots under concurrent first takes of a key: the rows of a key are made by its
 *   first take that finds none, and every other take that raced it must try again, not refuse.
 *   Each round is a fresh key taken by more requests than its limit at once: exactly `limit`
 *   of them get a slot.
 * - The idle sweep (the expired-row sweep's `sweepIdle`): full buckets, the slot rows of keys
 *   none of which is held, and bursts nobody took are deleted; a held key's rows stay; a second
 *   store (another process) takes the swept key's slots again. Rows used within the idle time
 *   stay (the LockSweeper's hour).
 * - A burst's age, for debounce's maxWait, on the database clock.
 */
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockSweeper } from '../../../src/runtime/engine/lock-sweeper.js';
import type { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend } from '../../support/stores.js';

const backend = await postgresBackend('flow-control-slots');

describe.skipIf(backend === null)('flow-control slots on PostgreSQL', () => {
  let store: Store;
  beforeAll(async () => {
    await backend!.setUp();
    store = await backend!.open();
  });
  afterAll(async () => {
    await store?.close();
    await backend!.tearDown();
  });

  it('should give exactly `limit` slots of a fresh key to concurrent first takes', async () => {
    for (let round = 0; round < 20; round += 1) {
      const key = `tenant-${round}`;
      const slots = await Promise.all(
        Array.from({ length: 6 }, () =>
          store.flowControl.acquireSlot('route', key, 3, ulid(), 60_000),
        ),
      );
      const taken = slots.filter((slot) => slot !== null);
      expect(taken.map((slot) => slot!.slot).sort()).toEqual([0, 1, 2]);
      for (const slot of taken) await store.flowControl.releaseSlot(slot!);
    }
  });

  /** Rows of a flow-control table, per key. */
  const rows = async (table: string): Promise<string[]> =>
    (
      await (store as PostgresStore).pool.query<{ flow_key: string }>(
        `SELECT flow_key FROM ${table} ORDER BY flow_key`,
      )
    ).rows.map((row) => row.flow_key);

  it("should delete idle keys' rows and keep the held and the recent ones", async () => {
    const flow = store.flowControl;
    // A bucket full again within a ms; a full bucket of one per minute stays "recent" for 1 min.
    await flow.takeToken('sweep', 'full', { limit: 1000, interval: 1 });
    await flow.takeToken('sweep', 'busy', { limit: 1, interval: 60_000 });
    const idle = await flow.acquireSlot('sweep', 'idle', 2, ulid(), 60_000);
    await flow.releaseSlot(idle!);
    const held = await flow.acquireSlot('sweep', 'held', 2, ulid(), 60_000);
    await flow.markLatest('sweep', 'orphan', ulid());
    // Used moments ago: the hour of the expired-row sweep keeps every one of them.
    const sweeper = new LockSweeper({ store });
    expect((await sweeper.sweepOnce()).flowRows).toBe(0);

    await new Promise((resolve) => setTimeout(resolve, 20));
    const tables = ['machine_flow_buckets', 'machine_flow_slots', 'machine_flow_latest'];
    let before = 0;
    for (const table of tables) before += (await rows(table)).length;
    const deleted = await flow.sweepIdle(10);
    expect(await rows('machine_flow_buckets')).toEqual(['busy']);
    // Both of 'idle''s rows go; 'held' keeps both (one is held), so a take never finds it short.
    expect(await rows('machine_flow_slots')).toEqual(['held', 'held']);
    expect(await rows('machine_flow_latest')).toEqual([]);
    // All but the three kept (the earlier test's released slots too).
    expect(deleted).toBe(before - 3);

    // Another process (its own knowledge of which rows exist) takes the swept key's slots.
    const other = await backend!.open();
    try {
      const again = await Promise.all(
        [0, 1, 2].map(() => other.flowControl.acquireSlot('sweep', 'idle', 2, ulid(), 60_000)),
      );
      expect(again.filter((slot) => slot !== null)).toHaveLength(2);
      for (const slot of again) if (slot !== null) await other.flowControl.releaseSlot(slot);
    } finally {
      await other.close();
    }
    await flow.releaseSlot(held!);
    // A swept burst starts again: its first request is 0 ms into it.
    expect(await flow.markLatest('sweep', 'orphan', ulid())).toBe(0);
  });

  it("should tell a burst's later requests how long ago it began, on the database clock", async () => {
    const flow = store.flowControl;
    expect(await flow.markLatest('age', 'k', 'one')).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await flow.markLatest('age', 'k', 'two')).toBeGreaterThanOrEqual(50);
    expect(await flow.takeLatest('age', 'k', 'one')).toBe(false);
    expect(await flow.takeLatest('age', 'k', 'two')).toBe(true);
    // Taken: the burst ended, the next request begins another.
    expect(await flow.markLatest('age', 'k', 'three')).toBe(0);
    expect(await flow.takeLatest('age', 'k', 'three')).toBe(true);
  });
});
