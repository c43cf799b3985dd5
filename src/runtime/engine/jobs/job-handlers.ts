/**
 * The engine's job handler table: one entry per job kind (`interpreter/job-payloads.ts`), with
 * the queue name it is stored under (job-requests.ts) and the function that runs it on the
 * runtime's context. Adding a job kind is one payload type there and one entry here; the commit
 * protocol does not change.
 */
import type { JobKind, JobPayloads } from '../../interpreter/job-payloads.js';
import type { JobInfo, JobQueue, Json } from '../../jobs/job-queue.js';
import type { EngineContext } from '../context.js';
import { instrumentedJob } from '../work-instrumentation.js';
import { completeChildJob, startChild, timeoutChild } from './child-jobs.js';
import { applyJobOutcome, runJobActor } from './job-actors.js';
import { JOB_NAMES, jobName } from './job-requests.js';
import { runListenerJob } from './listener-jobs.js';
import { runRegionJob, timeoutRegions } from './region-jobs.js';
import { runSendJob } from './send-jobs.js';

/** Runs one job kind (`info`: the queue's view of the job: attempt, attempts in all). */
export type JobRunner<K extends JobKind> = (
  ctx: EngineContext,
  payload: JobPayloads[K],
  info: JobInfo,
) => Promise<void>;

/** One job kind's entry. */
export interface JobKindHandler<K extends JobKind> {
  /** The queue's job name. */
  name: string;
  run: JobRunner<K>;
}

/** Every job kind's handler (the compiler refuses a kind without one). */
export type JobHandlerTable = { readonly [K in JobKind]: JobKindHandler<K> };

/** The handlers of the engine's jobs. */
export const JOB_HANDLERS: JobHandlerTable = {
  'child.start': { name: JOB_NAMES['child.start'], run: startChild },
  'child.complete': { name: JOB_NAMES['child.complete'], run: completeChildJob },
  'child.timeout': { name: JOB_NAMES['child.timeout'], run: timeoutChild },
  send: { name: JOB_NAMES.send, run: runSendJob },
  'job.run': { name: JOB_NAMES['job.run'], run: runJobActor },
  'job.outcome': { name: JOB_NAMES['job.outcome'], run: applyJobOutcome },
  'listener.run': { name: JOB_NAMES['listener.run'], run: runListenerJob },
  // Parallel dispatch: named after MACHINE_PARALLEL_DISPATCH_QUEUE when set (jobName).
  'parallel.region': {
    name: JOB_NAMES['parallel.region'],
    run: async (ctx, payload, info) => {
      await runRegionJob(ctx, payload, info);
    },
  },
  'parallel.timeout': { name: JOB_NAMES['parallel.timeout'], run: timeoutRegions },
};

/** Registers every handler of the table on `queue`, bound to `ctx`. */
export async function registerJobHandlers(queue: JobQueue, ctx: EngineContext): Promise<void> {
  for (const [kind, name] of jobNames(ctx))
    await queue.work(name, (payload, info) => runJob(ctx, kind, payload, info));
}

/** The queue name of every job kind, as `registerJobHandlers` registers them. */
export function jobNames(ctx: EngineContext): Map<JobKind, string> {
  const kinds = Object.keys(JOB_HANDLERS) as JobKind[];
  return new Map(kinds.map((kind) => [kind, jobName(kind, ctx.settings.parallelDispatch)]));
}

function runJob<K extends JobKind>(
  ctx: EngineContext,
  kind: K,
  payload: Json,
  info: JobInfo,
): Promise<void> {
  const handler: JobKindHandler<K> = JOB_HANDLERS[kind];
  // The payload is one this table's kind wrote (`toJobRequest`), read back from the queue.
  return instrumentedJob(kind, payload, info, ctx.now(), () =>
    handler.run(ctx, payload as JobPayloads[K], info),
  );
}
