/**
 * Scheduled events' selections, swept by two real timer workers (two runtimes, each with its
 * own store connection and background sweep, on one manual clock) on a SQLite file and on
 * PostgreSQL (one on the memory store, which is private to its runtime):
 * - by states: an instance in two selected states of a parallel state receives each tick once
 *   (before, one event per matching state);
 * - `instances: 'all'`: every running instance, whatever its state, and not a finished one;
 * - `resolver`: exactly the running instances it names (unknown and finished ids skipped), called
 *   at most once per tick and worker.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import type { ScheduleTick } from '../../../src/runtime/definition/schedules.js';
import type { TimerRegistration } from '../../../src/runtime/definition/timer-registration.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';

// The memory store is private to its runtime: one worker there, two on the shared stores.
const backends: StoreBackend[] = [
  {
    name: 'memory',
    url: () => 'memory:',
    async setUp() {},
    async tearDown() {},
    open: () => openStore('memory:'),
  },
  sqliteFileBackend(),
];
const postgres = await postgresBackend('schedule_selection');
if (postgres) backends.push(postgres);

const WAIT = { timeout: 15_000, interval: 25 };

/** Two regions, both `on` handling PING; AUDIT handled at the root; STOP finishes it. */
const watchMachine = defineMachine({
  config: {
    id: 'watch',
    initial: 'running',
    on: { AUDIT: { actions: 'count' } },
    states: {
      running: {
        type: 'parallel',
        on: { STOP: 'stopped' },
        states: {
          a: { initial: 'on', states: { on: { on: { PING: { actions: 'count' } } } } },
          b: { initial: 'on', states: { on: { on: { PING: { actions: 'count' } } } } },
        },
      },
      stopped: { type: 'final' },
    },
  },
  behavior: { actions: { count: () => {} } },
});

let chosen: string[] = [];
const resolverCalls: ScheduleTick[] = [];

const registration: TimerRegistration = {
  machine: watchMachine,
  schedules: [
    { name: 'ping', cron: '0 * * * *', event: 'PING', states: ['running.a.on', 'running.b.on'] },
    { name: 'everyone', cron: '30 1 * * *', event: 'AUDIT', instances: 'all' },
    {
      name: 'chosen',
      cron: '45 1 * * *',
      event: 'AUDIT',
      resolver: async (tick) => {
        resolverCalls.push(tick);
        return chosen;
      },
    },
  ],
};

describe.each(backends)('schedule selections, timer workers ($name)', (backend) => {
  let clock: ManualClock;
  let workers: MachineRuntime[];

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    resolverCalls.length = 0;
    clock = new ManualClock('2026-01-01T00:00:00.000Z');
    workers = [];
    for (let index = 0; index < (backend.name === 'memory' ? 1 : 2); index += 1) {
      workers.push(
        await MachineRuntime.open({
          databaseUrl: backend.url(),
          migrate: true,
          clock,
          timerIntervalMs: 5,
          timers: [registration],
        }),
      );
    }
  });
  afterEach(async () => {
    for (const worker of workers) await worker.close();
  });

  it('should deliver each tick once per selected instance, whatever the selection', async () => {
    const first = workers[0]!;
    const ids: string[] = [];
    for (let index = 0; index < 6; index += 1)
      ids.push((await first.create(watchMachine)).snapshot.id);
    const done = ids[5]!;
    await first.send(watchMachine, done, { type: 'STOP' });
    chosen = [ids[0]!, ids[2]!, '01UNKNOWNINSTANCE000000000', done];

    const counts = async (type: string) =>
      Promise.all(
        ids.map(
          async (id) =>
            (await first.store.history(id)).filter((record) => record.type === type).length,
        ),
      );
    // Both workers' own sweep, after the background ones: nothing more is delivered.
    const settle = async () => {
      await Promise.all(workers.map((worker) => worker.timerWorker!.sweepOnce()));
    };

    // 01:00: PING to the five running instances, each in two selected states: one event each.
    clock.set('2026-01-01T01:00:00.000Z');
    await vi.waitFor(async () => expect(await counts('PING')).toEqual([1, 1, 1, 1, 1, 0]), WAIT);
    await settle();
    expect(await counts('PING')).toEqual([1, 1, 1, 1, 1, 0]);
    expect(await counts('AUDIT')).toEqual([0, 0, 0, 0, 0, 0]);

    // 01:50: 'everyone' (01:30) to every running instance, 'chosen' (01:45) to ids 0 and 2.
    clock.set('2026-01-01T01:50:00.000Z');
    await vi.waitFor(async () => expect(await counts('AUDIT')).toEqual([2, 1, 2, 1, 1, 0]), WAIT);
    await settle();
    expect(await counts('AUDIT')).toEqual([2, 1, 2, 1, 1, 0]);
    expect(await counts('PING')).toEqual([1, 1, 1, 1, 1, 0]);
    // Asked at most once per worker for a tick (at 01:00, for the day before's, which reached
    // nobody: the instances were created after it).
    const asked = resolverCalls.filter(
      (call) => call.at.toISOString() === '2026-01-01T01:45:00.000Z',
    );
    expect(asked.length).toBeGreaterThanOrEqual(1);
    expect(asked.length).toBeLessThanOrEqual(2);
    expect(resolverCalls.length - asked.length).toBeLessThanOrEqual(2);
    expect(asked[0]).toEqual({
      machineId: 'watch',
      schedule: 'chosen',
      event: 'AUDIT',
      at: new Date('2026-01-01T01:45:00.000Z'),
    });

    // 02:00: the next PING, once again per instance.
    clock.set('2026-01-01T02:00:00.000Z');
    await vi.waitFor(async () => expect(await counts('PING')).toEqual([2, 2, 2, 2, 2, 0]), WAIT);
    await settle();
    expect(await counts('PING')).toEqual([2, 2, 2, 2, 2, 0]);
    expect(await counts('AUDIT')).toEqual([2, 1, 2, 1, 1, 0]);
    // One fire row per instance and schedule (none per state).
    const keys = (await first.store.timerFires(ids[0]!)).map((row) => row.timerKey).sort();
    expect(keys).toEqual([
      'watch:AUDIT:cron:chosen',
      'watch:AUDIT:cron:everyone',
      'watch:PING:cron:ping',
    ]);
  });
});
