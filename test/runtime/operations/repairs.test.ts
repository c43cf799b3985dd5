/**
 * The operator's repairs on every store: cancel and operator events through the locked step
 * (history names the operator; a step in flight is waited for, never interleaved), and freeing
 * a lock only when it expired.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  InvalidOperationQueryException,
  MachineAlreadyRunningException,
} from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineOperations } from '../../../src/runtime/engine/operations/machine-operations.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { allBackends } from '../../support/stores.js';
import { ticketMachine } from './fixtures.js';

const backends = await allBackends('operations-repairs');

describe.each(backends)('MachineOperations repairs ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;
  let operations: MachineOperations;
  let id: string;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
    operations = new MachineOperations({
      runtime,
      machines: [ticketMachine],
      cancelEvents: { ticket: 'CLOSE' },
    });
    id = (await runtime.create(ticketMachine)).snapshot.id;
  });
  afterEach(() => runtime.close());

  it("should cancel with the machine's configured event, recorded as the operator's", async () => {
    const result = await operations.cancel('ticket', id, { who: 'alice' });
    expect(result.snapshot).toMatchObject({ value: ['ticket.closed'], status: 'done' });
    const external = await operations.history('ticket', id, { source: 'external' });
    expect(external.items.map((record) => [record.type, record.actor])).toEqual([
      ['CLOSE', 'operator:alice'],
    ]);
  });

  it('should refuse a cancel without a configured or named event, and an action without who', async () => {
    const bare = new MachineOperations({ runtime, machines: [ticketMachine] });
    await expect(bare.cancel('ticket', id, { who: 'alice' })).rejects.toThrow(
      "Machine 'ticket' has no cancel event: configure one in cancelEvents ({ ticket: 'CANCEL' }) or pass the event to send.",
    );
    await expect(operations.cancel('ticket', id, { who: ' ' })).rejects.toBeInstanceOf(
      InvalidOperationQueryException,
    );
    expect((await store.load(id))!.value).toEqual(['ticket.open.fresh']);
  });

  it('should send an event no endpoint exposes, as the operator', async () => {
    await operations.send('ticket', id, { type: 'NOTE' }, { who: 'bob' });
    expect((await store.load(id))!.context).toEqual({ notes: 1 });
    const [record] = (await operations.history('ticket', id, { source: 'external' })).items;
    expect(record).toMatchObject({ type: 'NOTE', actor: 'operator:bob' });
  });

  it('should wait for a step in flight and apply after it: both kept, in order', async () => {
    let cancel: Promise<unknown> | undefined;
    await runtime.withLock(id, async (locked) => {
      cancel = operations.cancel('ticket', id, { who: 'alice', waitMs: 5000 });
      // The cancel is waiting for this lock while this step is computed and committed.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await locked.send(ticketMachine, { type: 'NOTE' });
    });
    await cancel;
    const snapshot = (await store.load(id))!;
    expect(snapshot).toMatchObject({ value: ['ticket.closed'], context: { notes: 1 } });
    const external = await operations.history('ticket', id, { source: 'external' });
    expect(external.items.map((record) => record.type)).toEqual(['NOTE', 'CLOSE']);
  });

  it('should refuse a cancel that cannot get the lock in time, writing nothing', async () => {
    await runtime.withLock(id, async () => {
      await expect(
        operations.cancel('ticket', id, { who: 'alice', waitMs: 0 }),
      ).rejects.toBeInstanceOf(MachineAlreadyRunningException);
    });
    expect((await store.load(id))!.sequence).toBe((await store.history(id)).length);
    expect((await store.load(id))!.value).toEqual(['ticket.open.fresh']);
  });

  it('should free an expired lock and refuse a live one', async () => {
    expect(await operations.releaseLock('ticket', id, { who: 'alice' })).toEqual({
      released: null,
    });
    await store.tryAcquireLock({ rootEventId: id, ownerId: 'live', ttlMs: 60_000, context: 'job' });
    await expect(operations.releaseLock('ticket', id, { who: 'alice' })).rejects.toThrow(
      /is held by live \(job\) until .*and its holder is alive/,
    );
    expect((await store.readLock(id))!.ownerId).toBe('live');
    await store.releaseLock(id, 'live');
    await store.tryAcquireLock({ rootEventId: id, ownerId: 'stale', ttlMs: 1, context: 'send' });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const freed = await operations.releaseLock('ticket', id, { who: 'alice' });
    expect(freed.released).toMatchObject({ ownerId: 'stale', context: 'send' });
    expect(await store.readLock(id)).toBeNull();
    // The instance takes events again at once.
    await operations.send('ticket', id, { type: 'NOTE' }, { who: 'alice' });
  });
});
