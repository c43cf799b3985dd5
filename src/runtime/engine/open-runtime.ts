/**
 * The composition root: configuration -> store -> job queue, the parts `MachineRuntime.open`
 * assembles a runtime from. Everything is made per call; nothing is kept in module state (the
 * transition depth, for one, travels with the runtime's options).
 */
import type { JobQueue } from '../jobs/job-queue.js';
import { openJobQueue, type OpenJobQueueOptions } from '../jobs/open-job-queue.js';
import type { DurableJobQueue } from '../jobs/types.js';
import { assertMigrated, openStore } from '../persistence/open-store.js';
import type { Store } from '../persistence/store.js';
import { loadRuntimeConfig, type MachineRuntimeConfig } from './config.js';
import { stderrLogger, type Logger } from '../logger.js';

/** What `openRuntimeParts` reads. */
export interface RuntimePartsOptions {
  /** Settings given in code; they win over the environment. */
  overrides: Partial<MachineRuntimeConfig>;
  /** Run pending migrations on open (default: SQLite yes, PostgreSQL no; see `openStore`). */
  migrate?: boolean | undefined;
  /** Environment to read settings from (default `process.env`). */
  env?: Record<string, string | undefined> | undefined;
  /** A queue given by the caller (then none is opened). */
  jobs?: JobQueue | undefined;
  /** Settings of the default queue. */
  jobQueue?: OpenJobQueueOptions | undefined;
  /** Where failed job attempts are logged (default: JSON lines on stderr). */
  logger?: Logger | undefined;
}

/** The opened parts; `ownedJobs` is the queue opened here (the runtime closes it). */
export interface RuntimeParts {
  config: MachineRuntimeConfig;
  store: Store;
  jobs: JobQueue;
  ownedJobs: DurableJobQueue | null;
}

/**
 * Loads the configuration, opens (and migrates) the store, and opens the store's durable queue
 * unless one is given. On failure whatever was opened is closed again.
 */
export async function openRuntimeParts(options: RuntimePartsOptions): Promise<RuntimeParts> {
  const config = loadRuntimeConfig(options.overrides, options.env);
  const store = await openStore(
    config.databaseUrl,
    options.migrate === undefined ? {} : { migrate: options.migrate },
  );
  try {
    if (options.migrate !== true) await assertMigrated(store);
    if (options.jobs !== undefined) return { config, store, jobs: options.jobs, ownedJobs: null };
    // The in-process worker must not keep a process alive that is otherwise done.
    const owned = await openJobQueue(store, {
      keepAlive: false,
      onError: (error, job) => reportJobError(options.logger ?? stderrLogger, error, job),
      ...options.jobQueue,
    });
    return { config, store, jobs: owned, ownedJobs: owned };
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
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
