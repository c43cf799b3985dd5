/**
 * The engine's job kinds and their payloads, as plain data. `planCommit` produces them; the
 * engine's handler table (`engine/jobs/job-handlers.ts`) runs them. To add a job kind: add its
 * payload here, then its entry in that table (the compiler refuses a kind without a handler).
 */
import type {
  DispatchRegionEffect,
  StartChildEffect,
  SendEffect,
  StartJobEffect,
} from './effects.js';
import type { ChildError, JobOutcome } from './child-outcomes.js';
import type { QueuedListenerRun } from './queued-listener.js';
import type { CarriedScenario } from './types.js';

/** Payload of each job kind. Payloads are JSON-serializable (durable queues store them). */
export interface JobPayloads {
  /** Creates an asynchronous child (`queue` on a delegating state). */
  'child.start': StartChildEffect;
  /** Routes a finished (or failed) child's outcome in its parent. */
  'child.complete': { childId: string; error?: ChildError };
  /** Routes `@timeout` in the parent of a child still running. */
  'child.timeout': { childId: string };
  /** `dispatchTo` / `dispatchToParent`, and a synchronous send retried after contention. */
  send: { effect: SendEffect; attempt: number; exceptions: number };
  /** Runs a job actor's function, then applies its outcome (or hands it to `job.outcome`). */
  'job.run': Omit<StartJobEffect, 'kind' | 'timeoutSeconds'>;
  /**
   * Applies a job actor's outcome whose parent was locked past the lock timeout; `scenario`:
   * the one its run carried, which the parent's completion step plays again.
   */
  'job.outcome': { jobId: string; outcome: JobOutcome; scenario?: CarriedScenario };
  /** Runs a queued listener (`[listener, { '@queue': true }]`) on the instance's latest state. */
  'listener.run': QueuedListenerRun;
  /** Runs a dispatched region's entry actions and merges them into the instance. */
  'parallel.region': Omit<DispatchRegionEffect, 'kind' | 'timeoutSeconds'>;
  /** `region_timeout`: fails a parallel state whose region jobs have not all merged. */
  'parallel.timeout': ParallelTimeoutPayload;
}

/** The region watchdog's payload: one entry of one parallel state. */
export interface ParallelTimeoutPayload {
  machineId: string;
  instanceId: string;
  parallelStateId: string;
  /** Regions dispatched by that entry. */
  regionIds: string[];
  enteredAt: number;
  timeoutSeconds: number;
}

/** A job kind. */
export type JobKind = keyof JobPayloads;

/** A job a commit causes: its kind, payload, and queue options. */
export type PlannedJob<K extends JobKind = JobKind> = K extends JobKind
  ? {
      kind: K;
      payload: JobPayloads[K];
      /** De-duplication key: ignored while a job with this key waits. */
      key?: string;
      /** Not before this time (default: now). */
      runAt?: Date;
    }
  : never;
