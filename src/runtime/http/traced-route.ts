/**
 * The span and the `machine_routes.events` count of every request a route answers
 * (docs/operating.md). The span is a child of the active one when framework instrumentation
 * (`@fastify/otel`, the http instrumentation) made a server span; otherwise it is the server
 * span itself, continuing the trace of the request's `traceparent` header. A handler's immediate
 * form (`withImmediateAnswer`) stays immediate: without an SDK the wrapper adds a non-recording
 * span and a counter call.
 */
import { context, trace, type Attributes } from '@opentelemetry/api';
import { ATTR } from '../telemetry/attributes.js';
import { instruments, outcomeOf } from '../telemetry/metrics.js';
import { contextFromHeaders, SpanKind, startSpan, type Span } from '../telemetry/tracing.js';
import { immediateAnswerOf, withImmediateAnswer, type ImmediateAnswer } from './responses.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';

/** `handler` with a span per request and, for event and create routes, the events count. */
export function tracedRoute(route: PlannedRoute, handler: RouteHandler): RouteHandler {
  const answer = immediateAnswerOf(handler);
  const spanName = `${route.method} ${route.path}`;
  const counted = route.handler !== 'read' && route.handler !== 'events';
  // One attributes object per status answered, made once: counting allocates nothing per request.
  const countAttributes = new Map<number, Attributes>();
  const count = (status: number) => {
    if (!counted) return;
    let attributes = countAttributes.get(status);
    if (attributes === undefined) {
      attributes = {
        [ATTR.machine]: route.machineId,
        [ATTR.eventType]: route.eventType ?? '@create',
        [ATTR.outcome]: outcomeOf(status),
      };
      countAttributes.set(status, attributes);
    }
    instruments().events.add(1, attributes);
  };

  const finish = (span: Span, response: EndpointResponse): EndpointResponse => {
    count(response.status);
    if (span.isRecording()) {
      span.setAttribute(ATTR.httpStatus, response.status);
      const id = idOf(response);
      if (id !== undefined) span.setAttribute(ATTR.instanceId, id);
      if (response.status >= 500) span.setAttribute(ATTR.errorType, String(response.status));
    }
    span.end();
    return response;
  };

  const traced = (request: EndpointRequest): ImmediateAnswer => {
    const active = context.active();
    const server = trace.getSpan(active) === undefined;
    const parent = server ? contextFromHeaders(request.headers) : active;
    const span = startSpan(spanName, {
      kind: server ? SpanKind.SERVER : SpanKind.INTERNAL,
      parent,
      attributes: () => ({
        [ATTR.httpMethod]: request.method,
        [ATTR.httpRoute]: route.path,
        [ATTR.routeName]: route.name,
        [ATTR.machine]: route.machineId,
        ...(route.eventType === null ? {} : { [ATTR.eventType]: route.eventType }),
      }),
    });
    const response = span.isRecording()
      ? context.with(trace.setSpan(parent, span), answer, undefined, request)
      : answer(request);
    return response instanceof Promise
      ? response.then((settled) => finish(span, settled))
      : finish(span, response);
  };
  return withImmediateAnswer(traced);
}

/** The instance id an answer names (`data.id`), for the span. */
function idOf(response: EndpointResponse): string | undefined {
  const data = (response.body as { data?: { id?: unknown } } | null | undefined)?.data;
  return typeof data?.id === 'string' ? data.id : undefined;
}
