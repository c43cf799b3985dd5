/**
 * `startWorker`: a durable queue's worker with handlers of your own (`machine-routes worker`
 * opens a whole runtime instead: `MachineRuntime.open`). Opens the queue of a database with the
 * settings `MachineRuntime.open` would resolve (`resolveSettings`), registers the handlers and
 * runs them until stopped, and sweeps the store's expired lock rows (left by killed processes)
 * and Idempotency-Key records periodically.
 */
import type { JobHandler } from '../jobs/job-queue.js';
import { resolveSettings } from './config.js';
import { assertMigrated, openStore, parseStoreUrl } from '../persistence/open-store.js';
import type { Store } from '../persistence/store.js';
import { LockSweeper } from './lock-sweeper.js';
import { openJobQueue } from '../jobs/open-job-queue.js';
import type {
  DurableJobQueue,
  JobErrorListener,
  JobQueueSettings,
  JobQueueStopOptions,
} from '../jobs/types.js';

/** Options of `startWorker`. */
export interface StartWorkerOptions extends Partial<JobQueueSettings> {
  /** Store URL (default: `MACHINE_DATABASE_URL`, else `sqlite:./data/machines.db`). */
  databaseUrl?: string;
  /**
   * An open store whose queue to run instead of `databaseUrl` (`openJobQueue(store)`: it shares
   * the store's connection, which stays open when the worker stops).
   */
  store?: Store;
  /** Handlers by job name. */
  handlers?: Readonly<Record<string, JobHandler>>;
  /**
   * Registers more handlers on the queue before it starts: e.g. build the `MachineRuntime` with
   * `{ jobs: queue }`, whose delegation shell registers the child, completion and send jobs.
   */
  register?: (queue: DurableJobQueue) => void | Promise<void>;
  /** pg-boss schema on PostgreSQL (see `openJobQueue`). */
  jobSchema?: string;
  /** Every failed attempt and storage error (default: one line on stderr). */
  onError?: JobErrorListener;
  /** Stop gracefully on SIGINT and SIGTERM (default true). */
  handleSignals?: boolean;
  /** Environment read for defaults (default `process.env`). */
  env?: Record<string, string | undefined>;
  /**
   * Pause in ms between two sweeps of expired lock rows and Idempotency-Key records (default
   * 60 000), or `false` for none.
   * With `databaseUrl` the worker opens a store connection of its own for it (not for
   * in-memory URLs, whose store would be a private one).
   */
  lockSweepIntervalMs?: number | false;
}

/** A running worker. */
export interface RunningWorker {
  readonly queue: DurableJobQueue;
  /** Stops claiming jobs, waits for running handlers (see `JobQueueStopOptions`), closes the queue. */
  stop(options?: JobQueueStopOptions): Promise<void>;
  /** Resolves once the worker has stopped (by `stop` or a signal). */
  readonly stopped: Promise<void>;
}

/**
 * Opens the queue of `databaseUrl`, registers `handlers` (and whatever `register` adds) and starts
 * running jobs. Concurrency, attempts, backoff and timeout default to `loadJobQueueConfig`.
 */
export async function startWorker(options: StartWorkerOptions = {}): Promise<RunningWorker> {
  const {
    databaseUrl,
    store,
    handlers = {},
    register,
    jobSchema,
    onError = writeError,
    handleSignals = true,
    env = process.env,
    lockSweepIntervalMs,
    ...settings
  } = options;
  // The same settings as `MachineRuntime.open`: options over `env` (default `process.env`).
  const resolved = resolveSettings({ databaseUrl, env, jobQueue: settings });
  const target = store ?? resolved.runtime.databaseUrl;
  // A machine store (as `machine-routes worker` passes) on an unmigrated PostgreSQL schema is
  // refused before any job is claimed; a queue opened from a URL alone may serve plain jobs.
  if (store !== undefined) await assertMigrated(store);
  const queue = await openJobQueue(target, {
    ...resolved.jobQueue,
    onError,
    ...(jobSchema !== undefined ? { jobSchema } : {}),
  });
  let sweepStore: Store | null = null;
  let sweeper: LockSweeper | null = null;
  try {
    for (const [name, handler] of Object.entries(handlers)) await queue.work(name, handler);
    await register?.(queue);
    await queue.start();
    if (lockSweepIntervalMs !== false) {
      if (typeof target !== 'string') sweepStore = target;
      else if (!isPrivateStore(target)) sweepStore = await openStore(target);
      if (sweepStore !== null) {
        sweeper = new LockSweeper({
          store: sweepStore,
          ...(lockSweepIntervalMs !== undefined ? { intervalMs: lockSweepIntervalMs } : {}),
          onError: (error) => onError(error, null),
        });
        sweeper.start();
      }
    }
  } catch (error) {
    await queue.close({ timeoutMs: 0 });
    if (sweepStore !== null && sweepStore !== store) await sweepStore.close();
    throw error;
  }

  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  let stopping: Promise<void> | null = null;
  const onSignal = () => void stop();
  const stop = (stopOptions: JobQueueStopOptions = {}): Promise<void> => {
    stopping ??= (async () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      try {
        await sweeper?.stop();
        await queue.close(stopOptions);
      } finally {
        // A store opened for the sweep is the worker's own; a given one stays open.
        if (sweepStore !== null && sweepStore !== store) await sweepStore.close();
        resolveStopped();
      }
    })();
    return stopping;
  };
  if (handleSignals) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  return { queue, stop, stopped };
}

/** In-memory URLs: a store opened for them would be a fresh, private one with nothing to sweep. */
function isPrivateStore(url: string): boolean {
  const location = parseStoreUrl(url);
  return (
    location.kind === 'memory' || (location.kind === 'sqlite' && location.filename === ':memory:')
  );
}

function writeError(
  error: unknown,
  job: { name: string; id: string; attempt: number } | null,
): void {
  const where = job === null ? 'job worker' : `job ${job.name} ${job.id} (attempt ${job.attempt})`;
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`machine-routes: ${where} failed: ${text}\n`);
}
