/**
 * Pinned mode and the timer sweep (docs/versioning.md): with v2 registered for timers (v2 pins
 * v1), a v1 instance in a timed state only v1 has expires through v1's `after`, one in a state
 * v1's schedule selects gets the scheduled event, and a v1 instance in `idle` (which v2's
 * schedule selects, v1's does not) gets nothing; a v2 instance in `idle` gets v2's. Sweeps run
 * by the test on a manual clock, on a SQLite file and PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import type { TimerRegistration } from '../../../src/runtime/definition/timer-registration.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { sweepTimers } from '../../../src/runtime/engine/timers/timer-sweep.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { workV1, workV2 } from './fixtures/work.js';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('versioning_pinned_timers');
if (postgres) backends.push(postgres);

const registration: TimerRegistration = {
  machine: workV2,
  schedules: [{ cron: '* * * * *', event: 'TICK' }],
};

describe.each(backends)('pinned instances and the timer sweep ($name)', (backend) => {
  let clock: ManualClock;
  let runtime: MachineRuntime;
  let errors: unknown[];

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    errors = [];
    clock = new ManualClock('2026-01-01T00:00:00.000Z');
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      clock,
      machines: [workV2],
    });
  });
  afterEach(() => runtime.close());

  const sweep = () =>
    sweepTimers({
      context: runtime.context,
      registrations: [registration],
      clock,
      onError: (error) => errors.push(error),
    });
  const v1In = async (event: string | null) => {
    const { snapshot } = await runtime.create(workV1);
    if (event !== null) await runtime.send(workV2, snapshot.id, { type: event });
    return snapshot.id;
  };
  const state = async (id: string) => {
    const { snapshot } = await runtime.read(workV2, id);
    return { value: snapshot.value, version: snapshot.version };
  };

  it("should fire a v1 instance's own timers and schedules, and v2's on v2 instances", async () => {
    const waiting = await v1In('WAIT');
    const scheduled = await v1In('SCHEDULE');
    const idleV1 = await v1In(null);
    const idleV2 = (await runtime.create(workV2)).snapshot.id;

    clock.advance(30_000);
    await sweep();
    expect(await state(waiting)).toEqual({ value: ['work.waiting'], version: 'v1' });

    clock.advance(31_000);
    const report = await sweep();
    expect(errors).toEqual([]);
    expect(report.failed).toBe(0);
    expect(await state(waiting)).toEqual({ value: ['work.expired'], version: 'v1' });
    expect(await state(scheduled)).toEqual({ value: ['work.ticked'], version: 'v1' });
    // v1's idle handles no TICK: v2's schedule of idle is not v1's.
    expect(await state(idleV1)).toEqual({ value: ['work.idle'], version: 'v1' });
    expect(await state(idleV2)).toEqual({ value: ['work.done'], version: 'v2' });
    const types = (await runtime.history(workV2, idleV1)).map((record) => record.type);
    expect(types.some((type) => type.includes('TICK'))).toBe(false);
  });
});
