/**
 * Queued listeners (`[listener, { '@queue': true, ... }]`) run as `listener.run` jobs written
 * in the commit of the step that queued them (outbox), once, after that commit, with their named
 * parameters and without `@` keys; not at all when the step is rejected (validation guard) or
 * throws (nothing committed); retried when they throw. With the durable queue really running:
 * a SQLite file (embedded queue) and PostgreSQL (pg-boss).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  MachineValidationException,
  defineMachine,
  defineValidationGuard,
  type EventObject,
} from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('engine/queued-listeners');

// Generous: a loaded 2-core machine and pg-boss's polling.
const DEADLINE = { timeout: 30_000, interval: 25 };

/** One run of the queued listener, as it saw the instance. */
interface Run {
  instance: string;
  params: Record<string, unknown>;
  event: string;
  value: string[];
  note: unknown;
}
const runs: Run[] = [];
/** Attempts left to fail, by instance id. */
const failing = new Map<string, number>();
const attempts = new Map<string, number>();

const audited = defineMachine({
  config: {
    id: 'audited',
    initial: 'draft',
    context: { note: '', audits: 0 },
    listen: {
      entry: ['syncAudit', ['audit', { '@queue': true, channel: 'orders', level: 2 }]],
    },
    states: {
      draft: {
        on: {
          SUBMIT: { target: 'submitted', actions: 'writeNote' },
          CHECKED: { target: 'submitted', guards: 'mustBeValid' },
          EXPLODE: 'exploding',
        },
      },
      submitted: { on: { APPROVE: 'approved' } },
      exploding: { entry: 'raiseBoom', on: { BOOM: { actions: 'explode' } } },
      approved: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      writeNote: ({ context, event }) => {
        context.note = String(event.payload?.note ?? '');
      },
      raiseBoom: ({ raise }) => raise('BOOM'),
      explode: () => {
        throw new Error('boom');
      },
    },
    guards: {
      mustBeValid: defineValidationGuard({ check: () => false, message: 'Not valid.' }),
    },
    listeners: {
      syncAudit: () => undefined,
      audit: ({ context, params, event, state, id }) => {
        attempts.set(id, (attempts.get(id) ?? 0) + 1);
        const left = failing.get(id) ?? 0;
        if (left > 0) {
          failing.set(id, left - 1);
          throw new Error(`audit unavailable (${left} left)`);
        }
        runs.push({
          instance: id,
          params: { ...params },
          event: (event as EventObject).type,
          value: [...state.value],
          note: context.note,
        });
        context.audits = Number(context.audits) + 1;
      },
    },
  },
});

describe.each(backends)('queued listeners on $name', (backend) => {
  let url: string;
  let runtime: MachineRuntime;
  const runsOf = (id: string) => runs.filter((run) => run.instance === id);
  /**
   * Waits until `count` runs of the instance are committed and their job let go of the
   * instance lock (a job holds it while it runs: a send meanwhile would be refused).
   */
  const audits = async (id: string, count: number) => {
    await vi.waitFor(async () => {
      const read = await runtime.read(audited, id);
      expect(read.snapshot.context.audits).toBe(count);
      expect(read.isProcessing).toBe(false);
    }, DEADLINE);
    expect(runsOf(id)).toHaveLength(count);
  };
  const queueRecords = async (id: string) =>
    (await runtime.history(audited, id))
      .map((record) => record.type)
      .filter((type) => type.startsWith('audited.listen.queue.'));

  beforeAll(async () => {
    url = await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: url,
      machines: [audited],
      // Failed attempts are expected here: keep them out of the test output.
      jobQueue: { pollIntervalMs: 20, backoffMs: 50, maxAttempts: 4, onError: () => {} },
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  it('should run a queued listener once after the commit, with its named parameters and no @ keys', async () => {
    const { snapshot } = await runtime.create(audited);
    const id = snapshot.id;
    await audits(id, 1);
    await runtime.send(audited, id, { type: 'SUBMIT', payload: { note: 'first' } });
    await audits(id, 2);

    expect(runsOf(id)).toEqual([
      {
        instance: id,
        params: { channel: 'orders', level: 2 },
        event: 'audited.start',
        value: ['audited.draft'],
        note: '',
      },
      // After the commit: the listener sees the committed state and the action's context.
      {
        instance: id,
        params: { channel: 'orders', level: 2 },
        event: 'SUBMIT',
        value: ['audited.submitted'],
        note: 'first',
      },
    ]);
    // Its context change (audits) and records are committed by the job's own step.
    expect(await queueRecords(id)).toEqual([
      'audited.listen.queue.audit.dispatched',
      'audited.listen.queue.audit.started',
      'audited.listen.queue.audit.completed',
      'audited.listen.queue.audit.dispatched',
      'audited.listen.queue.audit.started',
      'audited.listen.queue.audit.completed',
    ]);
    // Once: nothing runs it a second time.
    await delay(500);
    expect(runsOf(id)).toHaveLength(2);
  }, 60_000);

  it('should run the listener of a final state on the done instance', async () => {
    const id = (await runtime.create(audited)).snapshot.id;
    await audits(id, 1);
    await runtime.send(audited, id, { type: 'SUBMIT', payload: { note: 'x' } });
    await audits(id, 2);
    const { snapshot } = await runtime.send(audited, id, { type: 'APPROVE' });
    expect(snapshot.status).toBe('done');
    await audits(id, 3);
    expect(runsOf(id)[2]).toMatchObject({ event: 'APPROVE', value: ['audited.approved'] });
    expect((await runtime.restore(audited, id)).status).toBe('done');
  }, 60_000);

  it('should not run it for a step rejected by a validation guard', async () => {
    const id = (await runtime.create(audited)).snapshot.id;
    await audits(id, 1);
    await expect(runtime.send(audited, id, { type: 'CHECKED' })).rejects.toBeInstanceOf(
      MachineValidationException,
    );
    // A later step's listener has run: the rejected one would have been queued before it.
    await runtime.send(audited, id, { type: 'SUBMIT', payload: { note: 'later' } });
    await audits(id, 2);
    await delay(500);
    expect(runsOf(id).map((run) => run.event)).toEqual(['audited.start', 'SUBMIT']);
    expect((await queueRecords(id)).filter((type) => type.endsWith('.dispatched'))).toHaveLength(2);
  }, 60_000);

  it('should not run it for a step that threw after queuing it (nothing committed)', async () => {
    const id = (await runtime.create(audited)).snapshot.id;
    await audits(id, 1);
    // Entering `exploding` queues the listener, then the raised BOOM's action throws.
    await expect(runtime.send(audited, id, { type: 'EXPLODE' })).rejects.toThrow('boom');
    expect((await runtime.restore(audited, id)).value).toEqual(['audited.draft']);
    await runtime.send(audited, id, { type: 'SUBMIT', payload: { note: 'after' } });
    await audits(id, 2);
    await delay(500);
    expect(runsOf(id).map((run) => run.value[0])).toEqual(['audited.draft', 'audited.submitted']);
  }, 60_000);

  it('should retry a listener that throws and commit its step once it succeeds', async () => {
    const id = (await runtime.create(audited)).snapshot.id;
    await audits(id, 1);
    failing.set(id, 2);
    await runtime.send(audited, id, { type: 'SUBMIT', payload: { note: 'retried' } });
    await audits(id, 2);
    // The create's run, then two failed attempts and the one that succeeded.
    expect(attempts.get(id)).toBe(4);
    // Failed attempts committed nothing: one started/completed pair per successful run.
    const records = await queueRecords(id);
    expect(records.filter((type) => type.endsWith('.started'))).toHaveLength(2);
    expect(records.filter((type) => type.endsWith('.completed'))).toHaveLength(2);
  }, 60_000);
});
