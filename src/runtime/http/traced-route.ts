/**
 * The span and the `machine_routes.events` count of every request a route answers
 * (docs/operating.md). The span is a child of the active one when framework instrumentation
 * (`@fastify/otel`, the http instrumentation) made a server span; otherwise it is the server
 * span itself, continuing the trace of the request's `traceparent` header. A handler's immediate
 * form (`withImmediateAnswer`) stays immediate: without an SDK the wrapper adds a counter
 * increment and nothing else.
 */
import { ATTR } from '../telemetry/attributes.js';
import { eventCount, outcomeOf, type EventCount } from '../telemetry/metrics.js';
import {
  activeContext,
  callInSpan,
  contextFromHeaders,
  hasSpan,
  heldAttributes,
  SpanKind,
  startSpan,
  tracesRecorded,
  type Attributes,
  type Span,
} from '../telemetry/tracing.js';
import {
  earlyAnswerOf,
  immediateAnswerOf,
  withEarlyAnswer,
  withImmediateAnswer,
  type ImmediateAnswer,
} from './handler-forms.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';

/** `handler` with a span per request and, for event and create routes, the events count. */
export function tracedRoute(route: PlannedRoute, handler: RouteHandler): RouteHandler {
  const answer = immediateAnswerOf(handler);
  const spanName = `${route.method} ${route.path}`;
  const countsEvents = route.handler !== 'read' && route.handler !== 'events';
  // One count per status answered, found once: counting is an increment per request.
  const counts = new Map<number, EventCount>();
  const count = (status: number) => {
    if (!countsEvents) return;
    let found = counts.get(status);
    if (found === undefined) {
      found = eventCount(route.machineId, route.eventType ?? '@create', outcomeOf(status));
      counts.set(status, found);
    }
    found.count += 1;
  };

  // The span's attributes, made once per method the route answers (HEAD on a GET route) and
  // shared by its requests: no closure nor object per request.
  const byMethod = new Map<string, Attributes>();
  const attributesOf = (method: string): Attributes => {
    let attributes = byMethod.get(method);
    if (attributes === undefined) {
      attributes = Object.freeze({
        [ATTR.httpMethod]: method,
        [ATTR.httpRoute]: route.path,
        [ATTR.routeName]: route.name,
        [ATTR.machine]: route.machineId,
        ...(route.eventType === null ? {} : { [ATTR.eventType]: route.eventType }),
      });
      byMethod.set(method, attributes);
    }
    return attributes;
  };

  const finish = (span: Span, response: EndpointResponse): EndpointResponse => {
    count(response.status);
    if (span.isRecording()) {
      span.setAttribute(ATTR.httpStatus, response.status);
      // Its step (hosted on this span) set the same id already, in the common case.
      const id = idOf(response);
      if (id !== undefined && heldAttributes(span)?.[ATTR.instanceId] !== id)
        span.setAttribute(ATTR.instanceId, id);
      if (response.status >= 500) span.setAttribute(ATTR.errorType, String(response.status));
    }
    span.end();
    return response;
  };

  const counted = (response: EndpointResponse): EndpointResponse => {
    count(response.status);
    return response;
  };

  const traced = (request: EndpointRequest): ImmediateAnswer => {
    if (!tracesRecorded()) {
      const response = answer(request);
      return response instanceof Promise ? response.then(counted) : counted(response);
    }
    const active = activeContext();
    const server = !hasSpan(active);
    const parent = server ? contextFromHeaders(request) : active;
    const span = startSpan(spanName, {
      kind: server ? SpanKind.SERVER : SpanKind.INTERNAL,
      parent,
      attributes: attributesOf(request.method),
    });
    const response = span.isRecording()
      ? callInSpan(parent, span, answer, request)
      : answer(request);
    return response instanceof Promise
      ? response.then((settled) => finish(span, settled))
      : finish(span, response);
  };
  const result = withImmediateAnswer(traced);
  const early = earlyAnswerOf(handler);
  if (early === undefined) return result;
  // Answered before a span could start: counted still, as the route's other answers are.
  return withEarlyAnswer(result, (method, headers) => {
    const response = early(method, headers);
    if (response !== null) count(response.status);
    return response;
  });
}

/** The instance id an answer names (`data.id`), for the span. */
function idOf(response: EndpointResponse): string | undefined {
  const data = (response.body as { data?: { id?: unknown } } | null | undefined)?.data;
  return typeof data?.id === 'string' ? data.id : undefined;
}
