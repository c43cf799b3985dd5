/**
 * The engine's spans and metrics of deferred work (docs/operating.md): the trace context a job
 * payload keeps, a consumer span per job run continuing it, a span per timer fire linked to the
 * step that armed it, and the instruments of job attempts, lag and failures and of timer lag.
 * Without an OpenTelemetry SDK the spans are non-recording and the instruments no-ops.
 */
import type { JobInfo, Json } from '../jobs/job-queue.js';
import { ATTR } from '../telemetry/attributes.js';
import { instruments, secondsBetween } from '../telemetry/metrics.js';
import { currentTraceCarrier, inSpan, SpanKind, type TraceCarrier } from '../telemetry/tracing.js';
import { AttributeCache } from './instrumentation.js';

/** The key of a job payload holding the trace context of the step that enqueued it. */
export const TRACE_CONTEXT_KEY = 'traceContext';

/** `payload` with the trace context active now, when there is one to keep. */
export function withTraceContext(payload: Json): Json {
  const carrier = currentTraceCarrier();
  if (carrier === undefined || typeof payload !== 'object' || payload === null) return payload;
  if (Array.isArray(payload)) return payload;
  return { ...payload, [TRACE_CONTEXT_KEY]: carrier };
}

const jobAttributes = new AttributeCache((kind, final) => ({
  [ATTR.jobKind]: kind,
  ...(final === '' ? {} : { [ATTR.jobFinal]: final === 'final' }),
}));

/**
 * Runs one job in a `machine_routes.job <kind>` consumer span, a child of the step that enqueued
 * it (the trace context its payload keeps); counts the attempt, its lag and a failure.
 */
export function instrumentedJob(
  kind: string,
  payload: Json,
  info: JobInfo,
  now: Date,
  run: () => Promise<void>,
): Promise<void> {
  const metrics = instruments();
  metrics.jobAttempts.add(1, jobAttributes.get(kind, ''));
  // A queue that does not say when the job was due (pg-boss without its metadata) has no lag.
  if (info.runAt instanceof Date)
    metrics.jobLag.record(
      secondsBetween(info.runAt.getTime(), now.getTime()),
      jobAttributes.get(kind, ''),
    );
  const carrier = (payload as { [TRACE_CONTEXT_KEY]?: TraceCarrier } | null)?.[TRACE_CONTEXT_KEY];
  return inSpan(
    `machine_routes.job ${kind}`,
    {
      kind: SpanKind.CONSUMER,
      parent: carrier ?? null,
      attributes: () => ({
        [ATTR.messagingSystem]: 'machine_routes',
        [ATTR.messagingOperation]: 'process',
        [ATTR.messagingDestination]: info.name,
        [ATTR.messagingMessageId]: info.id,
        [ATTR.jobKind]: kind,
        [ATTR.jobAttempt]: info.attempt,
      }),
    },
    () =>
      run().catch((error: unknown) => {
        countJobFailure(kind, info.maxAttempts !== undefined && info.attempt >= info.maxAttempts);
        throw error;
      }),
  );
}

/**
 * Counts a failed job run (`machine_routes.jobs.failures`); `final` when it gave up. A job
 * actor's last failure is not thrown to the queue (it becomes the state's `@fail`): its handler
 * counts it here.
 */
export function countJobFailure(kind: string, final: boolean): void {
  instruments().jobFailures.add(1, jobAttributes.get(kind, final ? 'final' : 'retry'));
}

const timerAttributes = new AttributeCache((machine, key) => ({
  [ATTR.machine]: machine,
  [ATTR.timerKey]: key,
}));

/**
 * Delivers one timer fire in a `machine_routes.timer <key>` span, recording its lag (fired
 * minus due) in `machine_routes.timers.lag`.
 */
export function instrumentedTimerFire<T>(
  fire: {
    machineId: string;
    instanceId: string;
    key: string;
    dueAt: Date;
    now: Date;
    /** The trace context of the step that entered the timer's state: the span's link. */
    armedBy: TraceCarrier | null;
  },
  deliver: () => Promise<T>,
): Promise<T> {
  instruments().timerLag.record(
    secondsBetween(fire.dueAt.getTime(), fire.now.getTime()),
    timerAttributes.get(fire.machineId, fire.key),
  );
  return inSpan(
    `machine_routes.timer ${fire.key}`,
    {
      kind: SpanKind.CONSUMER,
      links: [fire.armedBy],
      attributes: () => ({
        [ATTR.machine]: fire.machineId,
        [ATTR.instanceId]: fire.instanceId,
        [ATTR.timerKey]: fire.key,
        [ATTR.timerDue]: fire.dueAt.toISOString(),
      }),
    },
    deliver,
  );
}
