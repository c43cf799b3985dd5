/**
 * The scale-out queue: pg-boss 10 on PostgreSQL, in a schema of its own, shared by every process
 * that opens it. pg-boss keeps the jobs, claims them with `FOR UPDATE SKIP LOCKED`, retries
 * failed attempts with exponential backoff and, in its maintenance pass, returns jobs whose
 * attempt outlived `expireInSeconds` (a hung worker) to the queue. A claim names its worker's
 * holder backend (persistence/postgres-holder.ts), and every worker returns the jobs of a dead
 * one to the queue at once (`#reclaimAbandoned`, at most once a second).
 *
 * How the contract maps onto pg-boss:
 * - every job name is a pg-boss queue created with the `short` policy, whose unique index allows
 *   one job per (name, singletonKey) in state `created`: that is the `key` dedup. Jobs without a
 *   key get a singletonKey of their own id so they never collide;
 * - `maxAttempts` -> `retryLimit` (attempts - 1); `backoffMs` -> `retryDelay` in whole seconds
 *   (rounded up) with `retryBackoff` (pg-boss adds up to 100% jitter); `timeoutMs` ->
 *   `expireInSeconds` (rounded up, at least 1). pg-boss works in seconds, so sub-second values
 *   only matter to the embedded queue;
 * - the payload is stored as JSON text inside the pg-boss `data` document: pg-boss keeps `data`
 *   as `jsonb`, which reorders object keys, and payloads may end up in responses;
 * - claiming uses pg-boss's fetch statement (naming the holder as well, pg-boss-job-table.ts) and
 *   `complete`/`fail` under `PollingJobQueue`'s loop rather than `boss.work`: `work` waits a
 *   full polling interval (at least 0.5 s) after every job and fails or completes a whole
 *   batch together.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import PgBoss from 'pg-boss';
import type { Json } from './job-queue.js';
import { holderConnection, type HolderConnection } from '../persistence/postgres-holder.js';
import { PostgresStore } from '../persistence/postgres-store.js';
import { loadJobQueueConfig } from './config.js';
import type { ClaimedJob, JobBackend, NewJob, OutboxWriter, PendingScope } from './job-backend.js';
import { PollingJobQueue } from './polling-job-queue.js';
import {
  countJobs,
  ensureActiveJobsIndex,
  failedJobs,
  fetchJobs,
  retryNow,
  returnAbandoned,
  type PgJobData,
} from './pg-boss-job-table.js';
import type { DurableJobQueueOptions, FailedJob } from './types.js';

/** Options of `PgBossJobQueue.open`: a connection string, or a pool to share. */
export interface PgBossJobQueueOptions extends DurableJobQueueOptions {
  /** `postgres://` URL; pg-boss opens (and closes) a pool of its own. */
  connectionString?: string;
  /** A pool to share instead (e.g. `PostgresStore.pool`); left open by `close`. */
  pool?: pg.Pool;
  /** Schema of the pg-boss tables, created on first use (default `pgboss`). */
  schema?: string;
  /** Connections of pg-boss's own pool (default 4). */
  poolSize?: number;
  /**
   * Seconds between maintenance passes, which return timed-out jobs to the queue (default:
   * half of `timeoutMs`, between 1 and 60).
   */
  maintenanceIntervalSeconds?: number;
}

/** Durable queue on pg-boss. Open it with `PgBossJobQueue.open`. */
export class PgBossJobQueue extends PollingJobQueue {
  /** Schema of the pg-boss tables. */
  readonly schema: string;

  private constructor(backend: PgBossBackend, options: DurableJobQueueOptions) {
    super(backend, options);
    this.schema = backend.schema;
  }

  /** Connects, installs or migrates the pg-boss schema when needed, and returns the queue. */
  static async open(options: PgBossJobQueueOptions): Promise<PgBossJobQueue> {
    const {
      connectionString,
      pool,
      schema = 'pgboss',
      poolSize,
      maintenanceIntervalSeconds,
      ...rest
    } = options;
    if ((connectionString === undefined) === (pool === undefined)) {
      throw new Error('PgBossJobQueue.open needs exactly one of connectionString and pool.');
    }
    const { timeoutMs } = loadJobQueueConfig(rest);
    const boss = new PgBoss({
      ...(pool !== undefined
        ? { db: { executeSql: (text: string, values: unknown[]) => pool.query(text, values) } }
        : { connectionString, max: poolSize ?? 4, application_name: 'machine-routes-jobs' }),
      schema,
      schedule: false,
      supervise: true,
      maintenanceIntervalSeconds:
        maintenanceIntervalSeconds ?? Math.min(60, Math.max(1, Math.ceil(timeoutMs / 2000))),
    });
    // Without a listener an 'error' event would throw and end the process.
    boss.on('error', (error) => rest.onError?.(error, null));
    try {
      await boss.start();
      await ensureActiveJobsIndex(boss.getDb(), schema);
    } catch (error) {
      await boss.stop({ graceful: false }).catch(() => {});
      throw error;
    }
    const database = pool ?? connectionString!;
    const { pollIntervalMs } = loadJobQueueConfig(rest);
    return new PgBossJobQueue(
      new PgBossBackend(boss, schema, database, Math.max(pollIntervalMs, RECLAIM_MIN_INTERVAL_MS)),
      rest,
    );
  }
}

/** Least time between two reclaims of a dead worker's jobs by one worker, in ms. */
const RECLAIM_MIN_INTERVAL_MS = 1000;

/** Tries of pg-boss's createQueue before a deadlock or unique violation is thrown (waits of at most 3.55 s in all). */
const CREATE_QUEUE_TRIES = 8;

/** `JobBackend` on pg-boss. */
class PgBossBackend implements JobBackend {
  readonly schema: string;
  // One loop claiming in turn took 1.5x plain pg-boss's time per job (bench/scale/jobs.ts),
  // whose workers each fetch on their own.
  readonly concurrentClaims = true;
  readonly #boss: PgBoss;
  readonly #queues = new Map<string, Promise<void>>();
  /** The pool shared with a store, or the connection string pg-boss connected with. */
  readonly #database: pg.Pool | string;
  /** This process's holder connection: the backend its claims name. */
  readonly #holder: HolderConnection;
  readonly #reclaimIntervalMs: number;
  #reclaimedAt = 0;
  #nextName = 0;

  constructor(boss: PgBoss, schema: string, database: pg.Pool | string, reclaimIntervalMs: number) {
    this.#boss = boss;
    this.schema = schema;
    this.#database = database;
    this.#holder = holderConnection(connectionStringOf(database));
    this.#reclaimIntervalMs = reclaimIntervalMs;
  }

  /**
   * Jobs go into the commit of a `PostgresStore` on the same database: pg-boss's `send` runs its
   * INSERT through the store's transaction client (`db` option), so the job commits, or rolls
   * back, with the step.
   */
  outboxFor(store: unknown): OutboxWriter | null {
    if (!(store instanceof PostgresStore) || !sameDatabase(store.pool, this.#database)) return null;
    return async (transaction, jobs) => {
      if (transaction.kind !== 'postgres')
        throw new Error('pg-boss writes jobs into PostgreSQL transactions only.');
      const db = {
        executeSql: (text: string, values: unknown[]) => transaction.client.query(text, values),
      };
      // Every queue must exist before this transaction inserts its first job. Creating a queue
      // is DDL on pg-boss's partitioned job table: it waits for every open transaction that
      // inserted a job, so a transaction awaiting it after its own insert would wait on itself
      // (a deadlock PostgreSQL cannot see, since one edge is this await).
      await Promise.all(
        [...new Set(jobs.map((job) => job.name))].map((name) => this.prepare(name)),
      );
      for (const job of jobs) {
        const id = randomUUID();
        await this.#boss.send(job.name, jobData(job), { ...sendOptions(job, id), db });
      }
    };
  }

  prepare(name: string): Promise<void> {
    let created = this.#queues.get(name);
    if (created === undefined) {
      created = this.#createQueue(name);
      // A failed creation is tried again next time rather than cached.
      created.catch(() => this.#queues.delete(name));
      this.#queues.set(name, created);
    }
    return created;
  }

  // Processes starting together create the same queues at once; pg-boss 10's createQueue then
  // fails with a deadlock or a unique violation although one of them succeeded. Its partition DDL
  // also deadlocks with claims and inserts on the job table running at the same moment. Trying
  // again finds the queue made or the table free: five tries 25-100 ms apart were not enough on a
  // loaded host (a clean-clone CI run lost a test to the fifth deadlock), so the waits double from
  // 50 ms to a 1 s cap, with jitter so that colliding processes do not collide again in step.
  async #createQueue(name: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#boss.createQueue(name, { name, policy: 'short' });
        return;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (attempt >= CREATE_QUEUE_TRIES || (code !== '40P01' && code !== '23505')) throw error;
        const wait = Math.min(1000, 25 * 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * (wait / 2)));
      }
    }
  }

  async insert(job: NewJob): Promise<void> {
    await this.prepare(job.name);
    const id = randomUUID();
    await this.#boss.send(job.name, jobData(job), sendOptions(job, id));
  }

  async claim(names: readonly string[], limit: number): Promise<ClaimedJob[]> {
    if (Date.now() - this.#reclaimedAt >= this.#reclaimIntervalMs) {
      this.#reclaimedAt = Date.now();
      await this.#reclaimAbandoned(names);
    }
    const holder = await this.#holder.current();
    const claimed: ClaimedJob[] = [];
    // Start with a different name each time so one busy name does not starve the others.
    const start = this.#nextName++ % names.length;
    for (let index = 0; index < names.length && claimed.length < limit; index++) {
      const name = names[(start + index) % names.length]!;
      const jobs = await fetchJobs(
        this.#boss.getDb(),
        this.schema,
        name,
        limit - claimed.length,
        holder,
      );
      for (const job of jobs) {
        claimed.push({
          token: job.id,
          maxAttempts: job.retry_limit + 1,
          backoffMs: job.retry_delay * 1000,
          info: {
            id: job.id,
            name,
            payload: JSON.parse(job.data.json) as Json,
            runAt: job.start_after,
            key: job.data.key,
            attempt: job.retry_count + 1,
          },
        });
      }
    }
    return claimed;
  }

  /**
   * Active jobs of `names` whose worker's backend is gone go back to the queue at once, or fail
   * when that was their last attempt: a dead worker's jobs run again within a second or so
   * instead of at pg-boss's maintenance pass after `expireInSeconds`.
   */
  async #reclaimAbandoned(names: readonly string[]): Promise<void> {
    for (const row of await returnAbandoned(this.#boss.getDb(), this.schema, names)) {
      await this.#boss.fail(row.name, row.id, {
        message:
          'The attempt did not finish: its worker stopped (its process died or closed its queue).',
      });
    }
  }

  async complete(job: ClaimedJob): Promise<void> {
    await this.#boss.complete(job.info.name, job.info.id);
  }

  async release(job: ClaimedJob): Promise<void> {
    if (!(await retryNow(this.#boss.getDb(), this.schema, job.info.name, job.info.id)))
      await this.#boss.fail(job.info.name, job.info.id, {
        message:
          'The attempt did not finish: its worker stopped at shutdown before it did (MACHINE_SHUTDOWN_TIMEOUT).',
      });
  }

  async fail(job: ClaimedJob, error: string): Promise<void> {
    await this.#boss.fail(job.info.name, job.info.id, { message: error });
  }

  count(names: readonly string[], scope: PendingScope): Promise<number> {
    return countJobs(this.#boss.getDb(), this.schema, names, scope);
  }

  failed(name?: string): Promise<FailedJob[]> {
    return failedJobs(this.#boss.getDb(), this.schema, name);
  }

  // pg-boss's own retry: `failed` -> `retry` with one more attempt (retry_limit + 1). A job
  // already moved to the archive is not retried (it is answered false).
  async retryFailed(name: string, id: string): Promise<boolean> {
    // Typed `void`, but pg-boss 10 answers its command response ({ requested, affected }).
    const result = (await this.#boss.retry(name, id)) as unknown as { affected?: number } | void;
    return (result?.affected ?? 0) === 1;
  }

  async close(): Promise<void> {
    // Not graceful: PollingJobQueue has already waited for (or abandoned) its handlers, and
    // pg-boss's own workers are unused, so there is nothing left for pg-boss to wait for.
    await this.#boss.stop({ graceful: false });
    await this.#holder.release();
  }
}

function jobData(job: NewJob): PgJobData {
  return { json: JSON.stringify(job.payload), key: job.key };
}

function sendOptions(job: NewJob, id: string): PgBoss.SendOptions {
  return {
    id,
    singletonKey: job.key !== null ? `key:${job.key}` : `id:${id}`,
    ...(job.runAt !== null ? { startAfter: job.runAt } : {}),
    retryLimit: job.maxAttempts - 1,
    retryDelay: Math.ceil(job.backoffMs / 1000),
    retryBackoff: job.backoffMs > 0,
    expireInSeconds: Math.max(1, Math.ceil(job.timeoutMs / 1000)),
  };
}

/** The connection string of a pool, or the string itself. */
function connectionStringOf(database: pg.Pool | string): string {
  if (typeof database === 'string') return database;
  const options = (database as pg.Pool & { options: { connectionString?: string } }).options;
  if (options.connectionString === undefined)
    throw new Error('PgBossJobQueue.open needs a pool made from a connection string.');
  return options.connectionString;
}

/** The store's pool itself, or a pool connecting to the same server and database. */
function sameDatabase(storePool: pg.Pool, database: pg.Pool | string): boolean {
  if (storePool === database) return true;
  const storeUrl = (storePool as pg.Pool & { options: { connectionString?: string } }).options
    .connectionString;
  if (typeof database !== 'string' || storeUrl === undefined) return false;
  const key = (url: string) => {
    const parsed = new URL(url);
    return `${parsed.username}@${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  };
  return key(storeUrl) === key(database);
}
