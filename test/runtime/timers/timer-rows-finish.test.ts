/**
 * A finished instance fires no timer again, so the commit that finishes it deletes its
 * `machine_timer_fires` and `machine_timer_failures` rows (before, they stayed forever: one per
 * instance and timer that ever fired or failed). On the memory store, a SQLite file and
 * PostgreSQL; finished by an event (PostgreSQL's one-statement commit) and by a timer fire
 * (its claim and the finish in one transaction). Instances still running keep theirs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { sweepTimers } from '../../../src/runtime/engine/timers/timer-sweep.js';
import { allBackends } from '../../support/stores.js';

const backends = (await allBackends('timer_rows_finish')).filter(
  (backend) => backend.name !== 'sqlite :memory:',
);

let failing = false;

/** `ticking` ticks every 10 s (throwing while `failing`) and expires after 60 s. */
const tickingMachine = defineMachine<{ ticks: number }>({
  config: {
    id: 'ticking',
    initial: 'ticking',
    context: { ticks: 0 },
    states: {
      ticking: {
        on: {
          TICK: { target: null, every: 10, actions: 'tick' },
          EXPIRE: { target: 'over', after: 60 },
          STOP: 'over',
        },
      },
      over: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      tick: ({ context }) => {
        if (failing) throw new Error('tick failed');
        context.ticks += 1;
      },
    },
  },
});

describe.each(backends)('timer rows of a finished instance ($name)', (backend) => {
  let clock: ManualClock;
  let runtime: MachineRuntime;

  beforeAll(async () => {
    await backend.setUp();
    clock = new ManualClock('2026-01-01T00:00:00.000Z');
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      clock,
      machines: [tickingMachine],
    });
  });
  afterAll(async () => {
    await runtime.close();
    await backend.tearDown();
  });
  beforeEach(() => {
    failing = false;
  });

  /** Advances the clock and sweeps; `failed`: how many fires threw (reported, tried again later). */
  const sweep = async (seconds: number, failed = 0) => {
    clock.advance(seconds * 1000);
    const errors: unknown[] = [];
    await sweepTimers({
      context: runtime.context,
      registrations: [{ machine: tickingMachine }],
      clock,
      onError: (error) => errors.push(error),
    });
    expect(errors).toHaveLength(failed);
  };
  const rows = async (id: string) => ({
    fires: (await runtime.store.timerFires(id)).length,
    failures: (await runtime.store.timerFailures.list(id)).length,
  });

  it('should delete them when an event finishes the instance, and keep those of running ones', async () => {
    const [stopped, running] = [
      (await runtime.create(tickingMachine)).snapshot.id,
      (await runtime.create(tickingMachine)).snapshot.id,
    ];
    await sweep(10);
    failing = true;
    await sweep(10, 2);
    for (const id of [stopped, running]) expect(await rows(id)).toEqual({ fires: 1, failures: 1 });

    await runtime.send(tickingMachine, stopped, { type: 'STOP' });
    expect((await runtime.restore(tickingMachine, stopped)).status).toBe('done');
    expect(await rows(stopped)).toEqual({ fires: 0, failures: 0 });
    expect(await rows(running)).toEqual({ fires: 1, failures: 1 });
    await runtime.send(tickingMachine, running, { type: 'STOP' });
    expect(await rows(running)).toEqual({ fires: 0, failures: 0 });
  });

  it('should delete them when a timer fire finishes the instance', async () => {
    const id = (await runtime.create(tickingMachine)).snapshot.id;
    await sweep(10);
    expect(await rows(id)).toEqual({ fires: 1, failures: 0 });
    await sweep(60);
    const snapshot = await runtime.restore(tickingMachine, id);
    expect(snapshot).toMatchObject({ status: 'done', value: ['ticking.over'] });
    expect(await rows(id)).toEqual({ fires: 0, failures: 0 });
  });
});
