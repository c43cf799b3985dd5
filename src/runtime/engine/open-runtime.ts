/**
 * The composition root, the one way a runtime is started from settings: every setting is
 * resolved from one source (options given in code, over `env`, over `process.env`, through
 * the one schema of runtime/environment.ts), then the store is opened
 * (and migrated), then its durable job queue with the resolved queue settings, then the runtime,
 * then what runs in the background (the queue's worker, the timer sweep, the expired-row sweep).
 * `MachineRuntime.open`, `startWorker`, `machine-routes worker` / `timers` and the generated app
 * all come through here, so a `MACHINE_*` setting means the same in each.
 */
import type { JobQueue } from '../jobs/job-queue.js';
import { openJobQueue } from '../jobs/open-job-queue.js';
import type { DurableJobQueue } from '../jobs/types.js';
import { assertMigrated, assertSessionConnections, openStore } from '../persistence/open-store.js';
import { stderrLogger, type Logger } from '../logger.js';
import { resolveSettings, type ResolvedSettings } from './config.js';
import type { EngineContext } from './context.js';
import { HistoryRetentionSweeper } from './history-retention.js';
import { LockSweeper } from './lock-sweeper.js';
import type { MachineRuntimeOptions, OpenRuntimeOptions } from './options.js';
import { TimerWorker } from './timers/timer-worker.js';

/** What `openRuntime` started, for the runtime to stop on `close`. */
export interface OpenedParts {
  readonly settings: ResolvedSettings;
  /** The queue opened here (closed by the runtime), `null` when the caller gave one. */
  readonly ownedJobs: DurableJobQueue | null;
  readonly timers: TimerWorker | null;
  /**
   * Stops the timer and expired-row sweeps, then (once `registered`) closes the owned queue,
   * waiting up to `jobTimeoutMs` for running jobs.
   */
  stop(registered: Promise<void>, jobTimeoutMs: number): Promise<void>;
}

/**
 * Opens a runtime from settings (see the module comment). `build` makes the runtime from its
 * options once store and queue are open (`MachineRuntime.open` passes its constructor); what
 * was opened is closed again when anything fails.
 */
export async function openRuntime<R extends { context: EngineContext; ready(): Promise<void> }>(
  options: OpenRuntimeOptions,
  build: (runtimeOptions: MachineRuntimeOptions, opened: OpenedParts) => R,
): Promise<R> {
  const { worker = true, timers = [], logger, keepAlive = false } = options;
  // Read before anything is opened: a malformed setting fails the start.
  const settings = resolveSettings(options);
  const { runtime: config } = settings;
  const givenStore = options.store;
  const store =
    givenStore ??
    (await openStore(
      config.databaseUrl,
      options.migrate === undefined ? {} : { migrate: options.migrate },
    ));
  const machineJobs = options.machineJobs !== false;
  let ownedJobs: DurableJobQueue | null = null;
  try {
    // Before anything else uses it: behind a transaction pooler the first named statement fails.
    await assertSessionConnections(store);
    if (options.migrate !== true && machineJobs) await assertMigrated(store);
    let jobs: JobQueue;
    if (options.jobs !== undefined) jobs = options.jobs;
    else {
      ownedJobs = await openJobQueue(store, {
        // An in-process worker must not keep a process alive that is otherwise done.
        keepAlive,
        onError: (error, job) => reportJobError(logger ?? stderrLogger, error, job),
        ...options.jobQueue,
        // Resolved from `env`, not read again from `process.env` by the queue.
        ...settings.jobQueue,
      });
      jobs = machineJobs ? ownedJobs : enqueueOnly(ownedJobs);
    }
    let timerWorker: TimerWorker | null = null;
    let sweeper: LockSweeper | null = null;
    let retention: HistoryRetentionSweeper | null = null;
    const opened: OpenedParts = {
      settings,
      ownedJobs,
      get timers() {
        return timerWorker;
      },
      async stop(registered, jobTimeoutMs) {
        await timerWorker?.stop();
        await sweeper?.stop();
        await retention?.stop();
        await registered;
        await ownedJobs?.close({ timeoutMs: jobTimeoutMs });
      },
    };
    const runtime = build(
      {
        store,
        ...(givenStore === undefined ? {} : { closeStore: false }),
        jobs,
        lockTtl: config.lockTtl,
        lockTimeout: config.lockTimeout,
        maxTransitionDepth: config.maxTransitionDepth,
        scenarios: config.scenariosEnabled,
        traceBehaviors: config.traceBehaviors,
        traceSteps: config.traceSteps,
        timerTries: config.timerTries,
        timerBackoff: config.timerBackoff,
        parallelDispatch: settings.parallelDispatch,
        machines: [...(options.machines ?? []), ...timers.map((timer) => timer.machine)],
        ...(options.jobAbortPollMs === undefined ? {} : { jobAbortPollMs: options.jobAbortPollMs }),
        ...(options.clock === undefined ? {} : { now: () => options.clock!.now() }),
        ...(logger === undefined ? {} : { logger }),
      },
      opened,
    );
    if (ownedJobs !== null && worker === true) {
      await runtime.ready();
      await options.register?.(ownedJobs);
      await ownedJobs.start();
    }
    if (worker && timers.length > 0) {
      timerWorker = new TimerWorker({
        context: runtime.context,
        registrations: timers,
        keepAlive,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...(options.timerIntervalMs === undefined ? {} : { intervalMs: options.timerIntervalMs }),
      });
      timerWorker.start();
    }
    if (worker === true && options.lockSweepIntervalMs !== false) {
      // Servers running their own jobs are often the only process of a store (SQLite): without
      // this, expired Idempotency-Key records would never be deleted.
      sweeper = new LockSweeper({
        store,
        ...(options.lockSweepIntervalMs === undefined
          ? {}
          : { intervalMs: options.lockSweepIntervalMs }),
        onError: (error: unknown) =>
          runtime.context.logger.error({ err: error }, 'machine-routes: expired-row sweep failed'),
      });
      sweeper.start();
    }
    const retentionDays = config.historyRetentionDays;
    if (worker === true && retentionDays > 0 && options.retentionSweepIntervalMs !== false) {
      retention = new HistoryRetentionSweeper({
        store,
        retentionDays,
        archive: config.historyRetentionArchive,
        ...(options.clock === undefined ? {} : { now: () => options.clock!.now() }),
        ...(options.retentionSweepIntervalMs === undefined
          ? {}
          : { intervalMs: options.retentionSweepIntervalMs }),
        onError: (error: unknown) =>
          runtime.context.logger.error({ err: error }, 'machine-routes: history retention failed'),
      });
      retention.start();
    }
    return runtime;
  } catch (error) {
    await ownedJobs?.close({ timeoutMs: 0 }).catch(() => {});
    if (givenStore === undefined) await store.close().catch(() => {});
    throw error;
  }
}

/**
 * The queue as a runtime that leaves its own jobs to other processes sees it: it enqueues
 * (through the outbox too), but registers no handler, so this process claims none of them.
 */
function enqueueOnly(queue: DurableJobQueue): JobQueue {
  return {
    enqueue: (job) => queue.enqueue(job),
    work: () => {},
    outboxFor: (store) => queue.outboxFor?.(store) ?? null,
  };
}

// Failed job attempts of the runtime's own queue, to the application's logger (the job is
// retried or kept as failed in the queue).
function reportJobError(
  logger: Logger,
  error: unknown,
  job: { name: string; id: string } | null,
): void {
  const where = job === null ? 'job worker' : `job ${job.name} ${job.id}`;
  logger.error({ err: error }, `machine-routes: ${where} failed`);
}
