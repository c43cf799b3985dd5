/**
 * Job actors with the DURABLE queue really running: `MachineRuntime.open` on a SQLite file
 * (embedded `machine_jobs` queue, in-process worker) and on PostgreSQL (pg-boss): `@done` with
 * the output (guarded branches), `@fail` after the queue's retries, `@timeout`, abort when the
 * state is left (late result ignored), fire-and-forget with `target`.
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  defineJob,
  defineMachine,
  type EventObject,
  type JobRunContext,
} from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('delegation/job-actors-durable');

// Generous: a loaded 2-core machine, pg-boss's whole-second timers and retry delays.
const DEADLINE = { timeout: 30_000, interval: 25 };

/** One call of a job function, as the job saw it. */
interface Call {
  job: string;
  orderId: string;
  amount: number | undefined;
  key: string;
  attempt: number;
  actor: string | null;
  instanceId: string;
}
const calls: Call[] = [];
/** What the charge job does, by order id (each test uses its own order). */
const scripts = new Map<string, (signal: AbortSignal) => Promise<unknown>>();
/** Order ids whose job saw its signal fire. */
const aborted = new Set<string>();

function note(job: string, input: { orderId: string; amount?: number }, run: JobRunContext): void {
  calls.push({
    job,
    orderId: input.orderId,
    amount: input.amount,
    key: run.idempotencyKey,
    attempt: run.attempt,
    actor: run.actor,
    instanceId: run.instance.id,
  });
  run.signal.addEventListener('abort', () => aborted.add(input.orderId));
}

const charge = defineJob({
  name: 'charge',
  input: z.object({ orderId: z.string(), amount: z.number() }),
  output: z.object({ paymentId: z.string(), amount: z.number() }),
  run: async (input, run) => {
    note('charge', input, run);
    const script = scripts.get(input.orderId);
    if (script !== undefined)
      return (await script(run.signal)) as { paymentId: string; amount: number };
    return { paymentId: `pay-${input.orderId}`, amount: input.amount };
  },
});

const seen: EventObject[] = [];

const shop = defineMachine({
  config: {
    id: 'shop',
    initial: 'idle',
    context: { orderId: '', amount: 40, paymentId: null as string | null },
    states: {
      idle: { on: { PAY: 'charging', QUOTE: 'quoting', NOTIFY: 'notifying' } },
      charging: {
        job: charge,
        input: ['orderId', 'amount'],
        on: {
          '@done': [
            { target: 'review', guards: 'isLarge' },
            { target: 'paid', actions: 'storePayment' },
          ],
          '@fail': { target: 'failed', actions: 'remember' },
          '@timeout': { target: 'expired', after: { minutes: 5 } },
          CANCEL: 'cancelled',
          RETRY: 'charging',
        },
      },
      quoting: {
        job: charge,
        input: ['orderId', 'amount'],
        on: { '@done': 'paid', '@timeout': { target: 'expired', after: 1 } },
      },
      notifying: {
        job: async function sendReceipt(input: { orderId: string }, run: JobRunContext) {
          note('sendReceipt', input, run);
          return { sent: true };
        },
        input: ['orderId'],
        target: 'paid',
      },
      review: {},
      paid: {},
      failed: {},
      expired: {},
      cancelled: {},
    },
  },
  behavior: {
    guards: {
      isLarge: ({ event }) => (event.payload?.output as { amount: number }).amount > 1000,
    },
    actions: {
      storePayment: ({ context, event }) => {
        context.paymentId = (event.payload?.output as { paymentId: string }).paymentId;
      },
      remember: ({ event }) => void seen.push(event),
    },
  },
});

let orders = 0;

describe.each(backends)('job actors with the durable worker on $name', (backend) => {
  let runtime: MachineRuntime;

  beforeAll(async () => {
    const url = await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: url,
      machines: [shop],
      // Failed attempts are expected here: keep them out of the test output.
      jobQueue: {
        pollIntervalMs: 20,
        backoffMs: 50,
        maxAttempts: 3,
        timeoutMs: 20_000,
        onError: () => {},
      },
      jobAbortPollMs: 50,
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  const order = async (amount = 40) => {
    orders += 1;
    const orderId = `${backend.name}-${orders}`;
    const id = (await runtime.create(shop, { input: { orderId, amount } })).snapshot.id;
    return { id, orderId };
  };
  const reaches = async (id: string, state: string) => {
    await vi.waitFor(async () => {
      expect((await runtime.restore(shop, id)).value).toEqual([`shop.${state}`]);
    }, DEADLINE);
    return (await runtime.history(shop, id)).map((record) => record.type);
  };
  const rows = async (id: string) => (await runtime.children(id)).map((row) => row.status);
  const jobRecords = (types: string[]) => types.filter((type) => type.startsWith('shop.child.'));
  const callsOf = (orderId: string) => calls.filter((call) => call.orderId === orderId);

  it('should route @done with the validated output and run the job once with its context', async () => {
    const { id, orderId } = await order();
    const { snapshot } = await runtime.send(shop, id, { type: 'PAY', actor: 'user-1' });
    expect(snapshot.value).toEqual(['shop.charging']);

    const types = await reaches(id, 'paid');

    expect((await runtime.restore(shop, id)).context.paymentId).toBe(`pay-${orderId}`);
    expect(jobRecords(types)).toEqual(['shop.child.charge.start', 'shop.child.charge.done']);
    const [row] = await runtime.children(id);
    expect(row).toMatchObject({
      status: 'completed',
      childMachineId: 'charge',
      childRootEventId: null,
    });
    expect(callsOf(orderId)).toEqual([
      {
        job: 'charge',
        orderId,
        amount: 40,
        key: row!.id,
        attempt: 1,
        actor: 'user-1',
        instanceId: id,
      },
    ]);
    const done = (await runtime.history(shop, id)).find(
      (record) => record.type === 'shop.child.charge.done',
    );
    expect(done?.payload).toEqual({
      jobId: row!.id,
      job: 'charge',
      output: { paymentId: `pay-${orderId}`, amount: 40 },
    });
  });

  it('should pick the guarded @done branch', async () => {
    const { id } = await order(5000);
    await runtime.send(shop, id, { type: 'PAY' });
    await reaches(id, 'review');
  });

  it('should route @fail with a serializable error after the last of the queue retries', async () => {
    const { id, orderId } = await order();
    scripts.set(orderId, async () => {
      throw new Error('provider down');
    });
    seen.length = 0;
    await runtime.send(shop, id, { type: 'PAY' });
    const types = await reaches(id, 'failed');

    const attempts = callsOf(orderId);
    expect(attempts.map((call) => call.attempt)).toEqual([1, 2, 3]);
    // One idempotency key for every attempt of the job.
    expect(new Set(attempts.map((call) => call.key)).size).toBe(1);
    expect(jobRecords(types)).toEqual(['shop.child.charge.start', 'shop.child.charge.fail']);
    expect(seen.at(-1)?.payload).toEqual({
      jobId: attempts[0]!.key,
      job: 'charge',
      error: { name: 'Error', code: null, message: 'provider down' },
    });
    expect(await rows(id)).toEqual(['failed']);
  });

  it('should route @fail when the output does not match the schema, without retrying', async () => {
    const { id, orderId } = await order();
    scripts.set(orderId, async () => ({ paymentId: 42 }));
    await runtime.send(shop, id, { type: 'PAY' });

    await reaches(id, 'failed');
    expect(callsOf(orderId)).toHaveLength(1);
  });

  it('should route @timeout and abort the running job', async () => {
    const { id, orderId } = await order();
    scripts.set(
      orderId,
      (signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => resolve({ paymentId: 'late', amount: 1 })),
        ),
    );
    await runtime.send(shop, id, { type: 'QUOTE' });

    const types = await reaches(id, 'expired');

    expect(jobRecords(types)).toEqual(['shop.child.charge.start', 'shop.child.charge.timeout']);
    await vi.waitFor(() => expect(aborted.has(orderId)).toBe(true), DEADLINE);
    expect(await rows(id)).toEqual(['timed_out']);
  });

  it('should abort the job when the state is left and ignore its late result', async () => {
    const { id, orderId } = await order();
    let finished = false;
    scripts.set(
      orderId,
      (signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            finished = true;
            resolve({ paymentId: 'late', amount: 1 });
          }),
        ),
    );
    await runtime.send(shop, id, { type: 'PAY' });
    await vi.waitFor(() => expect(callsOf(orderId)).toHaveLength(1), DEADLINE);

    const { snapshot } = await runtime.send(shop, id, { type: 'CANCEL' });

    expect(snapshot.value).toEqual(['shop.cancelled']);
    await vi.waitFor(() => expect(finished).toBe(true), DEADLINE);
    expect(aborted.has(orderId)).toBe(true);
    expect(await rows(id)).toEqual(['cancelled']);
    const types = await reaches(id, 'cancelled');
    expect(jobRecords(types)).toEqual(['shop.child.charge.start']);
  });

  it('should abort only the earlier job when the state is left and entered again', async () => {
    const { id, orderId } = await order();
    let run = 0;
    scripts.set(orderId, async (signal) => {
      run += 1;
      if (run === 1) await new Promise((resolve) => signal.addEventListener('abort', resolve));
      return { paymentId: `attempt-${run}`, amount: 40 };
    });
    await runtime.send(shop, id, { type: 'PAY' });
    await vi.waitFor(() => expect(callsOf(orderId)).toHaveLength(1), DEADLINE);

    await runtime.send(shop, id, { type: 'RETRY' });

    const types = await reaches(id, 'paid');
    expect((await runtime.restore(shop, id)).context.paymentId).toBe('attempt-2');
    expect(jobRecords(types)).toEqual([
      'shop.child.charge.start',
      'shop.child.charge.start',
      'shop.child.charge.done',
    ]);
    expect(await rows(id)).toEqual(['cancelled', 'completed']);
    expect(aborted.has(orderId)).toBe(true);
  });

  it('should move on at once with target and run a fire-and-forget job after the commit', async () => {
    const { id, orderId } = await order();

    const { snapshot } = await runtime.send(shop, id, { type: 'NOTIFY' });

    expect(snapshot.value).toEqual(['shop.paid']);
    await vi.waitFor(async () => expect(await rows(id)).toEqual(['completed']), DEADLINE);
    expect(callsOf(orderId).map((call) => call.job)).toEqual(['sendReceipt']);
    const types = (await runtime.history(shop, id)).map((record) => record.type);
    expect(jobRecords(types)).toEqual(['shop.child.sendReceipt.start']);
    expect(types).toContain('shop.transition.notifying.@always.start');
  });
});
