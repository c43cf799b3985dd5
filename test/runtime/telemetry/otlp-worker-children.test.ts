/**
 * Child machines traced across two processes, exported over OTLP/HTTP to a receiver this test
 * runs on 127.0.0.1: the test process serves the HTTP events with `worker: false`; a separate
 * `machine-routes worker` process runs every queued child start (`machine_routes.job
 * child.start`) and routes every outcome to the parent (`machine_routes.job child.complete`).
 * A child that finishes in its first step: its start and completion (worker) descend from the
 * request's span (this process) in the request's trace, and the completion links to that request
 * too. A child finished later by its own event: the completion is in that event's trace, linked
 * to the request that started the child (docs/operating.md "Traces"). On a SQLite file and on
 * PostgreSQL (pg-boss).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { queueBackends } from '../../support/queue-backends.js';
import { send, type TestServer } from '../http/support/servers.js';
import type { ReceivedSpan } from './fixtures/otlp-receiver.js';
import { PROCESS_ATTRIBUTE } from './fixtures/otlp-sdk.js';
import { tracedCheck, tracedParent, tracedSlow } from './fixtures/traced-machines.js';
import { startTracedProcesses, type TracedProcesses } from './fixtures/traced-processes.js';

const traceOf = (n: number) => `${String(n).padStart(2, '0')}a7651916cd43dd8448eb211c80319c`;

const backends = await queueBackends('telemetry/otlp-children');

describe.each(backends)('child machines traced across processes on $name', (backend) => {
  let traced: TracedProcesses;
  let receiver: TracedProcesses['receiver'];
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    traced = await startTracedProcesses(
      backend,
      [tracedParent, tracedCheck, tracedSlow],
      (router) => {
        router.register(tracedParent, {
          prefix: 'parents',
          create: true,
          machineIdFor: ['REVIEW', 'WAIT'],
        });
        router.register(tracedSlow, { prefix: 'slows', machineIdFor: ['GO'] });
      },
    );
    ({ receiver, runtime, server } = traced);
  }, 90_000);
  afterAll(() => traced?.close());

  const stateOf = async (id: string) => (await runtime.restore(tracedParent, id)).value;
  const inTrace = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
  const named = (spans: ReceivedSpan[], name: string) => {
    const found = spans.find((span) => span.name === name);
    expect(found, `${name} in ${spans.map((span) => span.name).join(', ')}`).toBeDefined();
    return found!;
  };
  /** True when `span` descends from `ancestor` within `spans`. */
  const descends = (spans: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan) => {
    let parentId = span.parentSpanId;
    while (parentId !== undefined && parentId !== '') {
      if (parentId === ancestor.spanId) return true;
      parentId = spans.find((found) => found.spanId === parentId)?.parentSpanId;
    }
    return false;
  };
  const completionOf = (childId: unknown) =>
    receiver.spans.find(
      (span) =>
        span.name === 'machine_routes.job child.complete' &&
        span.attributes['machine_routes.child.id'] === childId,
    );

  it('should keep a queued child’s start and completion, run by the worker, in the request’s trace', async () => {
    const created = await send(server.url, 'POST', '/parents/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const reviewTrace = traceOf(1);
    const review = await send(server.url, 'POST', `/parents/${id}/review`, {
      headers: { traceparent: `00-${reviewTrace}-c7ad6b7169203331-01` },
    });
    expect(review.status).toBe(200);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['otlp_parent.reviewed']), {
      timeout: 30_000,
      interval: 100,
    });
    await vi.waitFor(
      () =>
        expect(inTrace(reviewTrace).map((span) => span.name)).toContain(
          'machine_routes.job child.complete',
        ),
      { timeout: 10_000 },
    );

    const spans = inTrace(reviewTrace);
    const request = named(spans, 'POST /parents/{machineId}/review');
    expect(request.parentSpanId).toBe('c7ad6b7169203331');
    expect(request.attributes[PROCESS_ATTRIBUTE]).toBe('server');
    const start = named(spans, 'machine_routes.job child.start');
    const complete = named(spans, 'machine_routes.job child.complete');
    // Both run in the worker process, under the spans this process exported.
    expect(start.attributes[PROCESS_ATTRIBUTE]).toBe('worker');
    expect(complete.attributes[PROCESS_ATTRIBUTE]).toBe('worker');
    expect(descends(spans, start, request)).toBe(true);
    expect(start.attributes).toMatchObject({
      'messaging.system': 'machine_routes',
      'machine_routes.job.kind': 'child.start',
      'machine_routes.machine': 'otlp_parent',
      'machine_routes.instance.id': id,
      'machine_routes.child.machine': 'otlp_check',
      'machine_routes.child.status': 'completed',
    });
    const childId = start.attributes['machine_routes.child.id'];
    expect(typeof childId).toBe('string');
    // Enqueued by the child's first step, which ran under the start job's span.
    expect(descends(spans, complete, start)).toBe(true);
    expect(complete.attributes).toMatchObject({
      'machine_routes.job.kind': 'child.complete',
      'machine_routes.machine': 'otlp_parent',
      'machine_routes.instance.id': id,
      'machine_routes.child.id': childId,
      'machine_routes.child.outcome': 'done',
      // The parent's completion step, recorded on the job's span.
      'machine_routes.transition.source': 'otlp_parent.reviewing',
      'machine_routes.transition.target': 'otlp_parent.reviewed',
    });
    // Linked to the step that started the child: the request's span.
    expect(complete.links.map((link) => link.spanId)).toContain(request.spanId);
  }, 60_000);

  it('should put the completion of a child finished by its own event in that event’s trace, linked to the start', async () => {
    const created = await send(server.url, 'POST', '/parents/create');
    const id = (created.body as { data: { id: string } }).data.id;
    await send(server.url, 'POST', `/parents/${id}/review`);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['otlp_parent.reviewed']), {
      timeout: 30_000,
      interval: 100,
    });

    const waitTrace = traceOf(2);
    const wait = await send(server.url, 'POST', `/parents/${id}/wait`, {
      headers: { traceparent: `00-${waitTrace}-c7ad6b7169203332-01` },
    });
    expect(wait.status).toBe(200);
    // The worker started the child: its row is running.
    const slowChild = async () =>
      (await runtime.children(id)).find((row) => row.childMachineId === 'otlp_slow');
    await vi.waitFor(async () => expect((await slowChild())?.status).toBe('running'), {
      timeout: 30_000,
      interval: 100,
    });
    const childId = (await slowChild())!.id;
    await vi.waitFor(
      () =>
        expect(inTrace(waitTrace).map((span) => span.name)).toContain(
          'machine_routes.job child.start',
        ),
      { timeout: 10_000 },
    );
    const waitRequest = named(inTrace(waitTrace), 'POST /parents/{machineId}/wait');
    const waitStart = named(inTrace(waitTrace), 'machine_routes.job child.start');
    expect(waitStart.attributes[PROCESS_ATTRIBUTE]).toBe('worker');
    expect(descends(inTrace(waitTrace), waitStart, waitRequest)).toBe(true);
    expect(waitStart.attributes).toMatchObject({
      'machine_routes.child.machine': 'otlp_slow',
      'machine_routes.child.id': childId,
      'machine_routes.child.status': 'running',
    });

    const goTrace = traceOf(3);
    const go = await send(server.url, 'POST', `/slows/${childId}/go`, {
      headers: { traceparent: `00-${goTrace}-c7ad6b7169203333-01` },
    });
    expect(go.status).toBe(200);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['otlp_parent.finished']), {
      timeout: 30_000,
      interval: 100,
    });
    await vi.waitFor(() => expect(completionOf(childId)).toBeDefined(), { timeout: 10_000 });
    const complete = completionOf(childId)!;
    expect(complete.attributes[PROCESS_ATTRIBUTE]).toBe('worker');
    // A child of the GO request's step (this process) ...
    expect(complete.traceId).toBe(goTrace);
    const goRequest = named(inTrace(goTrace), 'POST /slows/{machineId}/go');
    expect(goRequest.attributes[PROCESS_ATTRIBUTE]).toBe('server');
    expect(descends(inTrace(goTrace), complete, goRequest)).toBe(true);
    expect(complete.attributes).toMatchObject({
      'machine_routes.machine': 'otlp_parent',
      'machine_routes.instance.id': id,
      'machine_routes.child.machine': 'otlp_slow',
      'machine_routes.child.outcome': 'done',
      'machine_routes.transition.target': 'otlp_parent.finished',
    });
    // ... linked to the step that started the child (the WAIT request's span).
    expect(complete.links).toEqual([
      expect.objectContaining({ traceId: waitTrace, spanId: waitRequest.spanId }),
    ]);
  }, 60_000);
});
