/**
 * Timers across real worker processes (`node --import tsx`), on a SQLite file and PostgreSQL:
 * two workers sweeping one store deliver each due fire once, and a worker SIGKILLed in the
 * middle of a sweep loses no fire and duplicates none.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { processExpiringMachine } from './fixtures/machines.js';

const WORKER = fileURLToPath(new URL('./fixtures/timer-worker.ts', import.meta.url));

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('timer-processes');
if (postgres) backends.push(postgres);

describe.each(backends)('timer worker processes on $name', (backend) => {
  let runtime: MachineRuntime;
  const started: FixtureProcess[] = [];
  const startWorker = async (): Promise<FixtureProcess> => {
    const worker = startFixture(WORKER, [backend.url()]);
    started.push(worker);
    await worker.waitForLine((line) => line === 'READY', 45_000);
    return worker;
  };

  beforeAll(async () => {
    await backend.setUp();
    // This process only creates instances and reads; the workers fire the timers.
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
  });
  afterEach(async () => {
    for (const worker of started.splice(0)) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
  });
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  async function createInstances(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let index = 0; index < count; index += 1)
      ids.push((await runtime.create(processExpiringMachine)).snapshot.id);
    return ids;
  }

  async function doneCount(ids: readonly string[]): Promise<number> {
    let done = 0;
    for (const id of ids) if ((await runtime.store.load(id))?.status === 'done') done += 1;
    return done;
  }

  // Each instance: exactly one EXPIRE event in its history (the fire finished it: its fire row
  // went with the finish).
  async function expectEachFiredOnce(ids: readonly string[]): Promise<Map<number, number>> {
    const byWorker = new Map<number, number>();
    for (const id of ids) {
      const history = await runtime.store.history(id);
      expect(history.filter((record) => record.type === 'EXPIRE')).toHaveLength(1);
      expect(await runtime.store.timerFires(id)).toEqual([]);
      const by = (await runtime.store.load(id))!.context['by'] as number;
      byWorker.set(by, (byWorker.get(by) ?? 0) + 1);
    }
    return byWorker;
  }

  it('should deliver each due fire once with two workers sweeping the same store', async () => {
    const [first, second] = await Promise.all([startWorker(), startWorker()]);
    const ids = await createInstances(150);
    await vi.waitFor(async () => expect(await doneCount(ids)).toBe(ids.length), {
      timeout: 60_000,
      interval: 200,
    });
    const byWorker = await expectEachFiredOnce(ids);
    // Both processes took part (the transition records its process id).
    expect([...byWorker.keys()].sort()).toEqual([first!.child.pid, second!.child.pid].sort());
  }, 120_000);

  it('should lose no fire and duplicate none when a worker is SIGKILLed mid-sweep', async () => {
    const ids = await createInstances(300);
    // Past every deadline before any worker runs: one sweep has all 300 to deliver.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const doomed = await startWorker();
    await vi.waitFor(async () => expect(await doneCount(ids)).toBeGreaterThanOrEqual(10), {
      timeout: 60_000,
      interval: 20,
    });
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe('SIGKILL');
    const beforeRestart = await doneCount(ids);
    expect(beforeRestart).toBeLessThan(ids.length);

    const survivor = await startWorker();
    await vi.waitFor(async () => expect(await doneCount(ids)).toBe(ids.length), {
      timeout: 60_000,
      interval: 200,
    });
    const byWorker = await expectEachFiredOnce(ids);
    expect(byWorker.get(doomed.child.pid!)).toBe(beforeRestart);
    expect(byWorker.get(survivor.child.pid!)).toBe(ids.length - beforeRestart);
  }, 120_000);
});
