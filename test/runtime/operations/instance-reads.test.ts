/**
 * The operator's reads (MachineOperations list / show / history) on every store: order, filters
 * and cursors of the instance list, one instance's record, the history timeline, and that none
 * of them writes.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  InvalidOperationQueryException,
  MachineNotFoundException,
} from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineOperations } from '../../../src/runtime/engine/operations/machine-operations.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { allBackends } from '../../support/stores.js';
import { ticketMachine } from './fixtures.js';

const backends = await allBackends('operations-reads');
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const minutes = (count: number) => new Date(T0 + count * 60_000);

describe.each(backends)('MachineOperations reads ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;
  let operations: MachineOperations;
  let clock: Date;
  /** Instance ids in creation order. */
  let ids: string[];

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    clock = minutes(0);
    runtime = new MachineRuntime({ store, now: () => clock });
    operations = new MachineOperations({
      runtime,
      machines: [ticketMachine],
      timers: [{ machine: ticketMachine }],
      now: () => clock,
    });
    // Five tickets created a minute apart: 0 and 1 stay fresh, 2 and 3 are triaged (3 before
    // 2), 4 is closed.
    ids = [];
    for (let index = 0; index < 5; index += 1) {
      clock = minutes(index);
      ids.push((await runtime.create(ticketMachine)).snapshot.id);
    }
    clock = minutes(10);
    await runtime.send(ticketMachine, ids[3]!, { type: 'TRIAGE' });
    clock = minutes(11);
    await runtime.send(ticketMachine, ids[2]!, { type: 'TRIAGE' });
    clock = minutes(12);
    await runtime.send(ticketMachine, ids[4]!, { type: 'CLOSE' });
  });
  afterEach(async () => {
    await runtime.close();
    // Every test starts from an empty store (the file and schema backends keep theirs).
    if (backend.name === 'sqlite file' || backend.name === 'postgres') {
      await backend.tearDown();
      await backend.setUp();
    }
  });

  describe('list', () => {
    it('should list every instance newest first, a page at a time, each once', async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await operations.list('ticket', { limit: 2, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((item) => item.id));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor !== undefined);
      expect(seen).toEqual([...ids].reverse());
      expect(pages).toBe(3);
    });

    it('should list the instances in a leaf state, longest stay first', async () => {
      const page = await operations.list('ticket', { state: 'open.triaged' });
      expect(page.items.map((item) => item.id)).toEqual([ids[3], ids[2]]);
      expect(page.items[0]!.state).toEqual({
        id: 'ticket.open.triaged',
        enteredAt: minutes(10).toISOString(),
      });
      expect(page.nextCursor).toBeNull();
    });

    it('should list the instances anywhere inside an ancestor state, merged in entry order', async () => {
      const all = await operations.list('ticket', { state: 'ticket.open' });
      expect(all.items.map((item) => item.id)).toEqual([ids[0], ids[1], ids[3], ids[2]]);
      const first = await operations.list('ticket', { state: 'open', limit: 3 });
      expect(first.items.map((item) => item.id)).toEqual([ids[0], ids[1], ids[3]]);
      const second = await operations.list('ticket', {
        state: 'open',
        limit: 3,
        cursor: first.nextCursor!,
      });
      expect(second.items.map((item) => item.id)).toEqual([ids[2]]);
      expect(second.nextCursor).toBeNull();
      expect((await operations.list('ticket', { state: 'closed' })).items.map((i) => i.id)).toEqual(
        [ids[4]],
      );
    });

    it('should filter by creation time, update time and status', async () => {
      const created = await operations.list('ticket', {
        createdFrom: minutes(1),
        createdBefore: minutes(3).toISOString(),
      });
      expect(created.items.map((item) => item.id)).toEqual([ids[2], ids[1]]);
      const updated = await operations.list('ticket', { updatedFrom: minutes(10) });
      expect(updated.items.map((item) => item.id).sort()).toEqual([ids[2], ids[3], ids[4]].sort());
      const done = await operations.list('ticket', { status: 'done' });
      expect(done.items.map((item) => item.id)).toEqual([ids[4]]);
      expect(done.items[0]).toMatchObject({
        status: 'done',
        value: ['ticket.closed'],
        createdAt: minutes(4).toISOString(),
        updatedAt: minutes(12).toISOString(),
      });
      const fresh = await operations.list('ticket', { state: 'open', createdFrom: minutes(1) });
      expect(fresh.items.map((item) => item.id)).toEqual([ids[1], ids[3], ids[2]]);
    });

    it('should find an instance by its business key', async () => {
      expect(await store.queries.bindBusinessKey(ids[1]!, 'T-1001')).toBe(true);
      // A key is kept once set: another one is refused, the same one accepted again.
      expect(await store.queries.bindBusinessKey(ids[1]!, 'T-9999')).toBe(false);
      expect(await store.queries.bindBusinessKey(ids[1]!, 'T-1001')).toBe(true);
      const page = await operations.list('ticket', { businessKey: 'T-1001' });
      expect(page.items.map((item) => [item.id, item.businessKey])).toEqual([[ids[1], 'T-1001']]);
      expect((await operations.list('ticket', { businessKey: 'T-9999' })).items).toEqual([]);
    });

    it('should refuse an unknown state, a bad limit or time, and a cursor of another list', async () => {
      const unknown = operations.list('ticket', { state: 'shipped' });
      await expect(unknown).rejects.toBeInstanceOf(InvalidOperationQueryException);
      await expect(unknown).rejects.toThrow(
        "Machine 'ticket' has no state 'shipped': filter by one of open, open.fresh, open.triaged, open.escalated, closed.",
      );
      await expect(operations.list('ticket', { limit: 0 })).rejects.toBeInstanceOf(
        InvalidOperationQueryException,
      );
      await expect(operations.list('ticket', { createdFrom: 'yesterday' })).rejects.toThrow(
        /'createdFrom' must be a date and time/,
      );
      const byCreation = await operations.list('ticket', { limit: 1 });
      await expect(
        operations.list('ticket', { state: 'open', cursor: byCreation.nextCursor! }),
      ).rejects.toThrow(/does not continue this list of instances of 'ticket'/);
      await expect(operations.list('ticket', { cursor: 'garbage' })).rejects.toBeInstanceOf(
        InvalidOperationQueryException,
      );
      await expect(operations.list('order')).rejects.toThrow("Unknown machine 'order'");
    });
  });

  describe('show', () => {
    it('should show state, context, lock holder and expiry, and the next timer fire', async () => {
      clock = minutes(20);
      await runtime.send(ticketMachine, ids[2]!, { type: 'NOTE' });
      expect(
        await store.tryAcquireLock({
          rootEventId: ids[2]!,
          ownerId: 'holder-1',
          ttlMs: 60_000,
          context: 'job',
        }),
      ).toBe(true);
      const record = await operations.show('ticket', ids[2]!);
      expect(record.instance).toMatchObject({
        id: ids[2],
        status: 'active',
        sequence: (await store.load(ids[2]!))!.sequence,
      });
      expect(record.context).toEqual({ notes: 1 });
      expect(record.states).toEqual([
        { id: 'ticket.open.triaged', enteredAt: minutes(11).toISOString() },
      ]);
      expect(record.lock).toMatchObject({ ownerId: 'holder-1', context: 'job', expired: false });
      expect(record.timers).toEqual([
        {
          key: 'ticket.open.triaged:ESCALATE:3600',
          stateId: 'ticket.open.triaged',
          kind: 'after',
          eventType: 'ESCALATE',
          dueAt: minutes(71).toISOString(),
          fireCount: 0,
          stateEnteredAt: minutes(11).toISOString(),
          registered: true,
        },
      ]);
      expect(record.children).toEqual([]);
      expect(record.scenario).toBeNull();
      expect(record.failedJobs).toEqual([]);
    });

    it('should mark a lock past its expiry as expired', async () => {
      await store.tryAcquireLock({
        rootEventId: ids[0]!,
        ownerId: 'gone',
        ttlMs: 1,
        context: 'send',
      });
      await new Promise((resolve) => setTimeout(resolve, 10));
      clock = new Date();
      expect((await operations.show('ticket', ids[0]!)).lock).toMatchObject({
        ownerId: 'gone',
        expired: true,
      });
    });

    it('should answer MachineNotFoundException for an unknown id', async () => {
      await expect(operations.show('ticket', '01ARZ3NDEKTSV4RRFFQ69G5FAV')).rejects.toBeInstanceOf(
        MachineNotFoundException,
      );
    });
  });

  describe('history', () => {
    it('should page through the timeline in either order, and filter by source', async () => {
      const all = (await store.history(ids[4]!)).map((record) => record.sequence);
      const forward: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await operations.history('ticket', ids[4]!, {
          limit: 2,
          ...(cursor ? { cursor } : {}),
        });
        forward.push(...page.items.map((record) => record.sequence));
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
      expect(forward).toEqual(all);
      const backward = await operations.history('ticket', ids[4]!, { order: 'desc', limit: 3 });
      expect(backward.items.map((record) => record.sequence)).toEqual(all.reverse().slice(0, 3));
      const external = await operations.history('ticket', ids[4]!, { source: 'external' });
      expect(external.items.map((record) => record.type)).toEqual(['CLOSE']);
      await expect(
        operations.history('ticket', ids[3]!, { cursor: backward.nextCursor! }),
      ).rejects.toBeInstanceOf(InvalidOperationQueryException);
    });
  });

  it('should write nothing and take no lock while reading', async () => {
    const writes = [
      'commit',
      'tryAcquireLock',
      'lockAndLoad',
      'releaseLock',
      'updateChildren',
    ] as const;
    const spies = writes.map((name) => vi.spyOn(store, name));
    const bind = vi.spyOn(store.queries, 'bindBusinessKey');
    await operations.list('ticket', { state: 'open' });
    await operations.list('ticket', { status: 'active' });
    await operations.show('ticket', ids[2]!);
    await operations.history('ticket', ids[2]!, { source: 'internal' });
    for (const spy of [...spies, bind]) expect(spy).not.toHaveBeenCalled();
  });
});
