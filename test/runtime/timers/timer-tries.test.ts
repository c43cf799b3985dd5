/**
 * A behavior that throws on a timer event is tried a bounded number of times
 * (`MACHINE_TIMER_TRIES`), waiting `MACHINE_TIMER_BACKOFF` (doubled each time) between tries,
 * then given up with a TRANSITION_FAIL record committed with the fire's claim, on a SQLite file
 * and PostgreSQL. Before, the fire was tried at every sweep, forever. Sweeps are run by the test
 * on a manual clock (no background worker), so every try is counted exactly.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { sweepTimers } from '../../../src/runtime/engine/timers/timer-sweep.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('timer_tries');
if (postgres) backends.push(postgres);

let calls = 0;
let failing = true;

/** `waiting` expires after 60 s through `boom`, which throws while `failing`; `ticking` ticks every 10 s. */
const flakyMachine = defineMachine<{ ticks: number }>({
  config: {
    id: 'flaky',
    initial: 'waiting',
    context: { ticks: 0 },
    states: {
      waiting: {
        on: {
          EXPIRE: { target: 'expired', after: 60, actions: 'boom' },
          GO: 'ticking',
          STOP: 'expired',
        },
      },
      ticking: { on: { TICK: { target: null, every: 10, actions: 'tick' }, STOP: 'expired' } },
      expired: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      boom: () => {
        calls += 1;
        if (failing) throw new Error('payment provider down');
      },
      tick: ({ context }) => {
        calls += 1;
        if (failing) throw new Error('tick failed');
        context.ticks += 1;
      },
    },
  },
});

describe.each(backends)('timer behaviour that throws ($name)', (backend) => {
  let clock: ManualClock;
  let runtime: MachineRuntime;
  let errors: unknown[];
  let created: string[];

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    calls = 0;
    failing = true;
    errors = [];
    created = [];
    clock = new ManualClock('2026-01-01T00:00:00.000Z');
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      clock,
      machines: [flakyMachine],
      env: { MACHINE_TIMER_TRIES: '3', MACHINE_TIMER_BACKOFF: '1' },
    });
  });
  // The store is shared by the tests: an instance left in a timed state would fire in the next.
  afterEach(async () => {
    for (const id of created)
      if ((await runtime.restore(flakyMachine, id)).status !== 'done')
        await runtime.send(flakyMachine, id, { type: 'STOP' });
    await runtime.close();
  });

  const sweep = () =>
    sweepTimers({
      context: runtime.context,
      registrations: [{ machine: flakyMachine }],
      clock,
      onError: (error) => errors.push(error),
    });
  const create = async () => {
    const result = await runtime.create(flakyMachine);
    created.push(result.snapshot.id);
    return result;
  };
  const types = async (id: string) => (await runtime.store.history(id)).map((r) => r.type);

  it('should try a throwing `after` fire 3 times with backoff, then record TRANSITION_FAIL and consume it', async () => {
    const { snapshot } = await create();
    const before = await types(snapshot.id);
    clock.advance(60_000);
    expect((await sweep()).failed).toBe(1);
    expect(calls).toBe(1);
    // Backing off: the next sweeps within a second do not try again.
    await sweep();
    clock.advance(500);
    await sweep();
    expect(calls).toBe(1);
    clock.advance(500);
    await sweep();
    expect(calls).toBe(2);
    // The second wait is 2 s.
    clock.advance(1_000);
    await sweep();
    expect(calls).toBe(2);
    clock.advance(1_000);
    await sweep();
    expect(calls).toBe(3);
    // Given up: nothing tries it again, however long and often the sweep runs.
    for (let i = 0; i < 5; i += 1) {
      clock.advance(3_600_000);
      await sweep();
    }
    expect(calls).toBe(3);

    expect(errors).toHaveLength(3);
    expect(errors.map((error) => (error as { code?: string }).code)).toEqual([
      'MR_TIMER_FIRE_FAILED',
      'MR_TIMER_FIRE_FAILED',
      'MR_TIMER_FIRE_FAILED',
    ]);
    expect(
      errors.map((error) => (error as { details: { givenUp: boolean } }).details.givenUp),
    ).toEqual([false, false, true]);
    expect(((errors[2] as Error).cause as Error).message).toBe('payment provider down');

    const after = await runtime.restore(flakyMachine, snapshot.id);
    expect(after.value).toEqual(['flaky.waiting']);
    // One record added, gap-free, carrying the tries and the error.
    const history = await runtime.store.history(snapshot.id);
    expect(history.map((r) => r.type)).toEqual([...before, 'flaky.transition.waiting.EXPIRE.fail']);
    expect(history.map((r) => r.sequence)).toEqual(history.map((_, i) => i + 1));
    expect(history.at(-1)!.payload).toEqual({
      timer: 'flaky.waiting:EXPIRE:60',
      tries: 3,
      error: { name: 'Error', message: 'payment provider down' },
    });
    expect(await runtime.store.timerFires(snapshot.id)).toMatchObject([
      { timerKey: 'flaky.waiting:EXPIRE:60', fireCount: 1, status: 'fired' },
    ]);
    expect(await runtime.store.timerFailures.list(snapshot.id)).toMatchObject([
      { timerKey: 'flaky.waiting:EXPIRE:60', attempts: 3, retryAt: null },
    ]);
    // The instance still takes events.
    await runtime.send(flakyMachine, snapshot.id, { type: 'GO' });
    expect((await runtime.restore(flakyMachine, snapshot.id)).value).toEqual(['flaky.ticking']);
  });

  it('should give up one boundary of an `every` timer and fire the next one afresh', async () => {
    const { snapshot } = await create();
    await runtime.send(flakyMachine, snapshot.id, { type: 'GO' });
    clock.advance(10_000);
    await sweep();
    clock.advance(1_000);
    await sweep();
    clock.advance(2_000);
    await sweep();
    expect(calls).toBe(3);
    const failType = 'flaky.transition.ticking.TICK.fail';
    expect((await types(snapshot.id)).filter((type) => type === failType)).toHaveLength(1);
    // The next boundary (20 s after entry) is a new fire with tries of its own: it succeeds.
    failing = false;
    clock.advance(7_000);
    await sweep();
    expect(calls).toBe(4);
    const { context } = await runtime.restore(flakyMachine, snapshot.id);
    expect(context.ticks).toBe(1);
    expect(await runtime.store.timerFires(snapshot.id)).toMatchObject([
      { timerKey: 'flaky.ticking:TICK:10', fireCount: 2, status: 'active' },
    ]);
  });

  it('should fire a throwing timer that recovers before its last try, once', async () => {
    const { snapshot } = await create();
    clock.advance(60_000);
    await sweep();
    failing = false;
    clock.advance(1_000);
    await sweep();
    expect(calls).toBe(2);
    expect((await runtime.restore(flakyMachine, snapshot.id)).value).toEqual(['flaky.expired']);
    const history = await types(snapshot.id);
    expect(history.filter((type) => type === 'EXPIRE')).toHaveLength(1);
    expect(history).not.toContain('flaky.transition.waiting.EXPIRE.fail');
  });
});
