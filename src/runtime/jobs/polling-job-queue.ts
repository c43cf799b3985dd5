/**
 * The worker loop shared by the durable queues: claims due jobs from a `JobBackend`, runs up to
 * `concurrency` handlers at once, reports each attempt's outcome back, and sleeps between polls.
 * Local events (an enqueue, a registration, a finished handler) wake it at once; jobs enqueued
 * by other processes are found by polling.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { JobHandler, JobInfo, JobOutbox, JobRequest } from './job-queue.js';
import { loadJobQueueConfig } from './config.js';
import {
  describeError,
  type ClaimedJob,
  type JobBackend,
  type NewJob,
  type PendingScope,
} from './job-backend.js';
import type {
  DurableJobQueue,
  DurableJobQueueOptions,
  DurableJobRequest,
  FailedJob,
  JobErrorListener,
  JobQueueSettings,
  JobQueueStopOptions,
  JobQueueWaitOptions,
} from './types.js';

// How often `idle`/`drain` look at the backend: short, they serve tests and shutdown.
const WAIT_POLL_MS = 20;

interface Running {
  /** Set when `stop` gave up waiting: the outcome is no longer reported. */
  abandoned: boolean;
  job: ClaimedJob;
}

/** A durable queue over any `JobBackend` (see `EmbeddedJobQueue`, `PgBossJobQueue`). */
export class PollingJobQueue implements DurableJobQueue {
  /** Settings in force (options, then environment, then defaults). */
  readonly settings: Readonly<JobQueueSettings>;
  readonly #backend: JobBackend;
  readonly #onError: JobErrorListener;
  readonly #handlers = new Map<string, JobHandler>();
  readonly #running = new Map<Promise<void>, Running>();
  readonly #keepAlive: boolean;
  #started = false;
  #closed = false;
  #loop: Promise<void> | null = null;
  /** Claims on their way (side by side when the backend allows it) and the slots they asked for. */
  readonly #claims = new Set<Promise<void>>();
  #claiming = 0;
  /** Wake-ups so far: a claim that began before one may have missed the job it announced. */
  #wakes = 0;
  #wakePending = false;
  #wakeUp: (() => void) | null = null;

  protected constructor(backend: JobBackend, options: DurableJobQueueOptions = {}) {
    const { onError, keepAlive = true, ...overrides } = options;
    this.settings = Object.freeze(loadJobQueueConfig(overrides));
    this.#backend = backend;
    this.#onError = onError ?? (() => {});
    this.#keepAlive = keepAlive;
  }

  async enqueue(job: DurableJobRequest): Promise<void> {
    this.#assertOpen();
    await this.#backend.insert(this.#newJob(job));
    this.#wake();
  }

  /**
   * The transactional outbox for `store` when the backend keeps its jobs in that store's
   * database (the embedded queue on the store's SQLite file, pg-boss in the store's PostgreSQL
   * database), else `null`.
   */
  outboxFor(store: unknown): JobOutbox | null {
    const writer = this.#backend.outboxFor?.(store) ?? null;
    if (writer === null) return null;
    return {
      write: (jobs: readonly JobRequest[]) => {
        // Validated now, outside the transaction: a bad job fails the step before it commits.
        const rows = jobs.map((job) => this.#newJob(job));
        return (transaction) => writer(transaction, rows);
      },
      committed: () => this.#wake(),
    };
  }

  /** The stored form of a request, with the queue's defaults; throws on invalid retry rules. */
  #newJob(job: DurableJobRequest): NewJob {
    this.#assertOpen();
    const maxAttempts = job.maxAttempts ?? this.settings.maxAttempts;
    const backoffMs = job.backoffMs ?? this.settings.backoffMs;
    const timeoutMs = job.timeoutMs ?? this.settings.timeoutMs;
    if (typeof job.name !== 'string' || job.name === '')
      throw new TypeError('A job needs a non-empty name.');
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
      throw new RangeError(
        `Job '${job.name}': maxAttempts must be an integer >= 1, got ${maxAttempts}.`,
      );
    if (!Number.isFinite(backoffMs) || backoffMs < 0)
      throw new RangeError(`Job '${job.name}': backoffMs must be a number >= 0, got ${backoffMs}.`);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new RangeError(`Job '${job.name}': timeoutMs must be a number > 0, got ${timeoutMs}.`);
    return {
      name: job.name,
      payload: job.payload,
      runAt: job.runAt ?? null,
      key: job.key ?? null,
      maxAttempts,
      backoffMs,
      timeoutMs,
    };
  }

  async work(name: string, handler: JobHandler): Promise<void> {
    this.#assertOpen();
    await this.#backend.prepare(name);
    this.#handlers.set(name, handler);
    this.#wake();
  }

  async start(): Promise<void> {
    this.#assertOpen();
    if (this.#started) return;
    this.#started = true;
    this.#loop = this.#run();
  }

  async stop(options: JobQueueStopOptions = {}): Promise<void> {
    this.#started = false;
    this.#wake();
    await this.#loop;
    this.#loop = null;
    // A claim still on its way launches what it claimed: waited for like them.
    while (this.#claims.size > 0) await Promise.all(this.#claims);
    const running = [...this.#running];
    if (running.length === 0) return;
    const settled = Promise.allSettled(running.map(([promise]) => promise));
    if (options.timeoutMs === undefined) {
      await settled;
      return;
    }
    const timer = delay(options.timeoutMs, 'timeout' as const, { ref: false });
    if ((await Promise.race([settled, timer])) === 'timeout') {
      for (const [promise, state] of running) {
        if (!this.#running.has(promise)) continue; // it finished meanwhile
        state.abandoned = true;
        this.#running.delete(promise);
        // Back in the queue at once for another worker, not when its claim expires.
        await this.#backend.release(state.job).catch((error: unknown) => {
          this.#report(error, state.job.info);
        });
      }
    }
  }

  async close(options: JobQueueStopOptions = {}): Promise<void> {
    if (this.#closed) return;
    await this.stop(options);
    this.#closed = true;
    await this.#backend.close();
  }

  async idle(options: JobQueueWaitOptions = {}): Promise<void> {
    await this.#waitUntilNone('due', options);
  }

  async drain(options: JobQueueWaitOptions = {}): Promise<void> {
    await this.#waitUntilNone('all', options);
  }

  async unfinished(name: string): Promise<number> {
    this.#assertOpen();
    return this.#backend.count([name], 'all');
  }

  async failedJobs(name?: string): Promise<FailedJob[]> {
    this.#assertOpen();
    return this.#backend.failed(name);
  }

  /** Puts failed job `id` of `name` back in the queue with one more attempt; `false` if not failed. */
  async retryFailed(name: string, id: string): Promise<boolean> {
    this.#assertOpen();
    const retried = await this.#backend.retryFailed(name, id);
    if (retried) this.#wake();
    return retried;
  }

  async #waitUntilNone(scope: PendingScope, options: JobQueueWaitOptions): Promise<void> {
    this.#assertOpen();
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    for (;;) {
      const names = options.names ?? [...this.#handlers.keys()];
      const local = options.names === undefined ? this.#running.size : 0;
      if (local === 0 && (names.length === 0 || (await this.#backend.count(names, scope)) === 0))
        return;
      if (Date.now() >= deadline) {
        throw new Error(
          `Jobs of ${names.map((name) => `'${name}'`).join(', ')} still ${scope === 'due' ? 'due or running' : 'waiting'} after ${options.timeoutMs} ms.`,
        );
      }
      await delay(WAIT_POLL_MS);
    }
  }

  async #run(): Promise<void> {
    while (this.#started) {
      const free = this.settings.concurrency - this.#running.size - this.#claiming;
      if (free > 0 && this.#handlers.size > 0) {
        const claim = this.#claim(free);
        if (!this.#backend.concurrentClaims) await claim;
      }
      if (!this.#started) break;
      await this.#sleep(this.settings.pollIntervalMs);
    }
  }

  /** Claims up to `free` jobs and launches them. Never rejects. */
  #claim(free: number): Promise<void> {
    this.#claiming += free;
    const wakes = this.#wakes;
    const claim = this.#backend.claim([...this.#handlers.keys()], free).then(
      (jobs) => {
        for (const job of jobs) this.#launch(job);
      },
      (error: unknown) => this.#report(error, null),
    );
    const tracked = claim.finally(() => {
      this.#claiming -= free;
      this.#claims.delete(tracked);
      // Its slots were counted as taken meanwhile: a job announced then is looked for now
      // (a claim awaited in the loop gets this from the pending wake-up).
      if (this.#wakes !== wakes && this.#backend.concurrentClaims) this.#wake();
    });
    this.#claims.add(tracked);
    return tracked;
  }

  #launch(job: ClaimedJob): void {
    const state: Running = { abandoned: false, job };
    const attempt = this.#attempt(job, state).finally(() => {
      this.#running.delete(attempt);
      this.#wake();
    });
    this.#running.set(attempt, state);
  }

  async #attempt(job: ClaimedJob, state: Running): Promise<void> {
    const handler = this.#handlers.get(job.info.name)!;
    try {
      await handler(job.info.payload, { ...job.info, maxAttempts: job.maxAttempts });
    } catch (error) {
      if (state.abandoned) return;
      this.#report(error, job.info);
      await this.#backend.fail(job, describeError(error)).catch((failure: unknown) => {
        this.#report(failure, job.info);
      });
      return;
    }
    if (state.abandoned) return;
    await this.#backend.complete(job).catch((failure: unknown) => this.#report(failure, job.info));
  }

  #report(error: unknown, job: JobInfo | null): void {
    try {
      this.#onError(error, job);
    } catch {
      // A throwing listener must not stop the worker loop.
    }
  }

  /** Sleeps up to `ms`, or until `#wake` (a wake-up that came while busy is not lost). */
  async #sleep(ms: number): Promise<void> {
    if (this.#wakePending) {
      this.#wakePending = false;
      return;
    }
    const controller = new AbortController();
    this.#wakeUp = () => controller.abort();
    try {
      await delay(ms, undefined, { signal: controller.signal, ref: this.#keepAlive });
    } catch {
      // Aborted by `#wake`.
    } finally {
      this.#wakeUp = null;
      this.#wakePending = false;
    }
  }

  #wake(): void {
    this.#wakes += 1;
    if (this.#wakeUp !== null) this.#wakeUp();
    else this.#wakePending = true;
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('This job queue is closed.');
  }
}
