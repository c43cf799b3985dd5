/**
 * Recovery from killed workers, with default settings (lock TTL 60 s, job timeouts 300 s, job
 * poll 1 s, timer sweep 500 ms) and parallel dispatch on, on a SQLite file and on PostgreSQL,
 * real processes (docs/persistence.md "Dead holders"). Each round:
 * - worker T is stuck inside a timer fire (the `alarm`'s RING behavior, under the instance lock
 *   with the fire's claim uncommitted) and worker J inside a region job (the `pack`'s `box`
 *   entry action, the job claimed);
 * - worker S, started after both are stuck and running timers and jobs, leaves both alone for
 *   1.5 s (live holders keep their lock and their job);
 * - T and J are SIGKILLed; S fires the timer and re-runs the region job, each within 2 s of the
 *   kill on SQLite and 5 s on PostgreSQL (median of 5 rounds), once: histories gap-free, one
 *   RING and one ring, one merged region and one box, fire rows equal to the history.
 * Before the dead-holder work, the timer waited for the lock TTL (60 s) and the region job for
 * its job timeout (300 s).
 */
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { alarmMachine, packMachine } from './fixtures/recovery-machines.js';

const WORKER = fileURLToPath(new URL('./fixtures/recovery-worker.ts', import.meta.url));
const ENV = { MACHINE_PARALLEL_DISPATCH_ENABLED: 'true' };
const BOUND_MS: Record<string, number> = { 'sqlite file': 2_000, postgres: 5_000 };
const ROUNDS = 5;

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('recovery_workers');
if (postgres) backends.push(postgres);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const load = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** The history's types, checked gap-free. */
async function historyOf(store: Store, id: string): Promise<string[]> {
  const history = await store.history(id);
  expect(history.map((record) => record.sequence)).toEqual(history.map((_, i) => i + 1));
  return history.map((record) => record.type);
}

/** Resolves with the ms from `since` until `done()` holds (polled every 10 ms). */
async function timeUntil(done: () => Promise<boolean>, since: number): Promise<number> {
  const deadline = performance.now() + 60_000;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error('not recovered within 60 s');
    await sleep(10);
  }
  return performance.now() - since;
}

describe.each(backends)('killed workers on $name, default settings', (backend) => {
  const started: FixtureProcess[] = [];
  let runtime: MachineRuntime;

  const startWorker = async (role: string, hang: boolean): Promise<FixtureProcess> => {
    const worker = startFixture(WORKER, [backend.url(), role], {
      ...ENV,
      RECOVERY_HANG: hang ? '1' : '0',
    });
    started.push(worker);
    await worker.waitForLine((line) => line === 'READY', 60_000);
    return worker;
  };

  beforeAll(async () => {
    await backend.setUp();
    // This process creates and reads (no worker of its own); it migrates the store first.
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      machines: [alarmMachine, packMachine],
      env: ENV,
    });
  }, 90_000);
  afterAll(async () => {
    for (const worker of started) worker.child.kill('SIGKILL');
    await Promise.all(started.map((worker) => worker.exited));
    await runtime?.close();
    await backend.tearDown();
  });

  it('should fire the timer and re-run the region job of SIGKILLed workers within seconds, once', async () => {
    const timers: number[] = [];
    const regions: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const [stuckTimer, stuckJob] = await Promise.all([
        startWorker('timers', true),
        startWorker('jobs', true),
      ]);
      const alarm = (await runtime.create(alarmMachine)).snapshot.id;
      const pack = (await runtime.create(packMachine)).snapshot.id;
      await runtime.send(packMachine, pack, { type: 'START' });
      await stuckTimer.waitForLine((line) => line === 'RINGING', 30_000);
      await stuckJob.waitForLine((line) => line === 'BOXING', 30_000);

      const survivor = await startWorker('all', false);
      // Live holders keep their work: the survivor's sweeps and polls leave both alone.
      await sleep(1_500);
      expect((await runtime.restore(alarmMachine, alarm)).value).toEqual(['alarm.armed']);
      expect((await runtime.restore(packMachine, pack)).context.boxes).toBe(0);

      stuckTimer.child.kill('SIGKILL');
      stuckJob.child.kill('SIGKILL');
      const killedAt = performance.now();
      const [timer, region] = await Promise.all([
        timeUntil(
          async () => (await runtime.restore(alarmMachine, alarm)).status === 'done',
          killedAt,
        ),
        timeUntil(
          async () => (await runtime.restore(packMachine, pack)).status === 'done',
          killedAt,
        ),
      ]);
      timers.push(timer);
      regions.push(region);
      expect(await stuckTimer.exited).toBe('SIGKILL');
      expect(await stuckJob.exited).toBe('SIGKILL');

      // Once each: one RING in the history (the fire finished the alarm, and its fire row went
      // with the finish); the region merged once.
      const alarmTypes = await historyOf(runtime.store, alarm);
      expect(alarmTypes.filter((type) => type === 'RING')).toHaveLength(1);
      expect((await runtime.restore(alarmMachine, alarm)).context.rings).toBe(1);
      expect(await runtime.store.timerFires(alarm)).toEqual([]);
      const packTypes = await historyOf(runtime.store, pack);
      expect(packTypes.filter((type) => type.endsWith('.region.merged'))).toHaveLength(1);
      expect(packTypes.filter((type) => type === 'BOXED')).toHaveLength(1);
      expect((await runtime.restore(packMachine, pack)).context.boxes).toBe(1);
      expect((await runtime.restore(packMachine, pack)).value).toEqual(['pack.packed']);

      survivor.child.kill('SIGKILL');
      await survivor.exited;
    }
    process.stdout.write(
      `worker recovery (${backend.name}): timer ${timers.map((ms) => ms.toFixed(0)).join(', ')} ms, median ${median(timers).toFixed(0)} ms; ` +
        `region job ${regions.map((ms) => ms.toFixed(0)).join(', ')} ms, median ${median(regions).toFixed(0)} ms; ${load()}\n`,
    );
    expect(median(timers)).toBeLessThan(BOUND_MS[backend.name]!);
    expect(median(regions)).toBeLessThan(BOUND_MS[backend.name]!);
  }, 600_000);
});
