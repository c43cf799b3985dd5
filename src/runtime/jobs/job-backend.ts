/**
 * What `PollingJobQueue` needs from a storage backend: the embedded jobs table and pg-boss each
 * implement it, so the worker loop (concurrency, polling, stop, idle) is written once.
 */
import type { JobInfo, Json } from './job-queue.js';
import type { StoreTransaction } from '../persistence/transaction.js';
import type { FailedJob } from './types.js';

/** A job as stored, with every default applied. */
export interface NewJob {
  name: string;
  payload: Json;
  /** `null`: due now (by the database's clock on PostgreSQL). */
  runAt: Date | null;
  key: string | null;
  maxAttempts: number;
  backoffMs: number;
  timeoutMs: number;
}

/** A job claimed for one attempt. */
export interface ClaimedJob {
  info: JobInfo;
  /** Identifies this claim: completing or failing a job reclaimed by someone else does nothing. */
  token: string;
  maxAttempts: number;
  backoffMs: number;
}

/** Which waiting jobs `count` counts. */
export type PendingScope = 'due' | 'all';

/** Writes jobs inside a store's transaction (see `JobBackend.outboxFor`). */
export type OutboxWriter = (
  transaction: StoreTransaction,
  jobs: readonly NewJob[],
) => void | Promise<void>;

/** Storage of a durable queue. Every method is atomic on its own. */
export interface JobBackend {
  /** Makes `name` usable (pg-boss queues must exist before send/fetch). */
  prepare(name: string): Promise<void>;
  /** Stores a job, unless one with the same name and key has not started yet. */
  insert(job: NewJob): Promise<void>;
  /** Claims up to `limit` due jobs of `names` (including jobs whose claim expired). */
  claim(names: readonly string[], limit: number): Promise<ClaimedJob[]>;
  /**
   * Claims may run side by side (a slot freed while a claim is on its way claims at once
   * rather than after it): worth it where a claim is a round trip to a database server.
   */
  readonly concurrentClaims?: boolean;
  /** The attempt succeeded: the job is done. */
  complete(job: ClaimedJob): Promise<void>;
  /** The attempt failed: retried after its backoff, or kept as failed when out of attempts. */
  fail(job: ClaimedJob, error: string): Promise<void>;
  /**
   * Hands back an attempt a shutdown cut at its bound (the handler still running): the job is
   * due again at once for any worker, or failed when that was its last attempt, as a dead
   * worker's job is. Does nothing when the claim is no longer this one.
   */
  release(job: ClaimedJob): Promise<void>;
  /** Jobs of `names` running, plus those due now (`due`) or waiting at all (`all`). */
  count(names: readonly string[], scope: PendingScope): Promise<number>;
  /** Failed jobs, oldest first. */
  failed(name?: string): Promise<FailedJob[]>;
  /**
   * Puts failed job `id` of `name` back in the queue, due now, with one more attempt (an
   * operator's retry). `false` when it is not a failed job (any more).
   */
  retryFailed(name: string, id: string): Promise<boolean>;
  /** Releases what the backend opened itself. */
  close(): Promise<void>;
  /**
   * A writer storing jobs inside `store`'s commit transaction, or `null` when this backend's
   * jobs are not in that store's database.
   */
  outboxFor?(store: unknown): OutboxWriter | null;
}

/** Delay before attempt `attempt + 1` after attempt `attempt` failed. */
export function retryDelayMs(backoffMs: number, attempt: number): number {
  return backoffMs * 2 ** Math.max(0, attempt - 1);
}

/** Text kept as a failed attempt's error: the stack when there is one, else the message. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
}
