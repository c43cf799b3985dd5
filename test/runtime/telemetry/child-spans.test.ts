/**
 * Child machines traced with the real OpenTelemetry SDK (in-memory exporter), on a SQLite file
 * with the durable queue: an HTTP event whose transition starts a synchronous child that
 * completes inline, and one whose transition starts an asynchronous child through the queue.
 * The request, the child's start (`machine_routes.child.start <machine>` for the inline child,
 * the `machine_routes.job child.start` span for the queued one) and the completion routed to the
 * parent (`machine_routes.job child.complete`) share the request's trace, each with the
 * documented child attributes (docs/operating.md "Traces").
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { sqliteFileBackend } from '../../support/stores.js';
import { installTelemetry, type TestTelemetry } from '../../support/telemetry.js';
import { send, startServer, type TestServer } from '../http/support/servers.js';

const quick = defineMachine({
  config: { id: 'traced_check', initial: 'ok', context: {}, states: { ok: { type: 'final' } } },
});

const slow = defineMachine({
  config: {
    id: 'traced_slow',
    initial: 'idle',
    context: {},
    states: { idle: { on: { GO: 'over' } }, over: { type: 'final' } },
  },
  endpoints: ['GO'],
});

const parent = defineMachine({
  config: {
    id: 'traced_parent',
    initial: 'idle',
    context: {},
    states: {
      idle: { on: { SYNC: 'checking' } },
      checking: { machine: quick, on: { '@done': 'checked' } },
      checked: { on: { ASYNC: 'reviewing' } },
      reviewing: { machine: quick, queue: true, on: { '@done': 'reviewed' } },
      reviewed: { on: { WAIT: 'waiting' } },
      waiting: { machine: slow, queue: true, on: { '@done': 'finished' } },
      finished: { type: 'final' },
    },
  },
  endpoints: ['SYNC', 'ASYNC', 'WAIT'],
});

const traceOf = (n: number) => `${String(n).padStart(2, '0')}f7651916cd43dd8448eb211c80319c`;

describe.each([
  { tree: 'default', steps: false },
  { tree: 'MACHINE_TRACE_STEPS', steps: true },
])('child machines, traced (SQLite file, durable queue), $tree tree', ({ steps }) => {
  const backend = sqliteFileBackend();
  let telemetry: TestTelemetry;
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    telemetry = installTelemetry();
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      machines: [parent, quick, slow],
      env: { MACHINE_TRACE_STEPS: String(steps) },
    });
    const router = new MachineRouter({ runtime });
    router.register(parent, {
      prefix: 'parents',
      create: true,
      machineIdFor: ['SYNC', 'ASYNC', 'WAIT'],
    });
    router.register(slow, { prefix: 'slows', machineIdFor: ['GO'] });
    server = await startServer('fastify', [router], { error: () => {} });
  });
  afterAll(async () => {
    await server.close();
    await runtime.close();
    await backend.tearDown();
    await telemetry.shutdown();
  });

  const stateOf = async (id: string) => (await runtime.restore(parent, id)).value;
  const inTrace = (traceId: string) =>
    telemetry.spans().filter((span) => span.spanContext().traceId === traceId);
  const named = (spans: ReadableSpan[], name: string) => {
    const found = spans.find((span) => span.name === name);
    expect(found, `${name} in ${spans.map((span) => span.name).join(', ')}`).toBeDefined();
    return found!;
  };
  /** True when `span` descends from `ancestor` within `spans`. */
  const descends = (spans: ReadableSpan[], span: ReadableSpan, ancestor: ReadableSpan) => {
    let parentId = span.parentSpanContext?.spanId;
    while (parentId !== undefined) {
      if (parentId === ancestor.spanContext().spanId) return true;
      parentId = spans.find((s) => s.spanContext().spanId === parentId)?.parentSpanContext?.spanId;
    }
    return false;
  };

  const completionFor = (childId: unknown) =>
    telemetry
      .spans()
      .find(
        (span) =>
          span.name === 'machine_routes.job child.complete' &&
          span.attributes['machine_routes.child.id'] === childId,
      );

  it('should span an inline child start and its completion in the request trace, then a queued start', async () => {
    const created = await send(server.url, 'POST', '/parents/create');
    const id = (created.body as { data: { id: string } }).data.id;
    telemetry.reset();

    const syncTrace = traceOf(1);
    const sync = await send(server.url, 'POST', `/parents/${id}/sync`, {
      headers: { traceparent: `00-${syncTrace}-b7ad6b7169203331-01` },
    });
    expect(sync.status).toBe(200);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_parent.checked']), {
      timeout: 15_000,
      interval: 20,
    });
    const syncSpans = inTrace(syncTrace);
    const request = named(syncSpans, 'POST /parents/{machineId}/sync');
    const start = named(syncSpans, 'machine_routes.child.start traced_check');
    expect(descends(syncSpans, start, request)).toBe(true);
    expect(start.attributes).toMatchObject({
      'machine_routes.machine': 'traced_parent',
      'machine_routes.instance.id': id,
      'machine_routes.child.machine': 'traced_check',
      'machine_routes.child.mode': 'sync',
      'machine_routes.child.status': 'completed',
    });
    const childId = start.attributes['machine_routes.child.id'];
    expect(typeof childId).toBe('string');
    // The inline child finished in the parent's step, which routed its `@done` at once.
    const step = steps ? named(syncSpans, 'machine_routes.transition') : request;
    expect(step.attributes).toMatchObject({
      'machine_routes.transition.source': 'traced_parent.idle',
      'machine_routes.transition.target': 'traced_parent.checked',
    });

    const asyncTrace = traceOf(2);
    const queued = await send(server.url, 'POST', `/parents/${id}/async`, {
      headers: { traceparent: `00-${asyncTrace}-b7ad6b7169203332-01` },
    });
    expect(queued.status).toBe(200);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_parent.reviewed']), {
      timeout: 15_000,
      interval: 20,
    });
    await vi.waitFor(() =>
      expect(inTrace(asyncTrace).map((span) => span.name)).toContain(
        'machine_routes.job child.complete',
      ),
    );
    const asyncSpans = inTrace(asyncTrace);
    const asyncRequest = named(asyncSpans, 'POST /parents/{machineId}/async');
    const queuedStart = named(asyncSpans, 'machine_routes.job child.start');
    expect(descends(asyncSpans, queuedStart, asyncRequest)).toBe(true);
    expect(queuedStart.attributes).toMatchObject({
      'machine_routes.machine': 'traced_parent',
      'machine_routes.instance.id': id,
      'machine_routes.child.machine': 'traced_check',
      'machine_routes.child.status': 'completed',
    });
    const asyncChild = queuedStart.attributes['machine_routes.child.id'];
    expect(asyncChild).not.toBe(childId);
    const asyncComplete = named(asyncSpans, 'machine_routes.job child.complete');
    // Enqueued by the child's first step, which ran under the start job's span.
    expect(descends(asyncSpans, asyncComplete, queuedStart)).toBe(true);
    expect(asyncComplete.attributes).toMatchObject({
      'machine_routes.child.id': asyncChild,
      'machine_routes.child.outcome': 'done',
    });
    // No inline start span for a queued child.
    expect(asyncSpans.map((span) => span.name)).not.toContain(
      'machine_routes.child.start traced_check',
    );

    // The queued start's completion links to the step that started the child as well.
    expect(asyncComplete.links.map((link) => link.context.spanId)).toContain(
      asyncRequest.spanContext().spanId,
    );
  });

  it('should link the completion of a child finished by its own later event to the step that started it', async () => {
    const created = await send(server.url, 'POST', '/parents/create');
    const id = (created.body as { data: { id: string } }).data.id;
    await send(server.url, 'POST', `/parents/${id}/sync`);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_parent.checked']));
    await send(server.url, 'POST', `/parents/${id}/async`);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_parent.reviewed']), {
      timeout: 15_000,
      interval: 20,
    });
    telemetry.reset();

    const waitTrace = traceOf(3);
    const wait = await send(server.url, 'POST', `/parents/${id}/wait`, {
      headers: { traceparent: `00-${waitTrace}-b7ad6b7169203333-01` },
    });
    expect(wait.status).toBe(200);
    await vi.waitFor(
      async () => {
        const rows = await runtime.children(id);
        expect(rows.find((row) => row.childMachineId === 'traced_slow')?.status).toBe('running');
      },
      { timeout: 15_000, interval: 20 },
    );
    const waitRequest = named(inTrace(waitTrace), 'POST /parents/{machineId}/wait');
    const childId = (await runtime.children(id)).find(
      (row) => row.childMachineId === 'traced_slow',
    )!.id;

    const goTrace = traceOf(4);
    const go = await send(server.url, 'POST', `/slows/${childId}/go`, {
      headers: { traceparent: `00-${goTrace}-b7ad6b7169203334-01` },
    });
    expect(go.status).toBe(200);
    await vi.waitFor(async () => expect(await stateOf(id)).toEqual(['traced_parent.finished']), {
      timeout: 15_000,
      interval: 20,
    });
    await vi.waitFor(() => expect(completionFor(childId)).toBeDefined());
    const complete = completionFor(childId)!;
    // A child of the step that finished the child (the GO request's trace) ...
    expect(complete.spanContext().traceId).toBe(goTrace);
    expect(complete.attributes).toMatchObject({
      'machine_routes.machine': 'traced_parent',
      'machine_routes.instance.id': id,
      'machine_routes.child.machine': 'traced_slow',
      'machine_routes.child.outcome': 'done',
    });
    // ... linked to the step that started it (the WAIT request's span).
    expect(complete.links.map((link) => link.context)).toEqual([
      expect.objectContaining({
        traceId: waitTrace,
        spanId: waitRequest.spanContext().spanId,
      }),
    ]);
  });
});
