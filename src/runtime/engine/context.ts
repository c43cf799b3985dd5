/**
 * `EngineContext`: what every part of the engine works with, one object per runtime, built once
 * by `buildContext` (engine/build-context.ts). The send paths, the commit step, the locked step,
 * the job and timer handlers all take it as their first argument; none of them reaches back into
 * `MachineRuntime`.
 *
 * This module only declares the shape (and imports nothing of the engine that takes a
 * context), so that every part can name the context without an import cycle.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import type { IdempotencyCompletion } from '../persistence/idempotency.js';
import type { initialize } from '../interpreter/initialize.js';
import type { transition } from '../interpreter/transition.js';
import type { MacrostepOptions, MacrostepResult } from '../interpreter/types.js';
import type { JobOutbox, JobRequest } from '../jobs/job-queue.js';
import type { FailedJob } from '../jobs/types.js';
import type { CommitFeed } from '../persistence/commit-feed.js';
import type { LockManager } from '../persistence/locks.js';
import type { Store, TimerFireClaim } from '../persistence/store.js';
import type { TransactionHook } from '../persistence/transaction.js';
import type { InstanceResult } from '../persistence/types.js';
import type { Logger } from '../logger.js';
import type { CommitListeners } from './commit-events.js';
import type { RunningJobs } from './jobs/running-jobs.js';
import type { TransitionSpeeds } from './lock-free-sends.js';
import type { MachineRegistry } from './machine-registry.js';
import type { ParallelDispatchSettings } from './parallel-dispatch-config.js';

/** The interpreter functions the runtime drives (the real ones unless a test wraps them). */
export interface MachineEngine {
  initialize: typeof initialize;
  transition: typeof transition;
}

/** The runtime's interpreter: a `MachineEngine` with its steps timed and traced. */
export interface InstrumentedEngine extends MachineEngine {
  /**
   * A stateless send's start and event as one macrostep (`startAndTransition`), timed and traced
   * as the event's step; it returns `null` where the two steps must run. `null` itself when the
   * wrapped engine is not the interpreter's own (a test's), whose two functions must be called.
   */
  readonly startAndTransition:
    | ((
        definition: MachineDefinition,
        event: EventObject,
        options: MacrostepOptions,
      ) => MacrostepResult | null)
    | null;
}

/** Retries of asynchronous sends. */
export interface SendRetry {
  /** Tries in all (default 25). */
  tries: number;
  /** Non-retryable failures tolerated (default 3). */
  exceptions: number;
  /** Delay between tries in milliseconds (default 1000). */
  delayMs: number;
}

/** The engine's settings, resolved once (options over `env` over `process.env`). */
export interface EngineSettings {
  /** Lifetime of an instance lock, in ms (`MACHINE_LOCK_TTL`). */
  readonly lockTtlMs: number;
  /** How long `withLock` and the jobs' parent steps wait for a held lock, in ms (`MACHINE_LOCK_TIMEOUT`). */
  readonly lockTimeoutMs: number;
  /** Scenarios play (`MACHINE_SCENARIOS_ENABLED`). */
  readonly scenariosEnabled: boolean;
  /** Attempts at a timer fire whose behavior throws (`MACHINE_TIMER_TRIES`). */
  readonly timerTries: number;
  /** Wait before a failed timer fire's first retry, in ms, doubled each time (`MACHINE_TIMER_BACKOFF`). */
  readonly timerBackoffMs: number;
  /** Parallel dispatch (`MACHINE_PARALLEL_DISPATCH_*`). */
  readonly parallelDispatch: Readonly<ParallelDispatchSettings>;
  readonly sendRetry: Readonly<SendRetry>;
  /** Steps in spans of their own (`MACHINE_TRACE_STEPS`), not recorded on their request's span. */
  readonly traceSteps: boolean;
  /** How often a running job actor checks that its state was not left elsewhere, in ms. */
  readonly jobAbortPollMs: number;
}

/** Options of one commit. */
export interface CommitOptions {
  /** Lock owner whose row on the main instance the commit deletes. */
  releaseLockOwner?: string;
  /** A lock-free send's commit: fails when someone holds the instance's lock (`CommitRequest.lockFree`). */
  lockFree?: boolean;
  /** The timer fire this step delivers, claimed in the same transaction (`CommitRequest.timerFire`). */
  timerFire?: TimerFireClaim;
  /** Runs in the commit's transaction after the store's writes (a model record's binding). */
  inTransaction?: TransactionHook;
  /** The Idempotency-Key record the step answers, completed in the same transaction. */
  idempotency?: IdempotencyCompletion;
  /** The business key the created instance is bound to (`CommitRequest.businessKey`). */
  businessKey?: string;
}

/** Where the engine's jobs go (engine/jobs/job-dispatch.ts). */
export interface EngineJobs {
  /** The queue's transactional outbox for this store, or `null` (jobs enqueued after the commit). */
  readonly outbox: JobOutbox | null;
  /** Enqueues jobs, one after the other (each resolves once stored). */
  enqueue(jobs: readonly JobRequest[]): Promise<void>;
  /**
   * Jobs the queue keeps as failed (attempts used up), oldest first; none from a queue that
   * keeps no failed jobs (`InMemoryJobQueue`). For the operator's reads.
   */
  failedJobs(): Promise<FailedJob[]>;
  /** Puts a failed job back in the queue (an operator's retry); `false` when it is not failed. */
  retryFailed(job: Pick<FailedJob, 'id' | 'name'>): Promise<boolean>;
}

/** The options of stateless steps, made once: with history, without, and the event's step without. */
export interface StatelessSteps {
  readonly kept: MacrostepOptions;
  readonly light: MacrostepOptions;
  readonly lightEvent: MacrostepOptions;
}

/** Everything the engine's parts share; one per runtime. */
export interface EngineContext {
  readonly store: Store;
  /** The clock of history times, state entry times and job delays. */
  now(): Date;
  readonly interpreter: InstrumentedEngine;
  readonly registry: MachineRegistry;
  /** Options of every stored step (clock, machine resolver, depth limit, parallel dispatch). */
  readonly macrostepOptions: Pick<
    MacrostepOptions,
    'now' | 'machines' | 'maxTransitionDepth' | 'parallelDispatch' | 'traceBehaviors'
  >;
  readonly statelessSteps: StatelessSteps;
  /** The runtime's one lock manager; each acquire may name its own TTL. */
  readonly locks: LockManager;
  readonly settings: EngineSettings;
  /** Event types whose last transition was quick (lock-free sends). */
  readonly speeds: TransitionSpeeds;
  readonly listeners: CommitListeners;
  /** Where commits are announced (streams, waiting reads, lock waiters of other processes). */
  readonly feed: CommitFeed;
  readonly jobs: EngineJobs;
  /** The job actors running in this process (aborted when their state is left). */
  readonly runningJobs: RunningJobs;
  readonly logger: Logger;
  /** Failures nobody awaits (a send given up, an unknown machine in a job). */
  onError(error: unknown, context: string): void;
  /**
   * The send path (engine/send.ts), for the synchronous sends a commit's follow-up delivers: a
   * step's follow-up is another step, so the commit module reaches the send path through the
   * context rather than by importing it.
   */
  send(definition: MachineDefinition, id: string, event: EventObject): Promise<InstanceResult>;
}
