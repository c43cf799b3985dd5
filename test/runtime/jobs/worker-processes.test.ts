/**
 * The durable queues across real processes (`node --import tsx`): a worker SIGKILLed while it
 * holds a job, and two workers sharing one database. On a SQLite file (embedded queue) and on
 * PostgreSQL (pg-boss).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobInfo } from '../../../src/runtime/jobs/job-queue.js';
import { openJobQueue } from '../../../src/runtime/jobs/index.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { pgBossBackend, sqliteFileBackend, type QueueBackend } from './support/backends.js';
import { openRecorder, type Recorder } from './support/recorder.js';

const WORKER = fileURLToPath(new URL('./fixtures/job-worker.ts', import.meta.url));
const JOBS = 200;

const backends: QueueBackend[] = [sqliteFileBackend()];
const pgBoss = await pgBossBackend('jobs/worker-processes.test.ts');
if (pgBoss) backends.push(pgBoss);

describe.each(backends)('job worker processes on $name', (backend) => {
  let recorder: Recorder;
  const startWorkerProcess = (name: string, mode: 'block' | 'record'): FixtureProcess =>
    startFixture(WORKER, [
      JSON.stringify({ url: backend.url(), name, mode, concurrency: 4, ...backend.settings }),
    ]);

  beforeAll(async () => {
    await backend.setUp();
    // Creates the SQLite file (migrated) or the pg-boss schema before any process races for it.
    await (await backend.open()).close();
    recorder = openRecorder(backend.url());
    await recorder.setUp();
  });
  afterAll(async () => {
    await recorder?.close();
    await backend.tearDown();
  });

  it('should complete, exactly once, a job whose worker was killed while running it', async () => {
    const queue = await openJobQueue(backend.url(), backend.settings);
    try {
      await queue.enqueue({ name: 'crash', payload: { order: 7 }, backoffMs: 0 });
      const doomed = startWorkerProcess('crash', 'block');
      const line = await doomed.waitForLine((text) => text.startsWith('CLAIMED '), 45_000);
      const [, jobId, attempt] = line.split(' ');
      expect(attempt).toBe('1');
      doomed.child.kill('SIGKILL');
      expect(await doomed.exited).toBe('SIGKILL');

      const runs: JobInfo[] = [];
      await queue.work('crash', async (_payload, job) => {
        runs.push(job);
        await recorder.record(job.id, 'fresh worker', job.attempt);
      });
      await queue.start();
      await queue.drain({ timeoutMs: 15_000 });

      expect(runs).toEqual([
        expect.objectContaining({ id: jobId, attempt: 2, payload: { order: 7 } }),
      ]);
      expect(await recorder.summary()).toEqual({
        runs: 1,
        duplicates: 0,
        attemptClashes: 0,
        jobs: 1,
        byWorker: { 'fresh worker': 1 },
      });
    } finally {
      await queue.close({ timeoutMs: 0 });
    }
  }, 90_000);

  // Delivery is at least once (docs/persistence.md "Jobs"): a claim is a lease of the job's
  // timeout, and a run that overstays it (a handler or a worker starved of CPU for longer than
  // the timeout, 250 ms here) is claimed again by another worker. So the property is: every job
  // ran and was completed, and no claim was run twice (a second run is a later attempt).
  it(`should run each of ${JOBS} jobs, never one claim twice, across two worker processes`, async () => {
    const workers = [startWorkerProcess('bulk', 'record'), startWorkerProcess('bulk', 'record')];
    const queue = await openJobQueue(backend.url(), backend.settings);
    try {
      // Generous: process start-up (tsx) is slow while the rest of the suite runs on 2 cores.
      await Promise.all(
        workers.map((worker) => worker.waitForLine((text) => text === 'READY', 45_000)),
      );
      for (let index = 0; index < JOBS; index++)
        await queue.enqueue({ name: 'bulk', payload: index });
      await queue.drain({ names: ['bulk'], timeoutMs: 60_000 });
    } finally {
      for (const worker of workers) worker.child.kill('SIGTERM');
      await queue.close();
    }
    // Graceful exits: any handler still running has finished and recorded.
    expect(await Promise.all(workers.map((worker) => worker.exited))).toEqual([0, 0]);

    const summary = await recorder.summary();
    const perWorker = Object.entries(summary.byWorker).filter(([worker]) =>
      worker.startsWith('pid-'),
    );
    expect(perWorker.reduce((sum, [, runs]) => sum + runs, 0)).toBe(JOBS);
    expect(summary.attemptClashes).toBe(0);
    if (summary.duplicates > 0)
      console.info(`${backend.name}: ${summary.duplicates} re-runs after an expired lease`);
    // Nothing left: every job was completed (a re-run's completion deleted the row).
    const check = await openJobQueue(backend.url(), backend.settings);
    try {
      expect(await check.failedJobs('bulk')).toEqual([]);
    } finally {
      await check.close();
    }
    // Both processes took part.
    expect(perWorker).toHaveLength(2);
  }, 90_000);
});
