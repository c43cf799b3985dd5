/**
 * Where the engine's jobs go: the configured queue (with its transactional outbox when it
 * keeps jobs in the store's database), else an in-process `InMemoryJobQueue` made on first
 * use, so delegation works out of the box (its jobs are lost if the process dies).
 */
import {
  InMemoryJobQueue,
  type JobOutbox,
  type JobQueue,
  type JobRequest,
} from '../../jobs/job-queue.js';
import type { Store } from '../../persistence/store.js';
import type { EngineJobs } from '../context.js';
import type { DurableJobQueue, FailedJob } from '../../jobs/types.js';

/** What the dispatch is made with. */
export interface JobDispatchOptions {
  store: Store;
  /** The configured queue; without one an in-process queue is made on first use. */
  queue: JobQueue | undefined;
  /** Registers the engine's handlers on a queue (engine/jobs/job-handlers.ts). */
  register: (queue: JobQueue) => Promise<void>;
  now: () => Date;
  onError: (error: unknown, context: string) => void;
}

/** The job queue of one runtime. */
export class JobDispatch implements EngineJobs {
  readonly #options: JobDispatchOptions;
  #queue: JobQueue | undefined;
  #registered: Promise<void> | null = null;
  /** The in-process queue made when none was configured (stopped by `close`). */
  #fallback: InMemoryJobQueue | null = null;
  /** The configured queue's outbox for the store, when it has one. */
  readonly outbox: JobOutbox | null;

  constructor(options: JobDispatchOptions) {
    this.#options = options;
    this.#queue = options.queue;
    this.outbox = options.queue?.outboxFor?.(options.store) ?? null;
  }

  /** Registers the job handlers on the configured queue (once; before a worker starts). */
  register(): Promise<void> {
    if (this.#queue === undefined) return Promise.resolve();
    return (this.#registered ??= this.#options.register(this.#queue));
  }

  async enqueue(jobs: readonly JobRequest[]): Promise<void> {
    const queue = await this.#ready();
    for (const job of jobs) await queue.enqueue(job);
  }

  /**
   * Unfinished jobs per kind on the queue this process works (handlers registered), for the
   * `machine_routes.jobs.depth` gauge; empty before then or when the queue cannot count.
   */
  async depth(names: ReadonlyMap<string, string>): Promise<Map<string, number>> {
    const queue = this.#queue;
    const counts = new Map<string, number>();
    if (this.#registered === null || queue?.unfinished === undefined) return counts;
    await this.#registered;
    for (const [kind, name] of names) counts.set(kind, await queue.unfinished(name));
    return counts;
  }

  async failedJobs(): Promise<FailedJob[]> {
    const queue = this.#queue as Partial<DurableJobQueue> | undefined;
    return typeof queue?.failedJobs === 'function' ? queue.failedJobs() : [];
  }

  async retryFailed(job: Pick<FailedJob, 'id' | 'name'>): Promise<boolean> {
    const queue = this.#queue as Partial<DurableJobQueue> | undefined;
    return typeof queue?.retryFailed === 'function' ? queue.retryFailed(job.name, job.id) : false;
  }

  /** Stops the in-process queue made here, if any (a configured one is the caller's). */
  async close(): Promise<void> {
    await this.#fallback?.stop();
  }

  async #ready(): Promise<JobQueue> {
    if (this.#queue === undefined) {
      const fallback = new InMemoryJobQueue({
        now: this.#options.now,
        onError: (error, job) => this.#options.onError(error, `job ${job.name}`),
      });
      this.#queue = fallback;
      this.#fallback = fallback;
      fallback.start();
    }
    await this.register();
    return this.#queue;
  }
}
