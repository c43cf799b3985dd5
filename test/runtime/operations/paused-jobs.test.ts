/**
 * Jobs already queued for a paused instance (docs/operations.md "Pause and resume"): a child's
 * completion and a `dispatchTo` message wait out the pause, neither applied while paused nor
 * lost, and are delivered after `resume`. With the durable queue really running: a SQLite file
 * (embedded queue) and PostgreSQL (pg-boss).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MachineOperations } from '../../../src/runtime/engine/operations/machine-operations.js';
import { MachineRuntime, defineMachine } from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('operations/paused-jobs');
const DEADLINE = { timeout: 60_000, interval: 50 };

const task = defineMachine({
  config: {
    id: 'task',
    initial: 'working',
    states: { working: { on: { FINISH: 'finished' } }, finished: { type: 'final' } },
  },
});

const project = defineMachine({
  config: {
    id: 'project',
    initial: 'waiting',
    context: { pings: 0 },
    on: { PING: { actions: 'count' } },
    states: {
      waiting: { machine: task, on: { '@done': 'delivered' } },
      delivered: {},
    },
  },
  behavior: {
    actions: {
      count: ({ context }) => {
        context.pings = Number(context.pings) + 1;
      },
    },
  },
});

const pinger = defineMachine({
  config: {
    id: 'pinger',
    initial: 'idle',
    states: { idle: { on: { POKE: { actions: 'ping' } } } },
  },
  behavior: {
    actions: {
      ping: ({ dispatchTo, event }) =>
        dispatchTo({ machineId: 'project', id: String(event.payload?.id) }, 'PING'),
    },
  },
});

describe.each(backends)('jobs queued for a paused instance on $name', (backend) => {
  let runtime: MachineRuntime;
  let operations: MachineOperations;

  beforeAll(async () => {
    const url = await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: url,
      machines: [project, task, pinger],
      jobQueue: { pollIntervalMs: 20, backoffMs: 50, onError: () => {} },
    });
    operations = new MachineOperations({ runtime, machines: [project, task, pinger] });
  });
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  it("should hold a child's completion and a dispatched event until resumed, then deliver both", async () => {
    const id = (await runtime.create(project)).snapshot.id;
    const childId = await vi.waitFor(async () => {
      const [row] = (await operations.show('project', id)).children;
      expect(row?.status).toBe('running');
      return row!.childRootEventId!;
    }, DEADLINE);

    await operations.pause('project', id, { who: 'alice' });
    // Both queued while the parent is paused: the child's outcome, and a message to it.
    await runtime.send(task, childId, { type: 'FINISH' });
    const sender = (await runtime.create(pinger)).snapshot.id;
    await runtime.send(pinger, sender, { type: 'POKE', payload: { id } });

    // Several retry periods (1 s each) later: nothing applied, nothing given up.
    await delay(3500);
    const paused = await operations.show('project', id);
    expect(paused.instance.pausedAt).not.toBeNull();
    expect(paused.states.map((state) => state.id)).toEqual(['project.waiting']);
    expect(paused.context).toEqual({ pings: 0 });
    const during = await operations.history('project', id, { limit: 500 });
    expect(during.items.at(-1)!.type).toBe('@operator.pause');

    await operations.resume('project', id, { who: 'alice' });
    await vi.waitFor(async () => {
      const resumed = await operations.show('project', id);
      expect(resumed.states.map((state) => state.id)).toEqual(['project.delivered']);
      expect(resumed.context).toEqual({ pings: 1 });
    }, DEADLINE);
    // Each once, after the resume record.
    const types = (await operations.history('project', id, { limit: 500 })).items.map(
      (record) => record.type,
    );
    const resumedAt = types.indexOf('@operator.resume');
    expect(types.slice(resumedAt).filter((type) => type === 'PING')).toHaveLength(1);
    expect(types.filter((type) => type === 'PING')).toHaveLength(1);
    expect(types.indexOf('@operator.pause')).toBeLessThan(resumedAt);
  }, 120_000);
});
