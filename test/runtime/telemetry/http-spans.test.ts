/**
 * The span and the events count of HTTP requests, with the real OpenTelemetry SDK registered:
 * a request's span continues the trace of its `traceparent` header (no framework
 * instrumentation here, so ours is the server span), carries the documented attributes, and
 * each answer is counted by machine, event type and outcome. Both adapters, a SQLite file.
 */
import { SpanKind } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { sqliteFileBackend } from '../../support/stores.js';
import { installTelemetry, type TestTelemetry } from '../../support/telemetry.js';
import { send, startServer, type AdapterName, type TestServer } from '../http/support/servers.js';

const machine = defineMachine({
  config: {
    id: 'traced',
    initial: 'open',
    states: { open: { on: { CLOSE: 'closed' } }, closed: { type: 'final' } },
  },
  endpoints: ['CLOSE'],
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

describe.each<AdapterName>(['fastify', 'express'])('HTTP spans over %s', (adapter) => {
  const backend = sqliteFileBackend();
  let telemetry: TestTelemetry;
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    telemetry = installTelemetry();
    await backend.setUp();
    runtime = new MachineRuntime({ store: await backend.open() });
    const router = new MachineRouter({ runtime });
    router.register(machine, { prefix: 'traced', create: true, machineIdFor: ['CLOSE'] });
    router.register(machine, { prefix: 'quick', name: 'quick' });
    server = await startServer(adapter, [router], { error: () => {} });
  });
  afterAll(async () => {
    await server.close();
    await runtime.close();
    await backend.tearDown();
    await telemetry.shutdown();
  });

  it('should continue the traceparent of the request in a server span with the route attributes', async () => {
    telemetry.reset();
    const created = await send(server.url, 'POST', '/traced/create', {
      headers: { traceparent: PARENT },
    });
    expect(created.status).toBe(201);
    const id = (created.body as { data: { id: string } }).data.id;
    const closed = await send(server.url, 'POST', `/traced/${id}/close`, {
      headers: { traceparent: PARENT },
    });
    expect(closed.status).toBe(200);

    const spans = telemetry.spans().filter((span) => span.name.startsWith('POST /traced'));
    expect(spans.map((span) => span.name)).toEqual([
      'POST /traced/create',
      'POST /traced/{machineId}/close',
    ]);
    for (const span of spans) {
      expect(span.kind).toBe(SpanKind.SERVER);
      expect(span.spanContext().traceId).toBe(TRACE_ID);
      expect(span.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    }
    expect(spans[1]!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/traced/{machineId}/close',
      'http.response.status_code': 200,
      'machine_routes.route': 'traced.close',
      'machine_routes.machine': 'traced',
      'machine_routes.event.type': 'CLOSE',
      'machine_routes.instance.id': id,
    });
  });

  it('should record a stateless send as one step: the event on the request span, no @init', async () => {
    telemetry.reset();
    const before = await stepCount(telemetry, '@init');
    const closed = await send(server.url, 'POST', '/quick/close');
    expect(closed.status).toBe(200);
    const spans = telemetry.spans();
    const request = spans.find((span) => span.name === 'POST /quick/close')!;
    expect(request.attributes).toMatchObject({
      'machine_routes.event.type': 'CLOSE',
      'machine_routes.transition.target': 'traced.closed',
    });
    // The start and the event are one macrostep (startAndTransition), not two timed steps.
    expect(spans.filter((span) => span.name === 'machine_routes.transition')).toEqual([]);
    expect(await stepCount(telemetry, '@init')).toBe(before);
    expect(await stepCount(telemetry, 'CLOSE')).toBeGreaterThan(0);
  });

  it('should count each answered event by machine, event type and outcome', async () => {
    const before = await eventCounts(telemetry);
    const created = await send(server.url, 'POST', '/traced/create');
    const id = (created.body as { data: { id: string } }).data.id;
    await send(server.url, 'POST', `/traced/${id}/close`);
    await send(server.url, 'POST', `/traced/${id}/close`); // final state: 409
    await send(server.url, 'POST', `/traced/${id}/close`, {
      raw: '{',
      headers: { 'content-type': 'application/json' },
    });
    const after = await eventCounts(telemetry);
    const delta = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    expect(delta('@create 2xx')).toBe(1);
    expect(delta('CLOSE 2xx')).toBe(1);
    expect(delta('CLOSE 409')).toBe(1);
    expect(delta('CLOSE 4xx')).toBe(1);
  });
});

async function eventCounts(telemetry: TestTelemetry): Promise<Map<string, number>> {
  const points = (await telemetry.collect()).filter(
    (point) =>
      point.name === 'machine_routes.events' &&
      point.attributes['machine_routes.machine'] === 'traced',
  );
  return new Map(
    points.map((point) => [
      `${String(point.attributes['machine_routes.event.type'])} ${String(point.attributes['machine_routes.outcome'])}`,
      point.value,
    ]),
  );
}

/** How many steps of `eventType` of the traced machine `machine_routes.transition.duration` has. */
async function stepCount(telemetry: TestTelemetry, eventType: string): Promise<number> {
  const point = (await telemetry.collect()).find(
    (found) =>
      found.name === 'machine_routes.transition.duration' &&
      found.attributes['machine_routes.machine'] === 'traced' &&
      found.attributes['machine_routes.event.type'] === eventType,
  );
  return point?.count ?? 0;
}
