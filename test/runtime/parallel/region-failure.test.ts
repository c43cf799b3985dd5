/**
 * A region job whose entry action throws, on a SQLite file and PostgreSQL with the durable
 * queue run by the runtime's own worker: its last failed attempt records
 * `<m>.parallel.<state>.fail` (PARALLEL_FAIL) and routes the parallel state's `@fail`; an
 * earlier failed attempt is retried and fails nothing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineAlreadyRunningException } from '../../../src/runtime/errors.js';
import type { HistoryRecord } from '../../../src/runtime/interpreter/types.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { shipmentMachine } from './fixtures/machines.js';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('parallel-region-failure');
if (postgres) backends.push(postgres);

const FAIL = 'shipment.parallel.working.fail';
const count = (history: readonly HistoryRecord[], type: string) =>
  history.filter((record) => record.type === type).length;

describe.each(backends)('a region job failing its last attempt on $name', (backend) => {
  const runtimes: MachineRuntime[] = [];
  const open = async (jobTries: number, jobBackoff: number) => {
    const runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      machines: [shipmentMachine],
      env: {},
      jobQueue: { pollIntervalMs: 20 },
      parallelDispatch: { enabled: true, jobTries, jobBackoff },
    });
    runtimes.push(runtime);
    return runtime;
  };

  beforeAll(() => backend.setUp(), 60_000);
  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await backend.tearDown();
  });

  async function failedRun(runtime: MachineRuntime) {
    const { snapshot: created } = await runtime.create(shipmentMachine);
    const entered = await runtime.send(shipmentMachine, created.id, {
      type: 'START',
      payload: { workMs: 10, failRegion: 'packing' },
    });
    expect(entered.snapshot.value).toContain('shipment.working.packing.boxing');
    const startedAt = Date.now();
    await vi.waitFor(
      async () =>
        expect((await runtime.store.load(created.id))!.value).toEqual(['shipment.failed']),
      { timeout: 30_000, interval: 20 },
    );
    return { id: created.id, history: await runtime.store.history(created.id), startedAt };
  }

  /** `send`, retried only while it answers the spec's 423 (MachineAlreadyRunningException). */
  async function sendWhenFree(runtime: MachineRuntime, id: string, event: { type: string }) {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        return await runtime.send(shipmentMachine, id, event);
      } catch (error) {
        if (!(error instanceof MachineAlreadyRunningException) || Date.now() > deadline)
          throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  it('should record PARALLEL_FAIL and take @fail when the only try throws', async () => {
    const runtime = await open(1, 0);
    const { id, history } = await failedRun(runtime);
    const failed = history.filter((record) => record.type === FAIL);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.payload).toMatchObject({
      region: 'shipment.working.packing',
      error: { name: 'Error', message: 'packing is out of stock' },
    });
    expect(count(history, 'shipment.transition.working.@fail.finish')).toBe(1);
    expect(count(history, 'shipment.state.failed.enter')).toBe(1);
    expect(count(history, 'shipment.parallel.working.packing.region.merged')).toBe(0);
    expect(count(history, 'shipment.parallel.working.done')).toBe(0);
    // The instance is free again: the failed state's own event is taken. The other region's
    // job may still hold the lock for a moment, to find its parallel state gone and write
    // nothing: that is the spec's 423 (MachineAlreadyRunningException), so only it is retried.
    const restarted = await sendWhenFree(runtime, id, { type: 'RESTART' });
    expect(restarted.snapshot.value).toEqual(['shipment.idle']);
  }, 60_000);

  it('should retry an attempt that is not the last before failing the parallel state', async () => {
    const runtime = await open(2, 1);
    const { history, startedAt } = await failedRun(runtime);
    expect(count(history, FAIL)).toBe(1);
    // The first attempt failed at once; only the second, a backoff of 1 s later, failed the state.
    const failedAt = Date.parse(history.find((record) => record.type === FAIL)!.createdAt);
    expect(failedAt - startedAt).toBeGreaterThanOrEqual(900);
  }, 60_000);
});
