/**
 * The engine's spans and metrics of steps (docs/operating.md): a macrostep's transition and its
 * commit recorded on the span that runs them (the request's, the job's, the timer's) or, with
 * `MACHINE_TRACE_STEPS` or when that span already records a step, in spans of their own; and
 * the instruments of transitions, commits and locks. Job runs and timer fires:
 * work-instrumentation.ts.
 * Everything here is a thin wrapper: without an OpenTelemetry SDK the spans are the API's
 * non-recording ones and the instruments no-ops, and no attribute object is built for them
 * (metric attributes are made once per machine and event type, or job kind).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { initialize, startAndTransition, startsAndTransitions } from '../interpreter/initialize.js';
import { transition } from '../interpreter/transition.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from '../interpreter/types.js';
import type { CommitRequest, Store } from '../persistence/store.js';
import { ATTR } from '../telemetry/attributes.js';
import { instruments } from '../telemetry/metrics.js';
import {
  claimSpanPart,
  heldAttributes,
  recordingActiveSpan,
  withActiveSpan,
  failSpan,
  SpanKind,
  startSpan,
  tracesRecorded,
  type Attributes,
  type Span,
} from '../telemetry/tracing.js';
import type { InstrumentedEngine, MachineEngine } from './context.js';

/** Metric attributes by a two-part key, made once each. */
export class AttributeCache {
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

/** Parts of a step a span already hosts (bits): its transition, its commit. */
const HOSTS_TRANSITION = 1;
const HOSTS_COMMIT = 2;
/**
 * The span that records `part` of a step on itself instead of a child span: the active span
 * when it records and hosts no such part yet (the first step under a request, job or timer
 * span; a later step of the same request, a synchronous send to another instance, gets spans of
 * its own). Two spans fewer per request: with an SDK registered they were most of what tracing
 * cost the bound route.
 */
function hostSpan(part: number): Span | undefined {
  const span = recordingActiveSpan();
  return span !== undefined && claimSpanPart(span, part) ? span : undefined;
}

/**
 * The interpreter with each macrostep's duration in `machine_routes.transition.duration`, and its
 * source and target states and event type on the span that runs it, or on a
 * `machine_routes.transition` span of its own (`stepSpans`, behavior spans, no span to host it).
 */
export function instrumentedInterpreter(
  engine: MachineEngine,
  options: { stepSpans?: boolean } = {},
): InstrumentedEngine {
  const stepSpans = options.stepSpans === true;
  const own = engine.initialize === initialize && engine.transition === transition;
  return {
    initialize: (definition, stepOptions) =>
      timedStep(
        definition,
        '@init',
        null,
        () => engine.initialize(definition, stepOptions),
        stepSpans || stepOptions?.traceBehaviors === true,
        stepOptions?.traceBehaviors === true,
      ),
    transition: (definition, snapshot, event, stepOptions) =>
      timedStep(
        definition,
        typeOf(event),
        snapshot,
        () => engine.transition(definition, snapshot, event, stepOptions),
        stepSpans || stepOptions?.traceBehaviors === true,
        stepOptions?.traceBehaviors === true,
      ),
    // Without it a stateless send was two timed steps, each with its snapshot and result.
    startAndTransition: own
      ? (definition, event, stepOptions) => {
          if (!startsAndTransitions(definition, event, stepOptions)) return null;
          if (!tracesRecorded()) return timedQuickStart(definition, event, stepOptions);
          return timedStep(
            definition,
            event.type,
            null,
            () => startAndTransition(definition, event, stepOptions)!,
            stepSpans || stepOptions.traceBehaviors === true,
            stepOptions.traceBehaviors === true,
          );
        }
      : null,
  };
}

/** A stateless send's one step when no span records: no closure, only its duration. */
function timedQuickStart(
  definition: MachineDefinition,
  event: EventObject,
  options: MacrostepOptions,
): MacrostepResult {
  const started = performance.now();
  try {
    return startAndTransition(definition, event, options)!;
  } finally {
    recordStep(definition, event.type, started);
  }
}

function recordStep(definition: MachineDefinition, eventType: string, started: number): void {
  instruments().transitionDuration.record(
    (performance.now() - started) / 1000,
    stepAttributes.get(definition.id, eventType),
  );
}

function timedStep(
  definition: MachineDefinition,
  eventType: string,
  before: MachineSnapshot | null,
  step: () => MacrostepResult,
  /** The step gets a span of its own whatever spans are active. */
  ownSpan: boolean,
  /** Behavior spans are made (MACHINE_TRACE_BEHAVIORS): the step's span is their parent. */
  parentOfBehaviors: boolean,
): MacrostepResult {
  const started = performance.now();
  // No SDK: no span records, so none is looked for or made (its attributes' closure included).
  if (!tracesRecorded()) {
    try {
      return step();
    } finally {
      recordStep(definition, eventType, started);
    }
  }
  const host = ownSpan ? undefined : hostSpan(HOSTS_TRANSITION);
  if (host !== undefined) {
    try {
      const result = step();
      hostStep(host, definition, eventType, before, result);
      return result;
    } finally {
      recordStep(definition, eventType, started);
    }
  }
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
    recordStep(definition, eventType, started);
  }
}

/**
 * A completion step in the parent (a job's or child's outcome, a timeout, a listener), recorded
 * on the job's span or in a `machine_routes.transition` span of its own, its event type the
 * cause (`job.outcome`, `child.complete`).
 */
export async function completionStep(
  definition: MachineDefinition,
  cause: string,
  parent: MachineSnapshot,
  compute: () => MacrostepResult | null | Promise<MacrostepResult | null>,
  /** A span of its own whatever span runs it (`MACHINE_TRACE_STEPS`). */
  ownSpan = false,
): Promise<MacrostepResult | null> {
  const host = ownSpan ? undefined : hostSpan(HOSTS_TRANSITION);
  if (host !== undefined) {
    const result = await compute();
    if (result !== null) hostStep(host, definition, cause, parent, result);
    return result;
  }
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
        : { [ATTR.instanceId]: before.id, [ATTR.source]: stateList(before.value) }),
    }),
  });
}

/**
 * What a step hosted by another span records on it (its own span's attributes), one attribute
 * at a time (no object per step), leaving out what the host already holds with the same value
 * (a request span's machine and event type).
 */
function hostStep(
  host: Span,
  definition: MachineDefinition,
  eventType: string,
  before: MachineSnapshot | null,
  result: MacrostepResult,
): void {
  const held = heldAttributes(host);
  if (held?.[ATTR.machine] !== definition.id) host.setAttribute(ATTR.machine, definition.id);
  if (held?.[ATTR.eventType] !== eventType) host.setAttribute(ATTR.eventType, eventType);
  host.setAttribute(ATTR.instanceId, result.snapshot.id);
  if (before !== null) host.setAttribute(ATTR.source, stateList(before.value));
  host.setAttribute(ATTR.target, stateList(result.snapshot.value));
}

/** State ids as an attribute: comma-separated for parallel states, no join for one. */
function stateList(value: readonly string[]): string {
  return value.length === 1 ? value[0]! : value.join(',');
}

/** The step's target (and a started instance's id) on its span. */
function stepDone(span: Span, before: MachineSnapshot | null, result: MacrostepResult): void {
  if (!span.isRecording()) return;
  span.setAttribute(ATTR.target, stateList(result.snapshot.value));
  if (before === null) span.setAttribute(ATTR.instanceId, result.snapshot.id);
}

function typeOf(event: EventObject | string): string {
  return typeof event === 'string' ? event : event.type;
}

const commitAttributes = new AttributeCache((system) => ({ [ATTR.dbSystem]: system }));

/**
 * The instrumentation of one store commit, started before it: `ok()` or `failed(error)` once it
 * settled records its time in `machine_routes.commit.duration` and ends its span, if it has one.
 * The caller awaits the store itself: a wrapper promise (`commit().finally(...)`) cost every
 * event three promises, each a run of the context manager's hooks with an SDK registered.
 */
export class CommitTiming {
  readonly #started = performance.now();
  readonly #system: string;
  /** The commit's own span, or undefined when the span of its step records it. */
  readonly #span: Span | undefined;

  constructor(system: string, span?: Span) {
    this.#system = system;
    this.#span = span;
  }

  /** The commit succeeded. */
  ok(): void {
    this.#end();
  }

  /** The commit failed with `error` (recorded on its own span). */
  failed(error: unknown): void {
    if (this.#span !== undefined) failSpan(this.#span, error);
    this.#end();
  }

  #end(): void {
    this.#span?.end();
    instruments().commitDuration.record(
      (performance.now() - this.#started) / 1000,
      commitAttributes.get(this.#system, ''),
    );
  }
}

/**
 * Starts timing a store commit of `request`: its store and rows on the span that runs its step,
 * or in a `machine_routes.commit` span of its own (`stepSpans`, or no span to host it). Call
 * `ok()` or `failed()` on the result once the commit settled.
 */
export function timeCommit(store: Store, request: CommitRequest, stepSpans = false): CommitTiming {
  const system = store.kind === 'postgres' ? 'postgresql' : store.kind;
  const host = stepSpans ? undefined : hostSpan(HOSTS_COMMIT);
  if (host !== undefined) {
    host.setAttribute(ATTR.dbSystem, system);
    host.setAttribute(ATTR.commitRows, request.history.length);
    return new CommitTiming(system);
  }
  // Not made active: nothing the store runs starts a span.
  const span = startSpan('machine_routes.commit', {
    kind: SpanKind.CLIENT,
    attributes: () => ({
      [ATTR.dbSystem]: system,
      [ATTR.dbOperation]: 'commit',
      [ATTR.machine]: request.snapshot.machineId,
      [ATTR.instanceId]: request.snapshot.id,
      [ATTR.commitRows]: request.history.length,
    }),
  });
  return new CommitTiming(system, span);
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
