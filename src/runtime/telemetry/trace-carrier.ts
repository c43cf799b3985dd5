/**
 * A serialized trace context (`traceparent`, and `tracestate` when set), as the global
 * propagator writes it: what a job, a child start or an instance row keeps of the step that
 * caused it. Plain data, stored as JSON. In a module of its own, without the OpenTelemetry API's
 * types, because the store's public types name it and `@opentelemetry/api` is an optional peer.
 */
export type TraceCarrier = Readonly<Record<string, string>>;
