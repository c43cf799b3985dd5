/**
 * The engine's spans and metrics (docs/operating.md): one span per macrostep, per commit, per
 * job run and per timer fire, and the instruments of transitions, commits, locks, jobs and
 * timers. Everything here is a thin wrapper: without an OpenTelemetry SDK the spans are the
 * API's non-recording ones and the instruments no-ops, and no attribute object is built for
 * them (metric attributes are made once per machine and event type, or job kind).
 */
import type { Attributes } from '@opentelemetry/api';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import type { MacrostepResult, MachineSnapshot } from '../interpreter/types.js';
import type { JobInfo, Json } from '../jobs/job-queue.js';
import type { CommitRequest, Store } from '../persistence/store.js';
import { ATTR } from '../telemetry/attributes.js';
import { instruments, secondsBetween } from '../telemetry/metrics.js';
import {
  currentTraceCarrier,
  withActiveSpan,
  failSpan,
  inSpan,
  SpanKind,
  startSpan,
  type Span,
  type TraceCarrier,
} from '../telemetry/tracing.js';
import type { MachineEngine } from './context.js';

/** The key of a job payload holding the trace context of the step that enqueued it. */
export const TRACE_CONTEXT_KEY = 'traceContext';

/** Metric attributes by a two-part key, made once each. */
class AttributeCache {
  readonly #byFirst = new Map<string, Map<string, Attributes>>();

  constructor(readonly make: (first: string, second: string) => Attributes) {}

  get(first: string, second: string): Attributes {
    let bySecond = this.#byFirst.get(first);
    if (bySecond === undefined) this.#byFirst.set(first, (bySecond = new Map()));
    let attributes = bySecond.get(second);
    if (attributes === undefined) bySecond.set(second, (attributes = this.make(first, second)));
    return attributes;
  }
}

const stepAttributes = new AttributeCache((machine, eventType) => ({
  [ATTR.machine]: machine,
  [ATTR.eventType]: eventType,
}));

/**
 * The interpreter with a `machine_routes.transition` span around each macrostep (source and
 * target states, event type) and its duration in `machine_routes.transition.duration`.
 */
export function instrumentedInterpreter(engine: MachineEngine): MachineEngine {
  return {
    initialize: (definition, options) =>
      timedStep(
        definition,
        '@init',
        null,
        () => engine.initialize(definition, options),
        options?.traceBehaviors === true,
      ),
    transition: (definition, snapshot, event, options) =>
      timedStep(
        definition,
        typeOf(event),
        snapshot,
        () => engine.transition(definition, snapshot, event, options),
        options?.traceBehaviors === true,
      ),
  };
}

function timedStep(
  definition: MachineDefinition,
  eventType: string,
  before: MachineSnapshot | null,
  step: () => MacrostepResult,
  /** Behavior spans are made (MACHINE_TRACE_BEHAVIORS): the step's span is their parent. */
  parentOfBehaviors = false,
): MacrostepResult {
  const started = performance.now();
  const span = stepSpan(definition, eventType, before);
  try {
    // Active while the step computes only for behavior spans: making a context per step cost
    // the bound route's CPU when they are off.
    const result = parentOfBehaviors ? withActiveSpan(span, step) : step();
    stepDone(span, before, result);
    return result;
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
    instruments().transitionDuration.record(
      (performance.now() - started) / 1000,
      stepAttributes.get(definition.id, eventType),
    );
  }
}

/**
 * A completion step in the parent (a job's or child's outcome, a timeout, a listener) in a
 * `machine_routes.transition` span named by what caused it (`job.outcome`, `child.complete`).
 */
export async function completionStep(
  definition: MachineDefinition,
  cause: string,
  parent: MachineSnapshot,
  compute: () => MacrostepResult | null | Promise<MacrostepResult | null>,
): Promise<MacrostepResult | null> {
  const span = stepSpan(definition, cause, parent);
  try {
    const result = await withActiveSpan(span, compute);
    if (result !== null) stepDone(span, parent, result);
    return result;
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The `machine_routes.transition` span of a step from `before` (`null`: a start). */
function stepSpan(
  definition: MachineDefinition,
  eventType: string,
  before: MachineSnapshot | null,
) {
  return startSpan('machine_routes.transition', {
    attributes: () => ({
      [ATTR.machine]: definition.id,
      [ATTR.eventType]: eventType,
      ...(before === null
        ? {}
        : { [ATTR.instanceId]: before.id, [ATTR.source]: before.value.join(',') }),
    }),
  });
}

/** The step's target (and a started instance's id) on its span. */
function stepDone(span: Span, before: MachineSnapshot | null, result: MacrostepResult): void {
  if (!span.isRecording()) return;
  span.setAttribute(ATTR.target, result.snapshot.value.join(','));
  if (before === null) span.setAttribute(ATTR.instanceId, result.snapshot.id);
}

function typeOf(event: EventObject | string): string {
  return typeof event === 'string' ? event : event.type;
}

const commitAttributes = new AttributeCache((system) => ({ [ATTR.dbSystem]: system }));

/** A store commit (`commit`) in a `machine_routes.commit` span, timed in `machine_routes.commit.duration`. */
export function instrumentedCommit(
  store: Store,
  request: CommitRequest,
  commit: () => Promise<void>,
): Promise<void> {
  const system = store.kind === 'postgres' ? 'postgresql' : store.kind;
  const started = performance.now();
  return inSpan(
    'machine_routes.commit',
    {
      kind: SpanKind.CLIENT,
      attributes: () => ({
        [ATTR.dbSystem]: system,
        [ATTR.dbOperation]: 'commit',
        [ATTR.machine]: request.snapshot.machineId,
        [ATTR.instanceId]: request.snapshot.id,
        [ATTR.commitRows]: request.history.length,
      }),
    },
    () =>
      commit().finally(() => {
        instruments().commitDuration.record(
          (performance.now() - started) / 1000,
          commitAttributes.get(system, ''),
        );
      }),
  );
}

const contentionAttributes = new AttributeCache((machine, context) => ({
  [ATTR.machine]: machine,
  'machine_routes.lock.context': context,
}));

/** Counts a lock attempt that found the instance held (`machine_routes.lock.contentions`). */
export function countContention(machine: string | undefined, context: string): void {
  instruments().lockContention.add(1, contentionAttributes.get(machine ?? '', context));
}

/** Records the time a step waited for its instance's lock (`machine_routes.lock.wait.duration`). */
export function recordLockWait(machine: string | undefined, context: string, ms: number): void {
  instruments().lockWait.record(ms / 1000, contentionAttributes.get(machine ?? '', context));
}

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
