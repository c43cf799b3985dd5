/**
 * One behaviour suite for every durable queue: the embedded queue (in-memory database, SQLite
 * file) and pg-boss on PostgreSQL. Each test uses job names of its own, so tests sharing a
 * backend never see each other's jobs.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JobInfo, Json } from '../../../src/runtime/jobs/job-queue.js';
import type { DurableJobQueue, DurableJobQueueOptions } from '../../../src/runtime/jobs/index.js';
import {
  deferred,
  memoryBackend,
  pgBossBackend,
  sqliteFileBackend,
  type QueueBackend,
} from './support/backends.js';

const backends: QueueBackend[] = [memoryBackend(), sqliteFileBackend()];
const pgBoss = await pgBossBackend('jobs/job-queue.test.ts');
if (pgBoss) backends.push(pgBoss);

// Generous: pg-boss retries and reclaims in whole seconds. Tests finish as soon as jobs do.
const WAIT = { timeoutMs: 15_000 };

describe.each(backends)('durable job queue on $name', (backend) => {
  const opened: DurableJobQueue[] = [];
  let sequence = 0;
  const jobName = () => `test.${(sequence += 1)}`;
  const open = async (options: DurableJobQueueOptions = {}) => {
    const queue = await backend.open(options);
    opened.push(queue);
    return queue;
  };

  beforeAll(() => backend.setUp());
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close({ timeoutMs: 0 })));
  });
  afterAll(() => backend.tearDown());

  it('should run an enqueued job once, with its payload (key order kept) and job info', async () => {
    const name = jobName();
    const queue = await open();
    const seen: { payload: Json; job: JobInfo }[] = [];
    await queue.work(name, (payload, job) => {
      seen.push({ payload, job });
    });
    await queue.enqueue({
      name,
      payload: { zeta: 1, alpha: [1, 'x', null, { b: true, a: false }] },
    });
    await queue.start();
    await queue.drain(WAIT);

    expect(seen).toHaveLength(1);
    expect(JSON.stringify(seen[0]!.payload)).toBe(
      '{"zeta":1,"alpha":[1,"x",null,{"b":true,"a":false}]}',
    );
    expect(seen[0]!.job).toMatchObject({ name, key: null, attempt: 1 });
    expect(seen[0]!.job.runAt).toBeInstanceOf(Date);
    expect(await queue.failedJobs(name)).toEqual([]);
  });

  it('should not run a job before its runAt', async () => {
    const name = jobName();
    const queue = await open();
    const ranAt: number[] = [];
    await queue.work(name, () => {
      ranAt.push(Date.now());
    });
    await queue.start();
    const runAt = new Date(Date.now() + 400);
    await queue.enqueue({ name, payload: null, runAt });
    // Not due yet: nothing to wait for, nothing ran.
    await queue.idle(WAIT);
    expect(ranAt).toEqual([]);

    await queue.drain(WAIT);
    expect(ranAt).toHaveLength(1);
    expect(ranAt[0]!).toBeGreaterThanOrEqual(runAt.getTime());
  });

  it('should retry a failing job with growing backoff, then keep it as failed with the last error', async () => {
    const name = jobName();
    const errors: unknown[] = [];
    const queue = await open({ onError: (error) => errors.push(error) });
    const attempts: { attempt: number; at: number }[] = [];
    await queue.work(name, (_payload, job) => {
      attempts.push({ attempt: job.attempt, at: Date.now() });
      throw new Error(`boom ${job.attempt}`);
    });
    const backoffMs = backend.settings.backoffMs;
    await queue.enqueue({ name, payload: { order: 7 }, key: 'order-7', maxAttempts: 3, backoffMs });
    await queue.start();
    await queue.drain(WAIT);

    expect(attempts.map(({ attempt }) => attempt)).toEqual([1, 2, 3]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(backoffMs);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(2 * backoffMs);
    expect(errors).toHaveLength(3);
    const failed = await queue.failedJobs(name);
    expect(failed).toEqual([
      expect.objectContaining({ name, payload: { order: 7 }, key: 'order-7', attempts: 3 }),
    ]);
    expect(failed[0]!.lastError).toContain('boom 3');
    expect(await queue.failedJobs()).toEqual(expect.arrayContaining(failed));
  });

  it('should complete a job whose later attempt succeeds', async () => {
    const name = jobName();
    const queue = await open();
    const attempts: number[] = [];
    await queue.work(name, (_payload, job) => {
      attempts.push(job.attempt);
      if (job.attempt === 1) throw new Error('transient');
    });
    await queue.enqueue({ name, payload: 'x', backoffMs: 0 });
    await queue.start();
    await queue.drain(WAIT);

    expect(attempts).toEqual([1, 2]);
    expect(await queue.failedJobs(name)).toEqual([]);
  });

  it('should ignore a second enqueue with the same key while the first has not started', async () => {
    const name = jobName();
    const queue = await open();
    const ran: Json[] = [];
    await queue.work(name, (payload) => {
      ran.push(payload);
    });
    await queue.enqueue({ name, payload: 'first', key: 'k' });
    await queue.enqueue({ name, payload: 'second', key: 'k' });
    await queue.enqueue({ name, payload: 'other', key: 'k2' });
    await queue.start();
    await queue.drain(WAIT);
    expect([...ran].sort()).toEqual(['first', 'other']);

    // Once the first has run, the key is free again.
    await queue.enqueue({ name, payload: 'third', key: 'k' });
    await queue.drain(WAIT);
    expect([...ran].sort()).toEqual(['first', 'other', 'third']);
  });

  it('should run a job left pending by a closed queue once a new queue opens', async () => {
    const name = jobName();
    const first = await open();
    await first.enqueue({ name, payload: 'kept' });
    await first.close();

    const second = await open();
    const ran: Json[] = [];
    await second.work(name, (payload) => {
      ran.push(payload);
    });
    await second.start();
    await second.drain(WAIT);
    expect(ran).toEqual(['kept']);
  });

  it('should run again, on another queue, a job whose worker died, once its timeout expires', async () => {
    const name = jobName();
    const first = await open();
    const claimed = deferred<JobInfo>();
    await first.work(name, (_payload, job) => {
      claimed.resolve(job);
      return new Promise<void>(() => {}); // hangs: this worker "dies" holding the job
    });
    await first.enqueue({ name, payload: 'x', backoffMs: 0 });
    await first.start();
    const job = await claimed.promise;
    await first.close({ timeoutMs: 0 });

    const second = await open();
    const runs: JobInfo[] = [];
    await second.work(name, (_payload, info) => {
      runs.push(info);
    });
    await second.start();
    await second.drain(WAIT);
    expect(runs).toEqual([expect.objectContaining({ id: job.id, name, attempt: 2 })]);
  });

  it('should hand a job still running at the bound of close back to the queue at once', async () => {
    const name = jobName();
    const first = await open();
    const claimed = deferred<JobInfo>();
    await first.work(name, (_payload, job) => {
      claimed.resolve(job);
      return new Promise<void>(() => {}); // still running when the bound expires
    });
    // A claim that would last an hour: only the hand-back makes it run again within WAIT.
    await first.enqueue({ name, payload: 'x', backoffMs: 0, timeoutMs: 3_600_000 });
    await first.start();
    const job = await claimed.promise;
    await first.close({ timeoutMs: 50 });

    const second = await open();
    const runs: JobInfo[] = [];
    await second.work(name, (_payload, info) => {
      runs.push(info);
    });
    await second.start();
    await second.drain(WAIT);
    expect(runs).toEqual([expect.objectContaining({ id: job.id, name, attempt: 2 })]);
    expect(await second.failedJobs(name)).toEqual([]);
  });

  it('should keep as failed a job whose last attempt timed out', async () => {
    const name = jobName();
    const first = await open();
    const claimed = deferred<JobInfo>();
    await first.work(name, (_payload, job) => {
      claimed.resolve(job);
      return new Promise<void>(() => {});
    });
    await first.enqueue({ name, payload: 'x', maxAttempts: 1 });
    await first.start();
    await claimed.promise;
    await first.close({ timeoutMs: 0 });

    const second = await open();
    const runs: JobInfo[] = [];
    await second.work(name, (_payload, info) => {
      runs.push(info);
    });
    await second.start();
    await second.drain(WAIT);
    expect(runs).toEqual([]);
    const failed = await second.failedJobs(name);
    expect(failed).toEqual([expect.objectContaining({ name, attempts: 1 })]);
    // pg-boss: the closed queue's holder connection is gone, so the attempt is over before its timeout.
    expect(failed[0]!.lastError).toMatch(/timed? ?out|its worker stopped/i);
  });

  it('should wait for running handlers on stop', async () => {
    const name = jobName();
    const queue = await open();
    const started = deferred();
    let finished = false;
    await queue.work(name, async () => {
      started.resolve();
      await delay(150);
      finished = true;
    });
    await queue.enqueue({ name, payload: null });
    await queue.start();
    await started.promise;
    await queue.stop();

    expect(finished).toBe(true);
    await queue.drain({ ...WAIT, names: [name] });
  });

  it('should run up to `concurrency` handlers at once', async () => {
    const name = jobName();
    const queue = await open({ concurrency: 3 });
    let active = 0;
    let most = 0;
    await queue.work(name, async () => {
      active += 1;
      most = Math.max(most, active);
      await delay(50);
      active -= 1;
    });
    for (let index = 0; index < 6; index++) await queue.enqueue({ name, payload: index });
    await queue.start();
    await queue.drain(WAIT);
    expect(most).toBe(3);
  });
});
