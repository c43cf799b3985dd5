/**
 * Metrics on the OpenTelemetry metrics API (docs/operating.md "Metrics", one table of every
 * instrument). As with traces, the application owns the SDK and its reader/exporter; without
 * one every instrument is the API's no-op.
 *
 * The metrics API has no proxy provider: an instrument made before the application registers
 * its MeterProvider stays a no-op forever. Instruments are therefore made on first use and made
 * again whenever the global provider changed since, which a test that registers its own
 * provider relies on as much as an application that starts its SDK after importing the runtime.
 */
import type {
  Attributes,
  Counter,
  Histogram,
  MeterProvider,
  UpDownCounter,
} from '@opentelemetry/api';
import { ATTR } from './attributes.js';
import { currentOtel, otel } from './otel-api.js';
import { INSTRUMENTATION_SCOPE } from './tracing.js';

const { ValueType } = otel;

/** Instrument names: the one list docs/operating.md documents. */
export const METRIC = {
  events: 'machine_routes.events',
  transitionDuration: 'machine_routes.transition.duration',
  lockWait: 'machine_routes.lock.wait.duration',
  lockContention: 'machine_routes.lock.contentions',
  commitDuration: 'machine_routes.commit.duration',
  jobLag: 'machine_routes.jobs.lag',
  jobAttempts: 'machine_routes.jobs.attempts',
  jobFailures: 'machine_routes.jobs.failures',
  timerLag: 'machine_routes.timers.lag',
  jobDepth: 'machine_routes.jobs.depth',
  liveSubscribers: 'machine_routes.live.subscribers',
} as const;

/** The instruments of the package, bound to one MeterProvider. */
export interface Instruments {
  /** Time to compute a macrostep (the interpreter's step, without I/O), seconds. */
  readonly transitionDuration: Histogram;
  /** Time spent waiting for an instance lock before the step ran, seconds. */
  readonly lockWait: Histogram;
  /** Lock attempts that found the instance held (answered as contention or waited out). */
  readonly lockContention: Counter;
  /** Time of one store commit (a step's writes in one transaction), seconds. */
  readonly commitDuration: Histogram;
  /** Delay from a job's due time to the start of its run, seconds. */
  readonly jobLag: Histogram;
  /** Job runs started, by kind. */
  readonly jobAttempts: Counter;
  /** Job runs that failed, by kind and whether the job gave up (`machine_routes.job.final`). */
  readonly jobFailures: Counter;
  /** Delay from a timer's due time to its fire, seconds. */
  readonly timerLag: Histogram;
  /** Live-state watchers (SSE streams and waiting reads) of this process, by machine. */
  readonly liveSubscribers: UpDownCounter;
}

/** Unfinished jobs per job kind of one queue this process works (`machine_routes.jobs.depth`). */
export type JobDepthSource = () => Promise<ReadonlyMap<string, number>>;

const depthSources = new Set<JobDepthSource>();

/**
 * Reports `source` through the `machine_routes.jobs.depth` gauge at every collection, whichever
 * MeterProvider is registered then; the returned function stops it (the runtime's close).
 */
export function observeJobDepth(source: JobDepthSource): () => void {
  depthSources.add(source);
  return () => depthSources.delete(source);
}

/** One count of `machine_routes.events`: an attribute set and how many events it counted. */
export interface EventCount {
  readonly attributes: Attributes;
  count: number;
}

const eventCounts = new Map<string, EventCount>();

/**
 * The count of events answered over HTTP with these attributes (machine, event type, outcome),
 * made once per set: a route adds 1 to it per request. The counter is observed at each
 * collection rather than recorded per request (the SDK hashes a recorded attribute set on every
 * call); its values are cumulative since the process started.
 */
export function eventCount(machine: string, eventType: string, outcome: string): EventCount {
  const key = `${machine}\u0000${eventType}\u0000${outcome}`;
  let count = eventCounts.get(key);
  if (count === undefined) {
    count = {
      attributes: { [ATTR.machine]: machine, [ATTR.eventType]: eventType, [ATTR.outcome]: outcome },
      count: 0,
    };
    eventCounts.set(key, count);
  }
  return count;
}

let bound: { provider: MeterProvider; instruments: Instruments } | undefined;

/** The instruments of the global MeterProvider (made again when it changed). */
export function instruments(): Instruments {
  const provider = currentOtel().metrics.getMeterProvider();
  if (bound?.provider !== provider) bound = { provider, instruments: make(provider) };
  return bound.instruments;
}

/** Seconds between two epoch-millisecond times (never negative). */
export function secondsBetween(fromMs: number, toMs: number): number {
  return Math.max(0, toMs - fromMs) / 1000;
}

/** The outcome attribute of an HTTP status: the statuses an operator tells apart, else the class. */
export function outcomeOf(status: number): string {
  if (status === 409 || status === 422 || status === 423 || status === 429) return String(status);
  if (status === 404 || status === 503) return String(status);
  return `${Math.floor(status / 100)}xx`;
}

function make(provider: MeterProvider): Instruments {
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
  const seconds = (name: string, description: string) =>
    meter.createHistogram(name, { unit: 's', description, valueType: ValueType.DOUBLE });
  meter
    .createObservableCounter(METRIC.events, {
      unit: '{event}',
      description: 'Events answered over HTTP, by machine, event type and outcome.',
    })
    .addCallback((result) => {
      for (const { attributes, count } of eventCounts.values()) result.observe(count, attributes);
    });
  const instruments: Instruments = {
    transitionDuration: seconds(
      METRIC.transitionDuration,
      'Time to compute one macrostep (no I/O).',
    ),
    lockWait: seconds(METRIC.lockWait, 'Time waited for an instance lock.'),
    lockContention: meter.createCounter(METRIC.lockContention, {
      unit: '{attempt}',
      description: 'Lock attempts that found the instance held.',
    }),
    commitDuration: seconds(METRIC.commitDuration, 'Time of one store commit.'),
    jobLag: seconds(METRIC.jobLag, 'Delay from a job being due to its run starting.'),
    jobAttempts: meter.createCounter(METRIC.jobAttempts, {
      unit: '{run}',
      description: 'Job runs started, by kind.',
    }),
    jobFailures: meter.createCounter(METRIC.jobFailures, {
      unit: '{run}',
      description: 'Job runs that failed, by kind; machine_routes.job.final when it gave up.',
    }),
    timerLag: seconds(METRIC.timerLag, 'Delay from a timer being due to its fire.'),
    liveSubscribers: meter.createUpDownCounter(METRIC.liveSubscribers, {
      unit: '{subscriber}',
      description: 'Live-state watchers (SSE streams, waiting reads) of this process, by machine.',
    }),
  };
  const depth = meter.createObservableGauge(METRIC.jobDepth, {
    unit: '{job}',
    description: 'Jobs not finished (waiting, delayed or running), by kind.',
  });
  depth.addCallback(async (result) => {
    for (const source of depthSources) {
      // A store that cannot answer now (closing, unreachable) skips one collection.
      const counts = await source().catch(() => new Map<string, number>());
      for (const [kind, count] of counts) result.observe(count, { [ATTR.jobKind]: kind });
    }
  });
  return instruments;
}
