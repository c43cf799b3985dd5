/**
 * A `machine-routes worker` process SIGKILLed while it runs a child start job (the child's
 * entry action blocks after saying so on stdout). After a fresh worker process takes over, the
 * job completes once: one child instance, one `<parent>.child.<child>.done` record, the parent
 * at `@done` once. On a SQLite file and on PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  SqliteStore,
  openJobQueue,
  type Store,
} from '../../../src/runtime/index.js';
import { PostgresStore } from '../../../src/postgres.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { queueBackends } from '../../support/queue-backends.js';
import { onboardingMachine, slowStartMachine } from './fixtures/machines.js';

const CLI = fileURLToPath(new URL('./fixtures/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./fixtures/machine-routes.config.ts', import.meta.url));

const backends = await queueBackends('delegation/worker-crash');

/** Child instances of a parent, counted in the store's own table. */
async function childInstances(store: Store, parentId: string): Promise<number> {
  const sql = 'SELECT count(*) AS n FROM machine_instances WHERE parent_root_event_id = ';
  if (store instanceof SqliteStore)
    return (store.database.prepare(`${sql}?`).get(parentId) as { n: number }).n;
  const result = await (store as PostgresStore).pool.query<{ n: string }>(`${sql}$1`, [parentId]);
  return Number(result.rows[0]!.n);
}

describe.each(backends)('a worker process killed mid-job on $name', (backend) => {
  let url: string;
  let producer: MachineRuntime;
  const processes: FixtureProcess[] = [];

  const worker = (env: Record<string, string>): FixtureProcess => {
    const started = startFixture(
      CLI,
      ['worker', '--config', CONFIG, '--database', url, '--concurrency', '2'],
      { MACHINE_JOB_POLL_INTERVAL: '0.05', MACHINE_JOB_TIMEOUT: '5', ...env },
    );
    processes.push(started);
    return started;
  };

  beforeAll(async () => {
    url = await backend.setUp();
    // Enqueues only (separate workers run the jobs). The start job it writes may stay claimed
    // 2 s before another worker takes it over.
    producer = await MachineRuntime.open({
      databaseUrl: url,
      worker: false,
      jobQueue: { timeoutMs: 2000, backoffMs: 100 },
    });
  });
  afterAll(async () => {
    for (const started of processes) started.child.kill('SIGKILL');
    await Promise.all(processes.map((started) => started.exited));
    await producer?.close();
    await backend.tearDown();
  });

  it('should complete the child start once after a fresh worker takes it over', async () => {
    const { snapshot } = await producer.create(onboardingMachine);
    const id = snapshot.id;

    const doomed = worker({ MR_TEST_BLOCK_CHILD_ENTRY: '1' });
    await doomed.waitForLine((line) => line.startsWith('CHILD_ENTRY '), 45_000);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe('SIGKILL');
    // Killed inside the job: nothing of the child was committed.
    expect((await producer.children(id)).map((row) => row.status)).toEqual(['pending']);
    expect(await childInstances(producer.store, id)).toBe(0);

    const fresh = worker({});
    await vi.waitFor(
      async () => {
        expect((await producer.restore(onboardingMachine, id)).value).toEqual(['onboarding.done']);
      },
      { timeout: 45_000, interval: 50 },
    );

    const types = (await producer.history(onboardingMachine, id)).map((record) => record.type);
    expect(types.filter((type) => type.startsWith('onboarding.child.'))).toEqual([
      'onboarding.child.slow_start.start',
      'onboarding.child.slow_start.done',
    ]);
    expect(
      types.filter((type) => type === 'onboarding.transition.starting.@done.start'),
    ).toHaveLength(1);
    expect(await childInstances(producer.store, id)).toBe(1);
    const [row] = await producer.children(id);
    expect(row?.status).toBe('completed');
    expect(await producer.store.load(row!.id)).toMatchObject({
      machineId: slowStartMachine.id,
      value: ['slow_start.ready'],
      status: 'done',
    });

    // The killed attempt was retried, not kept as failed.
    const queue = await openJobQueue(url);
    try {
      expect(await queue.failedJobs()).toEqual([]);
    } finally {
      await queue.close();
    }
    fresh.child.kill('SIGTERM');
    expect(await fresh.exited).toBe(0);
  }, 120_000);
});
