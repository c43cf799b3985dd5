/**
 * One business event followed through the engine with the real OpenTelemetry SDK: an HTTP
 * event whose transition starts a job actor on the durable queue (embedded SQLite, in-process
 * worker), the job's completion step moves the instance into a state with a timer, and the
 * timer fires. The request, its transition and commit, the job run and the completion step's
 * transition and commit share the request's trace (the job carries the step's trace context);
 * the timer fire is a trace of its own, linked to the step that entered its state
 * (docs/operating.md). The metrics of
 * the run are read back from the SDK's reader.
 */
import { get, type ClientRequest } from 'node:http';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { defineJob } from '../../../src/runtime/definition/job.js';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { sqliteFileBackend } from '../../support/stores.js';
import { installTelemetry, type TestTelemetry } from '../../support/telemetry.js';
import { send, startServer, type TestServer } from '../http/support/servers.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT = `00-${TRACE_ID}-b7ad6b7169203331-01`;

let failNext = false;
/** While set, the charge job waits for it (a job running, for the depth gauge). */
let gate: Promise<void> | null = null;
const charge = defineJob({
  name: 'charge',
  input: z.object({ amount: z.number() }),
  run: async (input) => {
    if (gate !== null) await gate;
    if (failNext) {
      failNext = false;
      throw new Error('card declined');
    }
    return { paid: input.amount };
  },
});

const order = defineMachine({
  config: {
    id: 'traced_order',
    initial: 'idle',
    context: { amount: 40 },
    states: {
      idle: { on: { PAY: 'charging' } },
      charging: {
        job: charge,
        input: ['amount'],
        on: { '@done': 'paid', '@fail': 'failed' },
      },
      paid: { on: { ARCHIVE: { target: 'archived', after: { minutes: 15 } } } },
      archived: { type: 'final' },
      failed: {},
    },
  },
  endpoints: ['PAY'],
});

describe.each([
  { tree: 'default', steps: false },
  { tree: 'MACHINE_TRACE_STEPS', steps: true },
])('one event through the engine, traced (SQLite file, durable queue), $tree tree', ({ steps }) => {
  const backend = sqliteFileBackend();
  const clock = new ManualClock('2026-01-01T00:00:00.000Z');
  let telemetry: TestTelemetry;
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    telemetry = installTelemetry();
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      clock,
      timerIntervalMs: 3_600_000,
      timers: [{ machine: order }],
      machines: [order],
      env: { MACHINE_JOB_TRIES: '1', MACHINE_TRACE_STEPS: String(steps) },
    });
    const router = new MachineRouter({ runtime });
    router.register(order, {
      prefix: 'orders',
      create: true,
      machineIdFor: ['PAY'],
      stream: true,
    });
    server = await startServer('fastify', [router], { error: () => {} });
  });
  afterAll(async () => {
    await server.close();
    await runtime.close();
    await backend.tearDown();
    await telemetry.shutdown();
  });

  const created = async () => {
    const response = await send(server.url, 'POST', '/orders/create');
    return (response.body as { data: { id: string } }).data.id;
  };
  const stateOf = async (id: string) => (await runtime.restore(order, id)).value;

  it('should keep the request, the job run and its completion in one trace, and span the timer fire', async () => {
    const id = await created();
    telemetry.reset();
    const paid = await send(server.url, 'POST', `/orders/${id}/pay`, {
      headers: { traceparent: PARENT },
    });
    expect(paid.status).toBe(200);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_order.paid']), {
      timeout: 15_000,
      interval: 20,
    });
    // The job applies its outcome in the same run: the completion step is a child of its span.
    await vi.waitFor(() =>
      expect(telemetry.spans().map((span) => span.name)).toContain('machine_routes.job job.run'),
    );

    const inTrace = telemetry.spans().filter((span) => span.spanContext().traceId === TRACE_ID);
    const names = inTrace.map((span) => span.name);
    const request = inTrace.find((span) => span.name === 'POST /orders/{machineId}/pay')!;
    if (steps) {
      expect(names).toEqual(
        expect.arrayContaining([
          'POST /orders/{machineId}/pay',
          'machine_routes.transition',
          'machine_routes.commit',
          'machine_routes.job job.run',
        ]),
      );
      // The request's transition, and the completion's: idle -> charging, charging -> paid.
      const transitions = inTrace
        .filter((span) => span.name === 'machine_routes.transition')
        .map((span) => [
          span.attributes['machine_routes.transition.source'],
          span.attributes['machine_routes.transition.target'],
        ]);
      expect(transitions).toEqual(
        expect.arrayContaining([
          ['traced_order.idle', 'traced_order.charging'],
          ['traced_order.charging', 'traced_order.paid'],
        ]),
      );
      const transition = inTrace.find((span) => span.name === 'machine_routes.transition')!;
      expect(transition.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(transition.attributes).toMatchObject({
        'machine_routes.machine': 'traced_order',
        'machine_routes.instance.id': id,
        'machine_routes.event.type': 'PAY',
      });
      const commit = inTrace.find((span) => span.name === 'machine_routes.commit')!;
      expect(commit.attributes).toMatchObject({
        'db.system.name': 'sqlite',
        'machine_routes.instance.id': id,
      });
    } else {
      // Each step and its commit on the span that runs it: two spans in the trace.
      expect(names.sort()).toEqual(['POST /orders/{machineId}/pay', 'machine_routes.job job.run']);
      expect(request.attributes).toMatchObject({
        'machine_routes.machine': 'traced_order',
        'machine_routes.instance.id': id,
        'machine_routes.event.type': 'PAY',
        'machine_routes.transition.source': 'traced_order.idle',
        'machine_routes.transition.target': 'traced_order.charging',
        'db.system.name': 'sqlite',
        'machine_routes.commit.rows': expect.any(Number),
      });
      expect(
        inTrace.find((span) => span.name === 'machine_routes.job job.run')!.attributes,
      ).toMatchObject({
        'machine_routes.event.type': 'job.outcome',
        'machine_routes.transition.source': 'traced_order.charging',
        'machine_routes.transition.target': 'traced_order.paid',
        'db.system.name': 'sqlite',
      });
    }
    const job = inTrace.find((span) => span.name === 'machine_routes.job job.run')!;
    expect(job.attributes).toMatchObject({
      'messaging.operation.type': 'process',
      'machine_routes.job.kind': 'job.run',
      'machine_routes.job.attempt': 1,
    });
    // The job's parent is a span of the request's trace (the step that enqueued it).
    expect(inTrace.map((span) => span.spanContext().spanId)).toContain(
      job.parentSpanContext?.spanId,
    );

    clock.advance(16 * 60_000);
    await runtime.timerWorker!.sweepOnce();
    expect(await stateOf(id)).toEqual(['traced_order.archived']);
    const timer = telemetry.spans().find((span) => span.name.startsWith('machine_routes.timer'))!;
    expect(timer.attributes).toMatchObject({
      'machine_routes.machine': 'traced_order',
      'machine_routes.instance.id': id,
    });
    const underTimer = telemetry
      .spans()
      .filter((span) => span.spanContext().traceId === timer.spanContext().traceId)
      .map((span) => span.name);
    if (steps)
      expect(underTimer).toEqual(
        expect.arrayContaining(['machine_routes.transition', 'machine_routes.commit']),
      );
    else {
      expect(underTimer).toEqual([timer.name]);
      expect(timer.attributes).toMatchObject({
        'machine_routes.transition.source': 'traced_order.paid',
        'machine_routes.transition.target': 'traced_order.archived',
      });
    }
    // A trace of its own, linked to the completion step that entered `paid` (in the request's
    // trace): the link names one of that trace's spans.
    expect(timer.spanContext().traceId).not.toBe(TRACE_ID);
    expect(timer.links.map((link) => link.context.traceId)).toEqual([TRACE_ID]);
    expect(inTrace.map((span) => span.spanContext().spanId)).toContain(
      timer.links[0]!.context.spanId,
    );
  });

  it('should count transitions, commits, lock waits, jobs and their failures, timer lag and 423s', async () => {
    const id = await created();
    failNext = true;
    await send(server.url, 'POST', `/orders/${id}/pay`);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_order.failed']), {
      timeout: 15_000,
      interval: 20,
    });
    // A held lock: the next PAY is answered 423 and counted as contention.
    const busy = await created();
    await runtime.withLock(busy, async () => {
      const refused = await send(server.url, 'POST', `/orders/${busy}/pay`);
      expect(refused.status).toBe(423);
    });
    await vi.waitFor(async () => {
      const points = await telemetry.collect();
      const names = new Set(points.map((point) => point.name));
      for (const name of [
        'machine_routes.events',
        'machine_routes.transition.duration',
        'machine_routes.commit.duration',
        'machine_routes.lock.contentions',
        // The job's completion step waits for the instance's lock (job.outcome).
        'machine_routes.lock.wait.duration',
        'machine_routes.jobs.attempts',
        'machine_routes.jobs.lag',
        'machine_routes.jobs.failures',
        'machine_routes.timers.lag',
      ])
        expect(names, name).toContain(name);
      expect(points).toContainEqual(
        expect.objectContaining({
          name: 'machine_routes.events',
          attributes: expect.objectContaining({ 'machine_routes.outcome': '423' }),
        }),
      );
      expect(points).toContainEqual(
        expect.objectContaining({
          name: 'machine_routes.lock.wait.duration',
          attributes: {
            'machine_routes.machine': 'traced_order',
            'machine_routes.lock.context': 'job.outcome',
          },
        }),
      );
      expect(points).toContainEqual(
        expect.objectContaining({
          name: 'machine_routes.jobs.failures',
          attributes: { 'machine_routes.job.kind': 'job.run', 'machine_routes.job.final': true },
        }),
      );
    });
  });

  it('should gauge the unfinished jobs by kind and count live-state subscribers', async () => {
    const point = async (name: string, key: string, value: string) =>
      (await telemetry.collect()).find(
        (found) => found.name === name && found.attributes[key] === value,
      )?.value;
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const id = await created();
    await send(server.url, 'POST', `/orders/${id}/pay`);
    // The charge job runs and waits: one unfinished job.run.
    await vi.waitFor(async () =>
      expect(await point('machine_routes.jobs.depth', 'machine_routes.job.kind', 'job.run')).toBe(
        1,
      ),
    );
    gate = null;
    open();
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_order.paid']));
    await vi.waitFor(async () =>
      expect(await point('machine_routes.jobs.depth', 'machine_routes.job.kind', 'job.run')).toBe(
        0,
      ),
    );

    const subscribers = () =>
      point('machine_routes.live.subscribers', 'machine_routes.machine', 'traced_order');
    const before = (await subscribers()) ?? 0;
    // Two clients of the state stream, on sockets of their own, then gone.
    const streams = await Promise.all(
      [1, 2].map(
        () =>
          new Promise<ClientRequest>((resolve, reject) => {
            const request = get(`${server.url}/orders/${id}/events`, (response) => {
              expect(response.statusCode).toBe(200);
              resolve(request);
            });
            request.on('error', reject);
          }),
      ),
    );
    await vi.waitFor(async () => expect(await subscribers()).toBe(before + 2));
    for (const stream of streams) stream.destroy();
    await vi.waitFor(async () => expect(await subscribers()).toBe(before));
  });
});
