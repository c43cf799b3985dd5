/**
 * The operator's repairs that are steps of their own (pause, resume, retry, fire, release), on
 * every store: each goes through the locked step and leaves an `@operator.<action>` record
 * naming who did it; a paused instance refuses events (InstancePausedException, 409) and is no
 * timer candidate; a failed job is put back with one more attempt; a timer fires now through
 * the sweep's delivery.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InstancePausedException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineOperations } from '../../../src/runtime/engine/operations/machine-operations.js';
import { openJobQueue } from '../../../src/runtime/jobs/open-job-queue.js';
import type { DurableJobQueue } from '../../../src/runtime/jobs/types.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { allBackends } from '../../support/stores.js';
import { ticketMachine } from './fixtures.js';

const backends = (await allBackends('operations-operator-repairs')).filter(
  (backend) => backend.name !== 'sqlite :memory:',
);

describe.each(backends)('MachineOperations operator steps ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;
  let operations: MachineOperations;
  let id: string;
  const timers = [{ machine: ticketMachine }];

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
    operations = new MachineOperations({ runtime, machines: [ticketMachine], timers });
    id = (await runtime.create(ticketMachine)).snapshot.id;
  });
  afterEach(() => runtime.close());

  const operatorRecords = async () =>
    (await operations.history('ticket', id, { source: 'internal', limit: 500 })).items
      .filter((record) => record.type.startsWith('@operator.'))
      .map((record) => [record.type, record.actor]);

  it('should pause: events refused with 409 and nothing written, until resumed', async () => {
    const paused = await operations.pause('ticket', id, { who: 'alice' });
    expect(paused.record).toMatchObject({ type: '@operator.pause', actor: 'operator:alice' });
    const shown = await operations.show('ticket', id);
    expect(shown.instance.pausedAt).toBe(paused.record!.createdAt);
    const before = (await store.load(id))!;
    const refusal = await runtime.send(ticketMachine, id, { type: 'TRIAGE' }).catch((e) => e);
    expect(refusal).toBeInstanceOf(InstancePausedException);
    expect(refusal).toMatchObject({ code: 'MR_INSTANCE_PAUSED', statusCode: 409 });
    // Waiting for the lock does not get around it either.
    await expect(
      runtime.send(ticketMachine, id, { type: 'TRIAGE' }, { lockWaitMs: 100 }),
    ).rejects.toBeInstanceOf(InstancePausedException);
    expect((await store.load(id))!.sequence).toBe(before.sequence);
    // A second pause writes nothing.
    expect((await operations.pause('ticket', id, { who: 'bob' })).record).toBeNull();

    const resumed = await operations.resume('ticket', id, { who: 'bob' });
    expect(resumed.record).toMatchObject({ type: '@operator.resume', actor: 'operator:bob' });
    expect((await operations.show('ticket', id)).instance.pausedAt).toBeNull();
    const sent = await runtime.send(ticketMachine, id, { type: 'TRIAGE' });
    expect(sent.snapshot.value).toEqual(['ticket.open.triaged']);
    expect(await operatorRecords()).toEqual([
      ['@operator.pause', 'operator:alice'],
      ['@operator.resume', 'operator:bob'],
    ]);
    // Gap-free: sequences 1..n.
    const all = await operations.history('ticket', id, { limit: 500 });
    expect(all.items.map((record) => record.sequence)).toEqual(
      all.items.map((_record, index) => index + 1),
    );
  });

  it('should keep a paused instance out of the timer sweep, and refuse firing it', async () => {
    await runtime.send(ticketMachine, id, { type: 'TRIAGE' });
    const query = {
      machineId: 'ticket',
      stateId: 'ticket.open.triaged',
      timerKey: 'ticket.open.triaged:after:3600',
      dueBy: new Date(Date.now() + 7_200_000),
      limit: 500,
    };
    query.timerKey = (await operations.show('ticket', id)).timers[0]!.key;
    // Earlier tests' instances share the store: only this one's row is looked at.
    const candidates = async () =>
      (await store.timerCandidates(query))
        .map((row) => row.rootEventId)
        .filter((rootEventId) => rootEventId === id);
    expect(await candidates()).toEqual([id]);
    await operations.pause('ticket', id, { who: 'alice' });
    expect(await candidates()).toEqual([]);
    await expect(operations.fire('ticket', id, { who: 'alice' })).rejects.toBeInstanceOf(
      InstancePausedException,
    );
    await operations.resume('ticket', id, { who: 'alice' });
    expect(await candidates()).toEqual([id]);
  });

  it('should fire a pending timer now through the timer path, recorded first', async () => {
    await runtime.send(ticketMachine, id, { type: 'TRIAGE' });
    const fired = await operations.fire('ticket', id, { who: 'carol' });
    expect(fired).toMatchObject({ timer: { eventType: 'ESCALATE' }, delivered: 1 });
    expect((await store.load(id))!.value).toEqual(['ticket.open.escalated']);
    const records = (await operations.history('ticket', id, { limit: 500 })).items;
    const fireAt = records.findIndex((record) => record.type === '@operator.fire');
    const escalated = records.findIndex((record) => record.type === 'ESCALATE');
    expect(records[fireAt]).toMatchObject({ actor: 'operator:carol', source: 'internal' });
    expect(fireAt).toBeGreaterThan(-1);
    expect(escalated).toBeGreaterThan(fireAt);
    // The fire is claimed: nothing more is pending.
    expect((await operations.show('ticket', id)).timers.every((t) => t.dueAt === null)).toBe(true);
  });

  it('should record a freed lock in history', async () => {
    await store.tryAcquireLock({ rootEventId: id, ownerId: 'stale', ttlMs: 1, context: 'send' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const freed = await operations.releaseLock('ticket', id, { who: 'dave' });
    expect(freed.released).toMatchObject({ ownerId: 'stale' });
    expect(await operatorRecords()).toEqual([['@operator.release', 'operator:dave']]);
    expect(await store.readLock(id)).toBeNull();
  });
});

describe.each(backends.filter((backend) => backend.name !== 'memory'))(
  'MachineOperations retry ($name)',
  (backend) => {
    let store: Store;
    let queue: DurableJobQueue;
    let runtime: MachineRuntime;

    beforeAll(() => backend.setUp());
    afterAll(() => backend.tearDown());
    beforeEach(async () => {
      store = await backend.open();
      queue = await openJobQueue(store, { pollIntervalMs: 20 });
      runtime = new MachineRuntime({ store, jobs: queue });
    });
    afterEach(async () => {
      await queue.close({ timeoutMs: 0 });
      await runtime.close();
    });

    it("should put an instance's failed job back with one more attempt, recorded", async () => {
      const operations = new MachineOperations({ runtime, machines: [ticketMachine] });
      const id = (await runtime.create(ticketMachine)).snapshot.id;
      const runs: number[] = [];
      let failing = true;
      await queue.work('test.repair', (_payload, job) => {
        runs.push(job.attempt);
        if (failing) throw new Error('downstream down');
      });
      await queue.enqueue({ name: 'test.repair', payload: { instanceId: id }, maxAttempts: 1 });
      await queue.start();
      await queue.drain({ timeoutMs: 10_000 });
      const shown = await operations.show('ticket', id);
      expect(shown.failedJobs.map((job) => job.lastError)).toEqual([
        expect.stringContaining('downstream down'),
      ]);
      failing = false;
      const retried = await operations.retry('ticket', id, { who: 'erin' });
      expect(retried.jobs).toEqual([
        { id: shown.failedJobs[0]!.id, name: 'test.repair', retried: true },
      ]);
      await queue.drain({ timeoutMs: 10_000 });
      expect(runs).toEqual([1, 2]);
      expect((await operations.show('ticket', id)).failedJobs).toEqual([]);
      const records = (await operations.history('ticket', id, { source: 'internal' })).items;
      expect(records.at(-1)).toMatchObject({
        type: '@operator.retry',
        actor: 'operator:erin',
        payload: { who: 'erin', jobs: [{ name: 'test.repair' }] },
      });
      await expect(operations.retry('ticket', id, { who: 'erin' })).rejects.toThrow(
        'has no failed jobs to retry',
      );
    });
  },
);
