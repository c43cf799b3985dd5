/**
 * Job kinds as the queue stores them: each kind's stable queue name (durable queues keep jobs
 * across versions), and the queue request of a planned job. Parallel dispatch jobs get their own
 * queue name, attempts, backoff and timeout (`MACHINE_PARALLEL_DISPATCH_*`); the others keep the
 * queue's `MACHINE_JOB_*` defaults.
 */
import type { JobKind, JobPayloads, PlannedJob } from '../../interpreter/job-payloads.js';
import type { JobRequest, Json } from '../../jobs/job-queue.js';
import type { DurableJobRequest } from '../../jobs/types.js';
import type { EngineContext } from '../context.js';
import { withTraceContext } from '../work-instrumentation.js';
import type { ParallelDispatchSettings } from '../parallel-dispatch-config.js';

/** The queue name of every job kind. */
export const JOB_NAMES: { readonly [K in JobKind]: string } = {
  'child.start': 'machine-routes.child.start',
  'child.complete': 'machine-routes.child.complete',
  'child.timeout': 'machine-routes.child.timeout',
  send: 'machine-routes.send',
  'job.run': 'machine-routes.job.run',
  'job.outcome': 'machine-routes.job.outcome',
  'listener.run': 'machine-routes.listener.run',
  'parallel.region': 'machine-routes.parallel.region',
  'parallel.timeout': 'machine-routes.parallel.timeout',
};

/**
 * The queue name a kind is stored under: parallel dispatch kinds on
 * `MACHINE_PARALLEL_DISPATCH_QUEUE` (`machine-routes.parallel.region@<queue>`) when set.
 */
export function jobName(kind: JobKind, settings: Readonly<ParallelDispatchSettings>): string {
  const base = JOB_NAMES[kind];
  const parallel = kind === 'parallel.region' || kind === 'parallel.timeout';
  return parallel && settings.queue !== null ? `${base}@${settings.queue}` : base;
}

/** The queue request of a planned job. */
export function toJobRequest(
  job: PlannedJob,
  settings: Readonly<ParallelDispatchSettings>,
): JobRequest {
  const request: DurableJobRequest = {
    name: jobName(job.kind, settings),
    // The step's trace goes with its job: the job's run is a span of the same trace.
    payload: withTraceContext(toJson(job.payload)),
  };
  if (job.key !== undefined) request.key = job.key;
  if (job.runAt !== undefined) request.runAt = job.runAt;
  if (job.kind === 'parallel.region' || job.kind === 'parallel.timeout') {
    request.maxAttempts = settings.jobTries;
    request.backoffMs = settings.jobBackoff * 1000;
    request.timeoutMs = settings.jobTimeout * 1000;
  }
  return request;
}

/** Enqueues jobs outside a commit (retries, a completion after a failed start). */
export function enqueueJobs(ctx: EngineContext, jobs: readonly PlannedJob[]): Promise<void> {
  return ctx.jobs.enqueue(jobs.map((job) => toJobRequest(job, ctx.settings.parallelDispatch)));
}

/** When a job whose instance was busy runs again: the async sends' retry delay from now. */
export function later(ctx: EngineContext): Date {
  return new Date(ctx.now().getTime() + ctx.settings.sendRetry.delayMs);
}

/** The payload as a durable queue stores it: plain JSON, no shared references. */
function toJson(payload: JobPayloads[JobKind]): Json {
  return JSON.parse(JSON.stringify(payload));
}
