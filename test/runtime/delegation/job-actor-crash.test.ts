/**
 * A `machine-routes worker` process SIGKILLed while a job actor's function runs (it blocks after
 * logging its call), with the default job timeout (300 s). A fresh worker takes the job over at
 * once, its worker being dead (docs/persistence.md "Dead holders"), not after the timeout, and
 * runs the function again with the same idempotency key; the outcome is applied to the parent once: one
 * `<m>.child.<job>.done` record, one `@done` transition, the row `completed`. A duplicate
 * delivery of the job afterwards changes nothing. And a CANCEL sent by another process while
 * the worker runs the function fires its signal there; its late result is ignored. On a SQLite
 * file and on PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { JOB_HANDLERS, MachineRuntime, openJobQueue } from '../../../src/runtime/index.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { durableBackends } from '../../support/durable-backends.js';
import { billingMachine } from './fixtures/machines.js';

const CLI = fileURLToPath(new URL('./fixtures/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./fixtures/machine-routes.config.ts', import.meta.url));

const backends = await durableBackends('delegation/job-actor-crash');

describe.each(backends)('a worker killed inside a job actor on $name', (backend) => {
  let url: string;
  let log: string;
  let producer: MachineRuntime;
  const processes: FixtureProcess[] = [];

  const worker = (env: Record<string, string>): FixtureProcess => {
    const started = startFixture(
      CLI,
      ['worker', '--config', CONFIG, '--database', url, '--concurrency', '2'],
      { MACHINE_JOB_POLL_INTERVAL: '0.05', MR_TEST_JOB_LOG: log, ...env },
    );
    processes.push(started);
    return started;
  };
  /** `[pid, idempotencyKey, attempt]` of every call of the job function, in order. */
  const calls = () =>
    readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' '));

  beforeAll(async () => {
    url = await backend.setUp();
    log = join(backend.dir(), 'calls.log');
    // Enqueues only, with the default job timeout (300 s): a dead worker's run job is taken over
    // because its worker is gone, well before the timeout would free it.
    producer = await MachineRuntime.open({
      databaseUrl: url,
      worker: false,
      jobQueue: { backoffMs: 100 },
    });
  });
  afterAll(async () => {
    for (const started of processes) started.child.kill('SIGKILL');
    await Promise.all(processes.map((started) => started.exited));
    await producer?.close();
    await backend.tearDown();
  });

  it('should run the function again with the same key and apply its outcome once', async () => {
    const { snapshot } = await producer.create(billingMachine);
    const id = snapshot.id;
    expect(snapshot.value).toEqual(['billing.charging']);

    const doomed = worker({ MR_TEST_BLOCK_JOB: '1' });
    await doomed.waitForLine((line) => line.startsWith('JOB_RUN '), 45_000);
    doomed.child.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await doomed.exited).toBe('SIGKILL');
    // Killed inside the function: nothing of its outcome was committed.
    expect((await producer.restore(billingMachine, id)).value).toEqual(['billing.charging']);
    expect((await producer.children(id)).map((row) => row.status)).toEqual(['running']);

    const fresh = worker({});
    await vi.waitFor(
      async () => {
        expect((await producer.restore(billingMachine, id)).value).toEqual(['billing.paid']);
      },
      { timeout: 45_000, interval: 50 },
    );
    // The fresh worker's start-up (a tsx process) included.
    console.log(
      `job actor re-run after a worker kill (${backend.name}): ${Date.now() - killedAt} ms`,
    );

    const [row] = await producer.children(id);
    expect(row?.status).toBe('completed');
    // The function ran twice (killed, then again), with one idempotency key.
    const [first, second] = calls();
    expect(calls()).toHaveLength(2);
    expect(first![1]).toBe(row!.id);
    expect(second![1]).toBe(row!.id);
    expect([first![2], second![2]]).toEqual(['1', '2']);
    expect(first![0]).not.toBe(second![0]);
    const once = async () => {
      const types = (await producer.history(billingMachine, id)).map((record) => record.type);
      expect(types.filter((type) => type.startsWith('billing.child.'))).toEqual([
        'billing.child.chargeCard.start',
        'billing.child.chargeCard.done',
      ]);
      expect(
        types.filter((type) => type === 'billing.transition.charging.@done.start'),
      ).toHaveLength(1);
      expect((await producer.restore(billingMachine, id)).context.paymentId).toBe(
        `pay-${row!.id}-25`,
      );
    };
    await once();

    // The same job delivered again (a crash after the outcome, before the queue recorded it):
    // the row is terminal, so neither the function nor the parent runs again.
    const queue = await openJobQueue(url);
    try {
      await queue.enqueue({
        name: JOB_HANDLERS['job.run'].name,
        payload: {
          parentMachineId: 'billing',
          parentId: id,
          parentStateId: 'billing.charging',
          job: 'chargeCard',
          jobId: row!.id,
          input: { amount: 25 },
          actor: null,
          fireAndForget: false,
        },
      });
      await queue.drain({ names: [JOB_HANDLERS['job.run'].name], timeoutMs: 30_000 });
      expect(await queue.failedJobs()).toEqual([]);
    } finally {
      await queue.close();
    }
    expect(calls()).toHaveLength(2);
    await once();

    fresh.child.kill('SIGTERM');
    expect(await fresh.exited).toBe(0);
  }, 120_000);

  it('should abort the function in the worker process when another process leaves the state', async () => {
    const { snapshot } = await producer.create(billingMachine);
    const id = snapshot.id;
    const blocking = worker({ MR_TEST_BLOCK_JOB: '1' });
    await blocking.waitForLine((line) => line.startsWith('JOB_RUN '), 45_000);

    const { snapshot: left } = await producer.send(billingMachine, id, { type: 'CANCEL' });

    expect(left.value).toEqual(['billing.cancelled']);
    // The worker re-reads the job's row (every second by default) and fires the signal.
    await blocking.waitForLine((line) => line.startsWith('JOB_ABORTED '), 45_000);
    // Its late result changes nothing; the worker finishes the job and stops cleanly.
    blocking.child.kill('SIGTERM');
    expect(await blocking.exited).toBe(0);
    expect((await producer.children(id)).map((row) => row.status)).toEqual(['cancelled']);
    const types = (await producer.history(billingMachine, id)).map((record) => record.type);
    expect(types.filter((type) => type.startsWith('billing.child.'))).toEqual([
      'billing.child.chargeCard.start',
    ]);
    expect((await producer.restore(billingMachine, id)).value).toEqual(['billing.cancelled']);
  }, 120_000);
});
