/**
 * The durable job-queue contract: `JobQueue` (jobs/job-queue.ts) plus what a queue that
 * outlives its process needs: retry options per job, a worker lifecycle (`start`/`stop`/`close`),
 * waiting helpers for tests and tools (`idle`/`drain`), and access to jobs kept as failed.
 */
import type { JobHandler, JobInfo, JobQueue, JobRequest, Json } from './job-queue.js';

/** A job to run, with optional retry rules of its own. */
export interface DurableJobRequest extends JobRequest {
  /** Attempts before the job is kept as `failed` (default: the queue's `maxAttempts`). */
  maxAttempts?: number;
  /**
   * Milliseconds before the second attempt; each further attempt waits twice as long as the
   * previous one. 0 retries at once (default: the queue's `backoffMs`).
   */
  backoffMs?: number;
  /**
   * Milliseconds an attempt may hold the job before it is presumed dead and runs again
   * (default: the queue's `timeoutMs`).
   */
  timeoutMs?: number;
}

/** Settings of a durable queue; every one has a default (see `loadJobQueueConfig`). */
export interface JobQueueSettings {
  /** Attempts of a job before it is kept as `failed` (default 3, `MACHINE_JOB_TRIES`). */
  maxAttempts: number;
  /** Base retry delay in ms, doubled per attempt (default 30 s, `MACHINE_JOB_BACKOFF` in seconds). */
  backoffMs: number;
  /**
   * How long an attempt may hold its job, in ms (default 300 s, `MACHINE_JOB_TIMEOUT` in seconds).
   * A job still claimed after that is presumed abandoned (its worker died) and runs again; this
   * failed attempt counts toward `maxAttempts`. Recorded with each job when it is enqueued.
   */
  timeoutMs: number;
  /** Handlers this queue runs at the same time (default 4, `MACHINE_JOB_CONCURRENCY`). */
  concurrency: number;
  /**
   * How often an idle worker looks for due jobs enqueued by other processes, in ms (default
   * 1000, `MACHINE_JOB_POLL_INTERVAL` in seconds).
   */
  pollIntervalMs: number;
}

/**
 * Told about every failed attempt (`job` set) and every storage error of the worker loop
 * (`job` null). Failed jobs are also kept in the queue with their last error.
 */
export type JobErrorListener = (error: unknown, job: JobInfo | null) => void;

/** Options shared by the durable queues. */
export interface DurableJobQueueOptions extends Partial<JobQueueSettings> {
  onError?: JobErrorListener;
  /**
   * Whether the worker's poll timer keeps the process alive (default true: a worker process
   * lives for its queue). `MachineRuntime.open`'s in-process worker sets false: the server's
   * sockets decide when that process ends.
   */
  keepAlive?: boolean;
}

/** A job that used up its attempts, kept for inspection. */
export interface FailedJob {
  id: string;
  name: string;
  payload: Json;
  key: string | null;
  /** Attempts made (the last one failed). */
  attempts: number;
  /** The last attempt's error (message and stack), or why the attempt was given up. */
  lastError: string;
}

/** Options of `stop` and `close`. */
export interface JobQueueStopOptions {
  /**
   * How long to wait for running handlers, in ms (default: as long as they take). Handlers still
   * running then are abandoned and their jobs handed back to the queue at once: due again for
   * any worker (the cut attempt counted), or failed when it was their last attempt.
   */
  timeoutMs?: number;
}

/** Options of `idle` and `drain`. */
export interface JobQueueWaitOptions {
  /** Job names to wait for (default: the names this queue has handlers for). */
  names?: readonly string[];
  /** Reject after this many ms (default: wait as long as it takes). */
  timeoutMs?: number;
}

/**
 * A job queue that keeps jobs in a database: at-least-once delivery, retries with exponential
 * backoff, jobs of a dead worker reclaimed after their timeout, dedup by `key` while a job with
 * the same name and key has not started yet.
 */
export interface DurableJobQueue extends JobQueue {
  /** Stores the job (committed when this resolves); a no-op when its `key` is already waiting. */
  enqueue(job: DurableJobRequest): Promise<void>;
  /** Registers the handler of a job name; this queue then claims jobs of that name once started. */
  work(name: string, handler: JobHandler): Promise<void>;
  /** Starts claiming and running due jobs in the background. */
  start(): Promise<void>;
  /** Stops claiming jobs and waits for running handlers (see `JobQueueStopOptions`). Can start again. */
  stop(options?: JobQueueStopOptions): Promise<void>;
  /** `stop`, then releases the connections this queue opened itself. */
  close(options?: JobQueueStopOptions): Promise<void>;
  /** Resolves when no job of `names` is due or running, in this process or another. */
  idle(options?: JobQueueWaitOptions): Promise<void>;
  /** Resolves when every job of `names` has completed or failed, including delayed ones. */
  drain(options?: JobQueueWaitOptions): Promise<void>;
  /** Jobs kept as failed, oldest first; all names, or only `name`. */
  failedJobs(name?: string): Promise<FailedJob[]>;
  /** Puts failed job `id` of `name` back in the queue, due now, with one more attempt. */
  retryFailed(name: string, id: string): Promise<boolean>;
}
