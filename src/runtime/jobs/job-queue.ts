/**
 * The job queue the delegation shell runs its asynchronous work through (child start, child
 * completion, timeouts, async sends, queued listeners). A small contract so the durable
 * implementations (the embedded jobs table with an in-process worker; pg-boss on PostgreSQL)
 * plug in unchanged; `InMemoryJobQueue` serves tests and single-process use without durability.
 *
 * Contract every implementation keeps:
 * - at-least-once: a job may run twice (a worker died mid-job), so handlers are idempotent;
 * - a job does not run before `runAt`;
 * - `key`: while a job with the same key waits (not started yet), enqueueing another is a no-op
 *   (pg-boss `singletonKey`);
 * - a handler that throws failed its attempt; whether it is retried is the queue's policy. Jobs
 *   with their own retry rules (async sends) re-enqueue themselves instead of throwing.
 * - `outboxFor` (optional): a queue whose jobs live in the store's own database can write jobs
 *   inside the store's commit (transactional outbox), so jobs and the step causing them commit
 *   together.
 */
import type { TransactionHook } from '../persistence/transaction.js';

/** JSON-serializable data: what a job payload may hold. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A job to run. */
export interface JobRequest {
  /** Handler name (`machine-routes.child.start`, ...). */
  name: string;
  payload: Json;
  /** Not before this time (default: now). */
  runAt?: Date;
  /** De-duplication key: ignored while a job with this key waits. */
  key?: string;
}

/** A job as its handler sees it. */
export interface JobInfo {
  id: string;
  name: string;
  payload: Json;
  runAt: Date;
  key: string | null;
  /** 1 on the first run. */
  attempt: number;
  /**
   * Attempts the job gets in all, when the queue knows it (the durable queues and
   * `InMemoryJobQueue` do): a handler whose `attempt` equals it runs the last one.
   */
  maxAttempts?: number;
}

/** Runs one job; a rejection is a failed attempt. */
export type JobHandler = (payload: Json, job: JobInfo) => Promise<void> | void;

/** The queue contract (see the module comment for its guarantees). */
export interface JobQueue {
  /** Adds a job. Resolves once the job is stored (durable queues: committed). */
  enqueue(job: JobRequest): Promise<void>;
  /** Registers the handler of a job name (one per name; a second registration replaces it). */
  work(name: string, handler: JobHandler): void | Promise<void>;
  /**
   * The outbox of this queue for `store` (a `Store`), or `null` when the queue's jobs do not
   * live in that store's database (then jobs are enqueued after the commit).
   */
  outboxFor?(store: unknown): JobOutbox | null;
  /**
   * Jobs named `name` not finished yet (waiting, delayed or running), for the queue depth
   * gauge; queues that cannot count leave it out.
   */
  unfinished?(name: string): Promise<number>;
}

/** Writes jobs inside a store commit (see `JobQueue.outboxFor`). */
export interface JobOutbox {
  /** A hook for the commit's `inTransaction` that stores `jobs` (same rules as `enqueue`). */
  write(jobs: readonly JobRequest[]): TransactionHook;
  /** Called once such a commit succeeded: a local worker looks for the new jobs at once. */
  committed(): void;
}

/** Options of `InMemoryJobQueue`. */
export interface InMemoryJobQueueOptions {
  /** Clock deciding which jobs are due (tests move it to run delayed jobs). */
  now?: () => Date;
  /** Extra attempts after a failed one (default 0). */
  retries?: number;
  /** Called with every failed attempt (default: ignored; see `failures`). */
  onError?: (error: unknown, job: JobInfo) => void;
}

interface QueuedJob extends JobInfo {
  started: boolean;
}

/**
 * A process-local queue. Jobs run one at a time, in `runAt` order (then enqueue order). Two ways
 * to run them: `runDue()` runs every due job now, including the ones those jobs enqueue
 * (deterministic tests); `start()` runs them in the background as they fall due, until `stop()`.
 */
export class InMemoryJobQueue implements JobQueue {
  /** Failed attempts, oldest first. */
  readonly failures: { job: JobInfo; error: unknown }[] = [];
  readonly #jobs: QueuedJob[] = [];
  readonly #handlers = new Map<string, JobHandler>();
  readonly #now: () => Date;
  readonly #retries: number;
  readonly #onError: ((error: unknown, job: JobInfo) => void) | undefined;
  #sequence = 0;
  #started = false;
  #timer: NodeJS.Timeout | null = null;
  #pumping: Promise<void> | null = null;

  constructor(options: InMemoryJobQueueOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    this.#retries = options.retries ?? 0;
    this.#onError = options.onError;
  }

  async enqueue(job: JobRequest): Promise<void> {
    if (
      job.key !== undefined &&
      this.#jobs.some((queued) => !queued.started && queued.key === job.key)
    )
      return;
    this.#sequence += 1;
    this.#jobs.push({
      id: `job-${this.#sequence}`,
      name: job.name,
      // A copy, as a durable queue would store it: later changes of the caller's object do not leak in.
      payload: structuredClone(job.payload),
      runAt: job.runAt ?? this.#now(),
      key: job.key ?? null,
      attempt: 1,
      started: false,
    });
    this.#wake();
  }

  work(name: string, handler: JobHandler): void {
    this.#handlers.set(name, handler);
    this.#wake();
  }

  async unfinished(name: string): Promise<number> {
    return this.#jobs.filter((job) => job.name === name).length;
  }

  /** Jobs not finished yet (waiting or running), in run order. */
  get pending(): readonly JobInfo[] {
    return this.#ordered().map(({ started: _started, ...job }) => job);
  }

  /**
   * Runs every job due at `now()` whose name has a handler, one at a time, until none is left
   * (jobs they enqueue run too when due). Returns how many attempts ran.
   */
  async runDue(): Promise<number> {
    let count = 0;
    for (let job = this.#nextDue(); job !== undefined; job = this.#nextDue()) {
      await this.#run(job);
      count += 1;
    }
    return count;
  }

  /** Runs jobs in the background as they fall due. */
  start(): void {
    this.#started = true;
    this.#wake();
  }

  /** Stops background processing (the running job finishes). */
  async stop(): Promise<void> {
    this.#started = false;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#pumping;
  }

  /** Resolves once no due job is waiting or running (background mode). */
  async idle(): Promise<void> {
    while (this.#pumping !== null || this.#nextDue() !== undefined) {
      if (this.#pumping !== null) await this.#pumping;
      else await this.runDue();
    }
  }

  #ordered(): QueuedJob[] {
    return [...this.#jobs].sort((a, b) => a.runAt.getTime() - b.runAt.getTime());
  }

  #nextDue(): QueuedJob | undefined {
    const now = this.#now().getTime();
    return this.#ordered().find(
      (job) => !job.started && job.runAt.getTime() <= now && this.#handlers.has(job.name),
    );
  }

  async #run(job: QueuedJob): Promise<void> {
    job.started = true;
    const handler = this.#handlers.get(job.name) as JobHandler;
    const { started: _started, ...queued } = job;
    const info: JobInfo = { ...queued, maxAttempts: this.#retries + 1 };
    try {
      await handler(info.payload, info);
      this.#remove(job);
    } catch (error) {
      this.failures.push({ job: info, error });
      this.#onError?.(error, info);
      if (job.attempt <= this.#retries) {
        job.attempt += 1;
        job.started = false;
      } else {
        this.#remove(job);
      }
    }
  }

  #remove(job: QueuedJob): void {
    const index = this.#jobs.indexOf(job);
    if (index >= 0) this.#jobs.splice(index, 1);
  }

  /** Background mode: run what is due now, then sleep until the next job falls due. */
  #wake(): void {
    if (!this.#started || this.#pumping !== null) return;
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#pumping = (async () => {
      try {
        // Yield first: `enqueue` callers expect to finish their own work before the job runs.
        await new Promise((resolve) => setImmediate(resolve));
        await this.runDue();
      } finally {
        this.#pumping = null;
        this.#sleep();
      }
    })();
  }

  #sleep(): void {
    if (!this.#started) return;
    const now = this.#now().getTime();
    const next = this.#ordered().find((job) => !job.started && this.#handlers.has(job.name));
    if (next === undefined) return;
    const delay = Math.max(0, next.runAt.getTime() - now);
    if (delay === 0) {
      this.#wake();
      return;
    }
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#wake();
      },
      Math.min(delay, 2 ** 31 - 1),
    );
    this.#timer.unref?.();
  }
}
