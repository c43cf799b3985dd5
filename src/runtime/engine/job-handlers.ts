/**
 * The engine's job handler table: one entry per job kind (`interpreter/job-payloads.ts`), with
 * the queue name it is stored under and the function that runs it. Adding a job kind is one
 * payload type there and one entry here; the commit protocol does not change. Queue names are
 * stable: durable queues keep jobs across versions.
 */
import type { JobKind, JobPayloads, PlannedJob } from '../interpreter/job-payloads.js';
import type { JobInfo, JobQueue, JobRequest, Json } from '../jobs/job-queue.js';
import { completeChildJob, startChild, timeoutChild } from './child-jobs.js';
import type { EngineServices, JobRunner } from './engine-services.js';
import { runListenerJob } from './listener-jobs.js';
import type { RegionJobs } from './region-jobs.js';
import { runSendJob } from './send-jobs.js';

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
  'child.start': { name: 'machine-routes.child.start', run: startChild },
  'child.complete': { name: 'machine-routes.child.complete', run: completeChildJob },
  'child.timeout': { name: 'machine-routes.child.timeout', run: timeoutChild },
  send: { name: 'machine-routes.send', run: runSendJob },
  'job.run': {
    name: 'machine-routes.job.run',
    run: (engine, payload, info) => engine.jobActors.run(payload, info),
  },
  'job.outcome': {
    name: 'machine-routes.job.outcome',
    run: (engine, payload) => engine.jobActors.applyLater(payload),
  },
  'listener.run': { name: 'machine-routes.listener.run', run: runListenerJob },
  // Parallel dispatch: named after MACHINE_PARALLEL_DISPATCH_QUEUE when set (RegionJobs.nameOf).
  'parallel.region': {
    name: 'machine-routes.parallel.region',
    run: async (engine, payload, info) => {
      await engine.regionJobs.run(payload, info);
    },
  },
  'parallel.timeout': {
    name: 'machine-routes.parallel.timeout',
    run: (engine, payload) => engine.regionJobs.timeout(payload),
  },
};

/**
 * The queue request of a planned job. With `regionJobs`, parallel dispatch jobs get their own
 * queue name, attempts, backoff and timeout (`MACHINE_PARALLEL_DISPATCH_*`).
 */
export function toJobRequest(job: PlannedJob, regionJobs?: RegionJobs): JobRequest {
  const region = regionJobs?.request(job, toJson(job.payload)) ?? null;
  if (region !== null) return region;
  return {
    name: JOB_HANDLERS[job.kind].name,
    payload: toJson(job.payload),
    ...(job.key === undefined ? {} : { key: job.key }),
    ...(job.runAt === undefined ? {} : { runAt: job.runAt }),
  };
}

/** Registers every handler of the table on `queue`, bound to `engine`. */
export async function registerJobHandlers(queue: JobQueue, engine: EngineServices): Promise<void> {
  for (const kind of jobKinds()) {
    const name = engine.regionJobs.nameOf(kind) ?? JOB_HANDLERS[kind].name;
    await queue.work(name, (payload, info) => runJob(engine, kind, payload, info));
  }
}

function runJob<K extends JobKind>(
  engine: EngineServices,
  kind: K,
  payload: Json,
  info: JobInfo,
): Promise<void> {
  const handler: JobKindHandler<K> = JOB_HANDLERS[kind];
  // The payload is one this table's kind wrote (`toJobRequest`), read back from the queue.
  return handler.run(engine, payload as JobPayloads[K], info);
}

function jobKinds(): JobKind[] {
  return Object.keys(JOB_HANDLERS) as JobKind[];
}

/** The payload as a durable queue stores it: plain JSON, no shared references. */
function toJson(payload: JobPayloads[JobKind]): Json {
  return JSON.parse(JSON.stringify(payload));
}
