/**
 * `startWorker`: a durable queue's worker with handlers of your own, and with `machines` the
 * engine's jobs of those machines too. It starts its runtime through the composition root
 * (`MachineRuntime.open`, engine/open-runtime.ts), so every setting resolves as everywhere else
 * (options over `env` over `process.env`), registers the handlers and runs them until stopped,
 * and sweeps the store's expired lock rows (left by killed processes) and Idempotency-Key
 * records periodically.
 */
import type { JobHandler } from '../jobs/job-queue.js';
import { resolveSettings } from './config.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import { assertMigrated, parseStoreUrl } from '../persistence/open-store.js';
import type { Store } from '../persistence/store.js';
import { MachineRuntime } from './machine-runtime.js';
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
  /** Environment variables over `process.env`'s, as in `MachineRuntime.open`. */
  env?: Record<string, string | undefined>;
  /**
   * Machines whose engine jobs (child starts, completions, job actors, sends, region jobs) this
   * worker runs too. Without, it runs only `handlers` and `register`'s jobs and leaves the
   * engine's to other processes.
   */
  machines?: readonly MachineDefinition[];
  /**
   * Pause in ms between two sweeps of expired lock rows and Idempotency-Key records (default
   * 60 000), or `false` for none.
   * Not for in-memory URLs, whose store is a private one.
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
 * Opens a runtime on `databaseUrl` (or `store`) through the composition root, registers
 * `handlers` (and whatever `register` adds) on its queue and starts running jobs; with
 * `machines`, the engine's own jobs too. Every setting resolves as in `MachineRuntime.open`.
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
    env,
    lockSweepIntervalMs,
    machines,
    ...settings
  } = options;
  // A machine store (as `machine-routes worker` passes) on an unmigrated PostgreSQL schema is
  // refused before any job is claimed; a queue opened from a URL alone may serve plain jobs.
  if (store !== undefined) await assertMigrated(store);
  let queue: DurableJobQueue | null = null;
  const runtime = await MachineRuntime.open({
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
    ...(store === undefined ? {} : { store }),
    ...(env === undefined ? {} : { env }),
    jobQueue: { ...settings, onError, ...(jobSchema === undefined ? {} : { jobSchema }) },
    // Without machines, only the handlers given here: the engine's jobs are other processes'.
    ...(machines === undefined ? { machineJobs: false } : { machines }),
    register: async (opened) => {
      queue = opened;
      for (const [name, handler] of Object.entries(handlers)) await opened.work(name, handler);
      await register?.(opened);
    },
    // A worker process lives as long as its queue polls.
    keepAlive: true,
    // In-memory URLs: the store is a private one with nothing of anyone else's to sweep.
    lockSweepIntervalMs: isPrivate(store, databaseUrl, env) ? false : lockSweepIntervalMs,
    logger: { error: (fields) => onError(fields['err'] ?? fields, null) },
  });
  const running = queue as DurableJobQueue | null;
  if (running === null) {
    await runtime.close();
    throw new Error('machine-routes: startWorker opened no queue of its own.');
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
        // The queue first, with the caller's wait (default: as long as handlers take); the
        // runtime's close then finds it closed and stops the sweep, the feed and the store.
        await running.close(stopOptions);
        await runtime.close();
      } finally {
        resolveStopped();
      }
    })();
    return stopping;
  };
  if (handleSignals) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  return { queue: running, stop, stopped };
}

/** In-memory URLs: a store opened for them is a fresh, private one with nothing to sweep. */
function isPrivate(
  store: Store | undefined,
  databaseUrl: string | undefined,
  env: Record<string, string | undefined> | undefined,
): boolean {
  if (store !== undefined) return false;
  const url = databaseUrl ?? resolveSettings({ env }).runtime.databaseUrl;
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
