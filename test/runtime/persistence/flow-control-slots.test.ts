/**
 * In-flight slots of flow control on PostgreSQL (persistence/flow-control-sql.ts) under
 * concurrent first takes of a key: the rows of a key are made by its first take that finds
 * none, and every other take that raced it must try again, not refuse. Each round is a fresh
 * key taken by more requests than its limit at once: exactly `limit` of them get a slot.
 */
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
