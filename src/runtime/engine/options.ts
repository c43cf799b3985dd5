/**
 * The options of a runtime: `new MachineRuntime(options)` (a store the caller opened) and
 * `MachineRuntime.open(options)` (the composition root, engine/open-runtime.ts, opens the store
 * and the queue from the settings).
 */
import type { Clock } from '../clock.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { TimerRegistration } from '../definition/timer-registration.js';
import type { JobQueue } from '../jobs/job-queue.js';
import type { OpenJobQueueOptions } from '../jobs/open-job-queue.js';
import type { DurableJobQueue } from '../jobs/types.js';
import type { CommitFeed } from '../persistence/commit-feed.js';
import type { Store } from '../persistence/store.js';
import type { Logger } from '../logger.js';
import type { MachineRuntimeConfig } from './config.js';
import type { MachineEngine, SendRetry } from './context.js';
import type { ParallelDispatchSettings } from './parallel-dispatch-config.js';

/** Options of `new MachineRuntime`. */
export interface MachineRuntimeOptions {
  store: Store;
  /**
   * Job queue of the asynchronous parts of delegation and messaging: child machines with
   * `queue`, their completion and `@timeout`, `dispatchTo` / `dispatchToParent`, and
   * synchronous sends retried after contention. Default (made on first use): an in-process
   * `InMemoryJobQueue` running in the background, which does not survive the process.
   */
  jobs?: JobQueue;
  /**
   * Machines this runtime may have to run before it has seen them: the parents and children
   * named in jobs (a worker process), children referenced by id (`machine: 'payment'`), targets
   * of `sendTo`. Definitions passed to `create`/`send`, and children referenced by definition,
   * are known automatically.
   */
  machines?: readonly MachineDefinition[];
  /** Async sends: tries (25), non-retryable failures tolerated (3), delay between tries (1000 ms). */
  sendRetry?: Partial<SendRetry>;
  /** Failures of deferred work nobody awaits (a send given up, ...). Default: `logger`. */
  onDeferredError?: (error: unknown, context: string) => void;
  /**
   * The application's logger (pino-style: Fastify's `app.log`), for what nobody awaits: failed
   * deferred work, jobs and timer sweeps. Default: JSON lines on stderr (`stderrLogger`).
   */
  logger?: Logger;
  /**
   * How often a running job actor checks that its state was not left in another process, in ms
   * (default 1000). Left in this process, its signal fires at once.
   */
  jobAbortPollMs?: number;
  /**
   * Depth limit of machines without their own `max_transition_depth` (default 100): how many
   * internal steps (`@always`, raised and `@done` events) one event may trigger.
   */
  maxTransitionDepth?: number;
  /** Seconds a lock lives before it may be taken over (default 60). */
  lockTtl?: number;
  /** Seconds `withLock` waits for a busy lock by default (default 30). */
  lockTimeout?: number;
  /**
   * Attempts at a timer fire whose behavior throws (default 3): after the last, the fire is
   * given up with a `...transition.<state>.<EVENT>.fail` record (docs/timers.md).
   */
  timerTries?: number;
  /** Seconds before a failed timer fire's first retry, doubled at each further one (default 1). */
  timerBackoff?: number;
  /** Clock for history times and state entry times (tests). */
  now?: () => Date;
  engine?: MachineEngine;
  /**
   * Parallel dispatch (docs/parallel-dispatch.md): settings given in code win over the
   * `MACHINE_PARALLEL_DISPATCH_*` variables of `process.env`, read when the runtime is made (a
   * malformed value throws `InvalidSettingsException` here, at startup).
   */
  parallelDispatch?: Partial<ParallelDispatchSettings>;
  /**
   * Scenarios (`MACHINE_SCENARIOS_ENABLED`, default false): `send` plays the requested or kept
   * scenario and keeps continuations in `machine_current_states` (docs/scenarios.md).
   */
  scenarios?: boolean;
  /**
   * A span per guard, action, calculator and listener call (`MACHINE_TRACE_BEHAVIORS`, default
   * false; docs/operating.md).
   */
  traceBehaviors?: boolean;
  /**
   * Every step's transition and commit in spans of their own (`MACHINE_TRACE_STEPS`, default
   * false: the first step under a request, job or timer span is recorded on that span;
   * docs/operating.md).
   */
  traceSteps?: boolean;
  /**
   * Where commits are announced for live state (server-sent events, `waitFor` reads). Default:
   * NOTIFY/LISTEN on PostgreSQL, in-process on the other stores.
   */
  commitFeed?: CommitFeed;
  /** Close `store` with the runtime (default true); false leaves it open, the caller's. */
  closeStore?: boolean;
}

/** Options of `MachineRuntime.open`. */
export interface OpenRuntimeOptions extends Partial<MachineRuntimeConfig> {
  /** Run pending migrations on open (default: SQLite yes, PostgreSQL no; see `openStore`). */
  migrate?: boolean;
  /**
   * An open store to run on instead of opening `databaseUrl`'s (`startWorker({ store })`); it
   * stays open when the runtime closes.
   */
  store?: Store;
  /**
   * Registers handlers of your own on the default queue, after the engine's and before its
   * worker starts (`startWorker`'s `handlers` and `register`).
   */
  register?: (queue: DurableJobQueue) => void | Promise<void>;
  /**
   * Whether the default queue runs the engine's own jobs (child starts, completions, job actors,
   * sends, region jobs; default true). false: a worker of `register`'s jobs only
   * (`startWorker` without `machines`), which leaves the engine's jobs to other processes and
   * needs no migrated machine tables; the runtime still enqueues its own jobs.
   */
  machineJobs?: boolean;
  /**
   * Environment variables to read settings from, over `process.env`'s: a variable set here wins,
   * one left out (or blank) is read from `process.env`; options given in code win over both.
   */
  env?: Record<string, string | undefined>;
  /**
   * See `MachineRuntimeOptions.jobs`. Default: the durable queue of the store
   * (`openJobQueue(store)`: the embedded `machine_jobs` table on SQLite, pg-boss on
   * PostgreSQL), whose jobs commit with the steps causing them; the runtime owns it and closes
   * it with `close()`.
   */
  jobs?: JobQueue;
  /**
   * Run the default queue's jobs, the timer sweep and the expired-row sweep in this process
   * (default true). Set false when separate `machine-routes worker` processes run them: this
   * process then only enqueues. `'timers'`: the timer sweep alone (`machine-routes timers`).
   */
  worker?: boolean | 'timers';
  /** Settings of the default queue (concurrency, attempts, ...; see `loadJobQueueConfig`). */
  jobQueue?: OpenJobQueueOptions;
  /** See `MachineRuntimeOptions.machines`. */
  machines?: readonly MachineDefinition[];
  /** See `MachineRuntimeOptions.jobAbortPollMs`. */
  jobAbortPollMs?: number;
  /**
   * Machines whose timed transitions fire (spec 9.3.0: registered explicitly; the config's
   * `timers`). With `worker` (the default), this process sweeps them every `timerIntervalMs`.
   */
  timers?: readonly TimerRegistration[];
  /** Pause between two timer sweeps in ms (default 500). */
  timerIntervalMs?: number;
  /**
   * With `worker` (the default), this process deletes expired lock rows and Idempotency-Key
   * records past their `ttl` (`engine/lock-sweeper.ts`) every this many ms (default 60 000), or
   * never with `false` (another process sweeps, e.g. `machine-routes worker`).
   */
  lockSweepIntervalMs?: number | false;
  /**
   * With `worker` (the default) and `historyRetentionDays` above 0, this process deletes (with
   * `historyRetentionArchive`: moves to `machine_events_archive`) the history of instances
   * finished longer ago than that (`engine/history-retention.ts`) every
   * this many ms (default 3 600 000), or never with `false` (another process sweeps).
   */
  retentionSweepIntervalMs?: number | false;
  /** Time source of history, state entry times and timers (default: the system clock). */
  clock?: Clock;
  /** Parallel dispatch settings given in code (they win over `env`'s `MACHINE_PARALLEL_DISPATCH_*`). */
  parallelDispatch?: Partial<ParallelDispatchSettings>;
  /** See `MachineRuntimeOptions.logger`: also receives failed job attempts and timer sweeps. */
  logger?: Logger;
  /**
   * Whether the queue's poll and the timer sweep keep the process alive (default false: a
   * server's sockets decide when it ends). `machine-routes worker` and `timers` set true.
   */
  keepAlive?: boolean;
}
