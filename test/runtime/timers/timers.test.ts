/**
 * Timers end to end on a SQLite file and PostgreSQL, with the runtime's own background sweep
 * running (`MachineRuntime.open({ timers })`) and a manual clock: tests move time forward and
 * wait for the worker, never for wall-clock periods.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { timedTransitions, type MachineDefinition } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { TimerFireConflictError } from '../../../src/runtime/persistence/store.js';
import { claimOf } from '../../../src/runtime/engine/timers/timer-delivery.js';
import { dueTimers } from '../../../src/runtime/interpreter/index.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import {
  expiringMachine,
  guardedMachine,
  pollingMachine,
  remindedMachine,
} from './fixtures/machines.js';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('timers');
if (postgres) backends.push(postgres);

const WAIT = { timeout: 10_000, interval: 20 };

describe.each(backends)('timers ($name)', (backend) => {
  let clock: ManualClock;
  let runtime: MachineRuntime;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    clock = new ManualClock('2026-01-01T00:00:00.000Z');
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      clock,
      timerIntervalMs: 10,
      timers: [
        { machine: expiringMachine },
        { machine: pollingMachine },
        { machine: guardedMachine },
        // Hourly, to open instances only (snoozed ones handle REMIND too but are not selected).
        {
          machine: remindedMachine,
          schedules: [{ cron: '0 * * * *', event: 'REMIND', states: ['open'] }],
        },
      ],
    });
  });
  afterEach(() => runtime.close());

  const state = async (definition: MachineDefinition, id: string) =>
    (await runtime.restore(definition, id)).value;
  const eventTypes = async (id: string, types: string[]) =>
    (await runtime.store.history(id))
      .filter((record) => types.includes(record.type))
      .map((record) => record.type);
  // The background worker delivers the expiry.
  const expired = (id: string) =>
    vi.waitFor(
      async () => expect(await state(expiringMachine, id)).toEqual(['expiring.expired']),
      WAIT,
    );
  // One sweep of our own: the background worker may be sweeping too (they share the claims).
  const sweep = () => runtime.timerWorker!.sweepOnce();

  it('should fire `after` once, as an ordinary external event with its history', async () => {
    const { snapshot } = await runtime.create(expiringMachine);
    clock.advance(59_000);
    await sweep();
    expect(await state(expiringMachine, snapshot.id)).toEqual(['expiring.pending']);
    clock.advance(1_000);
    await expired(snapshot.id);
    const history = await runtime.store.history(snapshot.id);
    expect(history.find((record) => record.type === 'EXPIRE')?.source).toBe('external');
    expect(history.map((record) => record.type)).toContain(
      'expiring.transition.pending.EXPIRE.finish',
    );
    clock.advance(3_600_000);
    await sweep();
    expect(await eventTypes(snapshot.id, ['EXPIRE'])).toEqual(['EXPIRE']);
    // The fire finished the instance: its fire row went with the finish (timer-rows-finish.test.ts).
    expect(await runtime.store.timerFires(snapshot.id)).toEqual([]);
  });

  it('should fire `every` up to `max`, then send `then` once', async () => {
    const { snapshot } = await runtime.create(pollingMachine);
    for (const polls of [1, 2, 3]) {
      clock.advance(10_000);
      await vi.waitFor(async () => {
        const { context } = await runtime.restore(pollingMachine, snapshot.id);
        expect(context['polls']).toBe(polls);
      }, WAIT);
    }
    expect(await state(pollingMachine, snapshot.id)).toEqual(['polling.polling']);
    clock.advance(10_000);
    await vi.waitFor(
      async () => expect(await state(pollingMachine, snapshot.id)).toEqual(['polling.failed']),
      WAIT,
    );
    clock.advance(100_000);
    await sweep();
    expect(await eventTypes(snapshot.id, ['POLL', 'GIVE_UP'])).toEqual([
      'POLL',
      'POLL',
      'POLL',
      'GIVE_UP',
    ]);
    // `failed` is final: the exhausted timer's row went with the finish.
    expect(await runtime.store.timerFires(snapshot.id)).toEqual([]);
  });

  it('should stop `every` at `max` when there is no `then` (the state stays)', async () => {
    const { snapshot } = await runtime.send(
      pollingMachine,
      (await runtime.create(pollingMachine)).snapshot.id,
      { type: 'STEADY' },
    );
    for (const ticks of [1, 2]) {
      clock.advance(10_000);
      await vi.waitFor(async () => {
        const { context } = await runtime.restore(pollingMachine, snapshot.id);
        expect(context['ticks']).toBe(ticks);
      }, WAIT);
    }
    clock.advance(600_000);
    await sweep();
    expect((await runtime.restore(pollingMachine, snapshot.id)).context['ticks']).toBe(2);
    expect(await eventTypes(snapshot.id, ['TICK'])).toEqual(['TICK', 'TICK']);
  });

  it('should cancel on leaving the state and restart on re-entering it', async () => {
    const { snapshot } = await runtime.create(expiringMachine);
    clock.advance(30_000);
    await runtime.send(expiringMachine, snapshot.id, { type: 'LEAVE' });
    clock.advance(60_000);
    await sweep();
    expect(await state(expiringMachine, snapshot.id)).toEqual(['expiring.away']);
    await runtime.send(expiringMachine, snapshot.id, { type: 'BACK' });
    clock.advance(59_000);
    await sweep();
    expect(await state(expiringMachine, snapshot.id)).toEqual(['expiring.pending']);
    clock.advance(1_000);
    await expired(snapshot.id);
    expect(await eventTypes(snapshot.id, ['EXPIRE'])).toEqual(['EXPIRE']);
  });

  it('should restart the deadline on a self-transition, not on a targetless one', async () => {
    const { snapshot } = await runtime.create(expiringMachine);
    clock.advance(50_000);
    await runtime.send(expiringMachine, snapshot.id, { type: 'PING' });
    clock.advance(20_000);
    await sweep();
    // 70 s after creation, 20 s after the self-transition: still waiting.
    expect(await state(expiringMachine, snapshot.id)).toEqual(['expiring.pending']);
    await runtime.send(expiringMachine, snapshot.id, { type: 'NOTE' });
    clock.advance(40_000);
    await expired(snapshot.id);
  });

  it('should retry a fire on a locked instance and deliver it after release', async () => {
    const { snapshot } = await runtime.create(expiringMachine);
    await runtime.withLock(snapshot.id, async () => {
      clock.advance(61_000);
      const report = await sweep();
      expect(report.locked).toBeGreaterThanOrEqual(1);
      expect(report.delivered).toBe(0);
      expect(await state(expiringMachine, snapshot.id)).toEqual(['expiring.pending']);
    });
    await expired(snapshot.id);
    expect(await eventTypes(snapshot.id, ['EXPIRE'])).toEqual(['EXPIRE']);
  });

  it('should use the fire when a guard fails (TRANSITION_FAIL recorded, not retried)', async () => {
    const { snapshot } = await runtime.create(guardedMachine);
    clock.advance(5_000);
    await vi.waitFor(
      async () => expect(await eventTypes(snapshot.id, ['EXPIRE'])).toEqual(['EXPIRE']),
      WAIT,
    );
    clock.advance(60_000);
    await sweep();
    expect(await state(guardedMachine, snapshot.id)).toEqual(['guarded.waiting']);
    expect(
      await eventTypes(snapshot.id, ['EXPIRE', 'guarded.transition.waiting.EXPIRE.fail']),
    ).toEqual(['EXPIRE', 'guarded.transition.waiting.EXPIRE.fail']);
  });

  it('should send a scheduled event to exactly the instances in its states at each tick', async () => {
    clock.set('2026-01-01T00:10:00.000Z');
    const create = async () => (await runtime.create(remindedMachine)).snapshot.id;
    const open = [await create(), await create(), await create()];
    const snoozed = await create();
    await runtime.send(remindedMachine, snoozed, { type: 'SNOOZE' });
    const closed = await create();
    await runtime.send(remindedMachine, closed, { type: 'CLOSE' });
    const reminders = async (id: string) =>
      (await runtime.restore(remindedMachine, id)).context['reminders'];
    const counts = async (ids: string[]) => Promise.all(ids.map(reminders));

    clock.set('2026-01-01T00:59:59.000Z');
    await sweep();
    expect(await counts([...open, snoozed, closed])).toEqual([0, 0, 0, 0, 0]);
    clock.set('2026-01-01T01:00:00.000Z');
    await vi.waitFor(async () => expect(await counts(open)).toEqual([1, 1, 1]), WAIT);
    // Opened after the tick: not reached by it.
    clock.set('2026-01-01T01:00:30.000Z');
    const late = await create();
    await sweep();
    clock.set('2026-01-01T01:59:00.000Z');
    await sweep();
    expect(await counts([...open, late, snoozed, closed])).toEqual([1, 1, 1, 0, 0, 0]);
    clock.set('2026-01-01T02:00:00.000Z');
    await vi.waitFor(async () => expect(await counts([...open, late])).toEqual([2, 2, 2, 1]), WAIT);
    await sweep();
    expect(await counts([...open, late, snoozed, closed])).toEqual([2, 2, 2, 1, 0, 0]);
    expect(await eventTypes(open[0]!, ['REMIND'])).toEqual(['REMIND', 'REMIND']);
  });

  it('should reject a second claim of the same fire and roll its event back', async () => {
    await runtime.timerWorker!.stop();
    const { snapshot } = await runtime.create(expiringMachine);
    clock.advance(60_000);
    const stays = (await runtime.store.currentStates(snapshot.id)).map((row) => ({
      stateId: row.stateId,
      enteredAt: row.stateEnteredAt,
    }));
    const [fire] = dueTimers(timedTransitions(expiringMachine), stays, new Map(), clock.now());
    const claim = claimOf(snapshot.id, fire!);
    await runtime.withLock(snapshot.id, (instance) =>
      instance.send(expiringMachine, { type: 'NOTE' }, { timerFire: claim }),
    );
    const before = await runtime.store.history(snapshot.id);
    await expect(
      runtime.withLock(snapshot.id, (instance) =>
        instance.send(expiringMachine, { type: 'NOTE' }, { timerFire: claim }),
      ),
    ).rejects.toBeInstanceOf(TimerFireConflictError);
    expect(await runtime.store.history(snapshot.id)).toEqual(before);
  });
});
