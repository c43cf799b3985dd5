/**
 * One business event traced across two processes, exported over OTLP/HTTP to a receiver this
 * test runs on 127.0.0.1 (as a collector would receive it): the test process serves the HTTP
 * event with `worker: false`; a separate `machine-routes worker` process, with the SDK set up as
 * docs/operating.md shows, runs the job actor the event started, applies its outcome, and later
 * fires the timer of the state the outcome entered. The request, its transition and commit (this
 * process), the job run and its completion step (the worker) share the request's trace; the
 * timer fire (the worker) is a trace of its own linked to the completion step. On a SQLite file
 * and on PostgreSQL (pg-boss).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { queueBackends } from '../../support/queue-backends.js';
import { send, type TestServer } from '../http/support/servers.js';
import { PROCESS_ATTRIBUTE } from './fixtures/otlp-sdk.js';
import { tracedOrder } from './fixtures/traced-machines.js';
import { startTracedProcesses, type TracedProcesses } from './fixtures/traced-processes.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

const backends = await queueBackends('telemetry/otlp-worker');

describe.each(backends)('one event traced across processes over OTLP/HTTP on $name', (backend) => {
  let traced: TracedProcesses;
  let receiver: TracedProcesses['receiver'];
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    traced = await startTracedProcesses(backend, [tracedOrder], (router) =>
      router.register(tracedOrder, { prefix: 'orders', create: true, machineIdFor: ['PAY'] }),
    );
    ({ receiver, runtime, server } = traced);
  }, 90_000);
  afterAll(() => traced?.close());

  it('should keep the request and the worker’s job run in one trace, and link the timer fire to it', async () => {
    const created = await send(server.url, 'POST', '/orders/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const paid = await send(server.url, 'POST', `/orders/${id}/pay`, {
      headers: { traceparent: PARENT },
    });
    expect(paid.status).toBe(200);
    await vi.waitFor(
      async () =>
        expect((await runtime.restore(tracedOrder, id)).value).toEqual(['otlp_order.archived']),
      { timeout: 30_000, interval: 100 },
    );
    // Named by the timer's key: `<state id>:<event>:<seconds>`.
    const timers = () =>
      receiver.spans.filter(
        (span) => span.name === 'machine_routes.timer otlp_order.paid:ARCHIVE:1',
      );
    await vi.waitFor(() => expect(timers()).toHaveLength(1), {
      timeout: 10_000,
    });

    const inTrace = receiver.spans.filter((span) => span.traceId === TRACE_ID);
    const request = inTrace.find((span) => span.name === 'POST /orders/{machineId}/pay')!;
    expect(request.parentSpanId).toBe('00f067aa0ba902b7');
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'machine_routes.machine': 'otlp_order',
      'machine_routes.instance.id': id,
    });
    // The default tree (MACHINE_TRACE_STEPS off): each step and its commit are recorded on the
    // span that runs it, the request's here and the job's in the worker.
    expect(request.attributes).toMatchObject({
      'machine_routes.transition.source': 'otlp_order.idle',
      'machine_routes.transition.target': 'otlp_order.charging',
      'db.system.name': backend.name === 'postgres' ? 'postgresql' : 'sqlite',
    });
    expect(inTrace.map((span) => span.name).sort()).toEqual([
      'POST /orders/{machineId}/pay',
      'machine_routes.job job.run',
    ]);
    const job = inTrace.find((span) => span.name === 'machine_routes.job job.run')!;
    // Made in the processes said: the request here, the job run in the worker.
    expect(request.attributes[PROCESS_ATTRIBUTE]).toBe('server');
    expect(job.attributes[PROCESS_ATTRIBUTE]).toBe('worker');
    expect(job.attributes).toMatchObject({
      'messaging.system': 'machine_routes',
      'messaging.operation.type': 'process',
      'machine_routes.job.kind': 'job.run',
      'machine_routes.job.attempt': 1,
    });
    // The worker's job span is the child of a span this process exported (the step that
    // enqueued it), so the trace crosses the process boundary through the stored job payload.
    const ids = new Set(inTrace.map((span) => span.spanId));
    expect(ids.has(job.parentSpanId!)).toBe(true);
    // The job outcome's completion step, in the worker, on the job's span.
    expect(job.attributes).toMatchObject({
      'machine_routes.event.type': 'job.outcome',
      'machine_routes.transition.source': 'otlp_order.charging',
      'machine_routes.transition.target': 'otlp_order.paid',
      'machine_routes.commit.rows': expect.any(Number),
    });

    // The timer fire: a trace of its own, linked to the completion step that entered `paid`.
    const [timer] = timers();
    expect(timer!.traceId).not.toBe(TRACE_ID);
    expect(timer!.attributes).toMatchObject({
      'machine_routes.machine': 'otlp_order',
      'machine_routes.instance.id': id,
      'machine_routes.timer.key': 'otlp_order.paid:ARCHIVE:1',
    });
    expect(timer!.attributes[PROCESS_ATTRIBUTE]).toBe('worker');
    expect(timer!.links).toHaveLength(1);
    expect(timer!.links[0]!.traceId).toBe(TRACE_ID);
    expect(ids.has(timer!.links[0]!.spanId)).toBe(true);
    // Its step and commit are recorded on it.
    expect(timer!.attributes).toMatchObject({
      'machine_routes.transition.source': 'otlp_order.paid',
      'machine_routes.transition.target': 'otlp_order.archived',
    });
  }, 120_000);
});
