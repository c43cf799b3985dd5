/**
 * Parallel dispatch across real worker processes (`node --import tsx`), on a SQLite file and
 * PostgreSQL: two regions whose entry actions each take 300 ms of synchronous work run at the
 * same time in two processes (their work overlaps; wall times are logged); the conflict on `shared` is recorded and the later region's value
 * kept; `@done` fires once; a region job SIGKILLed mid-run is retried and merged once; the
 * `region_timeout` watchdog fails a parallel state with a stuck region.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineAlreadyRunningException } from '../../../src/runtime/errors.js';
import type { HistoryRecord, MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { shipmentMachine } from './fixtures/machines.js';

const WORKER = fileURLToPath(new URL('./fixtures/region-worker.ts', import.meta.url));

// Region jobs (settings of the jobs the workers write themselves: the raised events' steps): a
// dead attempt is reclaimed after 2 s, retried at once; the general job timeout sets pg-boss's
// maintenance pass (which returns expired jobs) to every 2 s.
const WORKER_ENV = {
  MACHINE_PARALLEL_DISPATCH_ENABLED: 'true',
  MACHINE_PARALLEL_DISPATCH_JOB_TIMEOUT: '2',
  MACHINE_PARALLEL_DISPATCH_JOB_BACKOFF: '0',
  MACHINE_PARALLEL_DISPATCH_LOCK_TTL: '5',
  MACHINE_JOB_TIMEOUT: '4',
};

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('parallel-region-processes');
if (postgres) backends.push(postgres);

const DONE = 'shipment.parallel.working.done';
const count = (history: readonly HistoryRecord[], type: string) =>
  history.filter((record) => record.type === type).length;

describe.each(backends)('parallel dispatch with worker processes on $name', (backend) => {
  let runtime: MachineRuntime;
  let watched: MachineRuntime;
  let markers: string;
  const started: FixtureProcess[] = [];
  const startWorker = async (env: Record<string, string> = {}): Promise<FixtureProcess> => {
    const worker = startFixture(WORKER, [backend.url()], { ...WORKER_ENV, ...env });
    started.push(worker);
    await worker.waitForLine((line) => line === 'READY', 45_000);
    return worker;
  };

  beforeAll(async () => {
    await backend.setUp();
    markers = mkdtempSync(join(tmpdir(), 'mr-regions-'));
    // This process enters the parallel state and reads; the workers run the regions.
    const options = {
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      machines: [shipmentMachine],
      env: {},
    } as const;
    // The region jobs' settings travel with the jobs this process writes.
    const dispatch = { enabled: true, jobTimeout: 2, jobBackoff: 0, lockTtl: 5 };
    runtime = await MachineRuntime.open({ ...options, parallelDispatch: dispatch });
    watched = await MachineRuntime.open({
      ...options,
      parallelDispatch: { ...dispatch, regionTimeout: 1 },
    });
  }, 60_000);
  afterEach(async () => {
    for (const worker of started.splice(0)) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
  });
  afterAll(async () => {
    await runtime?.close();
    await watched?.close();
    rmSync(markers, { recursive: true, force: true });
    await backend.tearDown();
  });

  async function settled(id: string, value: string, timeout = 30_000) {
    await vi.waitFor(async () => expect((await runtime.store.load(id))!.value).toEqual([value]), {
      timeout,
      interval: 20,
    });
    return (await runtime.store.load(id))!;
  }

  it('should run two 300 ms regions at the same time, record the conflict and fire @done once', async () => {
    await Promise.all([startWorker(), startWorker()]);
    const walls: number[] = [];
    const pids: boolean[] = [];
    const overlapping: boolean[] = [];
    for (let run = 0; run < 5; run += 1) {
      const { snapshot: created } = await runtime.create(shipmentMachine);
      const entered = await runtime.send(shipmentMachine, created.id, {
        type: 'START',
        payload: { workMs: 300 },
      });
      // The entering request answers with the parallel state committed, regions pending.
      expect(entered.snapshot.value).toEqual([
        'shipment.working.billing.charging',
        'shipment.working.packing.boxing',
      ]);
      expect(entered.snapshot.context).not.toHaveProperty('billing');

      const done = await settled(created.id, 'shipment.shipped');
      const history = await runtime.store.history(created.id);
      const billing = done.context.billing as {
        startedAt: number;
        finishedAt: number;
        pid: number;
      };
      const packing = done.context.packing as {
        startedAt: number;
        finishedAt: number;
        pid: number;
      };
      const doneAt = Date.parse(history.find((record) => record.type === DONE)!.createdAt);
      walls.push(doneAt - Math.min(billing.startedAt, packing.startedAt));
      pids.push(billing.pid !== packing.pid);
      // Each region records when its 300 ms of work started and finished: intervals that
      // overlap ran at the same time (sequential regions never overlap).
      overlapping.push(
        billing.startedAt < packing.finishedAt && packing.startedAt < billing.finishedAt,
      );

      // Conflict on `shared`: recorded once, the later region (packing) kept.
      const conflicts = history.filter((record) => record.type.endsWith('.context.conflict'));
      expect(conflicts).toHaveLength(1);
      expect(conflicts[0]!.payload).toMatchObject({
        key: 'shared',
        kept: 'shipment.working.packing',
      });
      expect(done.context.shared).toBe('packing');
      // onDone exactly once.
      expect(count(history, DONE)).toBe(1);
      expect(count(history, 'shipment.state.shipped.enter')).toBe(1);
      expect(done.context.doneCount).toBe(1);
      expect(count(history, 'shipment.parallel.working.billing.region.merged')).toBe(1);
      expect(count(history, 'shipment.parallel.working.packing.region.merged')).toBe(1);
    }
    walls.sort((a, b) => a - b);
    const median = walls[2]!;
    console.log(
      `parallel dispatch on ${backend.name}: walls ${walls.join(', ')} ms, median ${median} ms; regions in two processes: ${pids.filter(Boolean).length}/5, overlapping: ${overlapping.filter(Boolean).length}/5`,
    );
    // Overlap, not wall time, is the property: on a loaded machine a 300 ms region can take
    // longer to be picked up, but regions that overlap did run in parallel.
    expect(overlapping.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(pids.filter(Boolean).length).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('should answer contention while a region job holds the instance', async () => {
    await Promise.all([startWorker(), startWorker()]);
    const { snapshot: created } = await runtime.create(shipmentMachine);
    await runtime.send(shipmentMachine, created.id, {
      type: 'START',
      payload: { workMs: 50, mergeMs: 2000 },
    });
    // Billing's merge holds the lock for 2 s: reads see it, events are refused (HTTP 423 / GET 200).
    await vi.waitFor(
      async () =>
        expect((await runtime.store.readLock(created.id))?.context).toBe(
          'parallel-region shipment.working.billing',
        ),
      { timeout: 30_000, interval: 10 },
    );
    expect((await runtime.read(shipmentMachine, created.id)).isProcessing).toBe(true);
    const refused = await runtime
      .send(shipmentMachine, created.id, { type: 'RESTART' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(MachineAlreadyRunningException);
    const seen = (refused as MachineAlreadyRunningException).snapshot as MachineSnapshot;
    expect(seen.value[0]).toMatch(/^shipment\.working\./);
    await settled(created.id, 'shipment.shipped');
    // The last region job commits inside its lock and deletes the row just after: the state can
    // be read a moment before the lock is gone.
    await vi.waitFor(
      async () =>
        expect((await runtime.read(shipmentMachine, created.id)).isProcessing).toBe(false),
      { timeout: 10_000, interval: 10 },
    );
  }, 120_000);

  it('should retry a region job SIGKILLed mid-run and merge its work once', async () => {
    const marker = join(markers, `kill-${backend.name.replace(/\W/g, '')}.txt`);
    const first = await startWorker({ REGION_MARKER: marker });
    const { snapshot: created } = await runtime.create(shipmentMachine);
    await runtime.send(shipmentMachine, created.id, { type: 'START', payload: { workMs: 1500 } });
    // The only worker takes a region and is killed in the middle of its entry action.
    await vi.waitFor(() => expect(readFileSync(marker, 'utf8')).toMatch(/start/), {
      timeout: 30_000,
      interval: 20,
    });
    first.child.kill('SIGKILL');
    await first.exited;
    const killed = readFileSync(marker, 'utf8').trim().split('\n');
    expect(killed).toHaveLength(1);
    const region = killed[0]!.split(' ')[1]!;

    await Promise.all([
      startWorker({ REGION_MARKER: marker }),
      startWorker({ REGION_MARKER: marker }),
    ]);
    const done = await settled(created.id, 'shipment.shipped', 60_000);
    const history = await runtime.store.history(created.id);
    const starts = readFileSync(marker, 'utf8').trim().split('\n');
    // The killed region ran twice (killed attempt, retry), the other once; each merged once.
    expect(starts.filter((line) => line.endsWith(`${region} start`))).toHaveLength(2);
    expect(starts).toHaveLength(3);
    expect(count(history, `shipment.parallel.working.${region}.region.merged`)).toBe(1);
    expect(
      count(
        history,
        `shipment.state.working.${region}.${region === 'billing' ? 'charging' : 'boxing'}.entry.start`,
      ),
    ).toBe(1);
    expect(count(history, DONE)).toBe(1);
    expect(done.context.doneCount).toBe(1);
  }, 120_000);

  it('should fail a parallel state with a stuck region after region_timeout', async () => {
    await Promise.all([startWorker(), startWorker()]);
    const { snapshot: created } = await watched.create(shipmentMachine);
    await watched.send(shipmentMachine, created.id, {
      type: 'START',
      payload: { workMs: 50, stuckRegion: 'packing', stuckMs: 3000 },
    });
    const failed = await settled(created.id, 'shipment.failed', 30_000);
    const history = await runtime.store.history(created.id);
    const timeout = history.find(
      (record) => record.type === 'shipment.parallel.working.region.timeout',
    );
    expect(timeout?.payload).toMatchObject({ pending: ['shipment.working.packing'], after: 1 });
    expect(count(history, 'shipment.parallel.working.billing.region.merged')).toBe(1);
    expect(failed.context.doneCount).toBe(0);
    // The stuck region finishes later and merges nothing: its parallel state is gone.
    await new Promise((resolve) => setTimeout(resolve, 3500));
    const after = await runtime.store.history(created.id);
    expect(count(after, 'shipment.parallel.working.packing.region.merged')).toBe(0);
    expect((await runtime.store.load(created.id))!.value).toEqual(['shipment.failed']);
  }, 120_000);
});
