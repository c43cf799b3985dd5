/**
 * What the engine's parts (commit step, job handlers, forwarded sends) get from the runtime
 * that composes them. One object per runtime, made by `MachineRuntime`; no module state.
 */
import type { IdempotencyCompletion } from '../persistence/idempotency.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import type { JobPayloads, PlannedJob } from '../interpreter/job-payloads.js';
import type { CommitInput, CommitPlan } from '../interpreter/plan-commit.js';
import type { MacrostepOptions } from '../interpreter/types.js';
import type { JobInfo } from '../jobs/job-queue.js';
import type { Store, TimerFireClaim } from '../persistence/store.js';
import type { TransactionHook } from '../persistence/transaction.js';
import type { PreparedCommit } from './commit-step.js';
import type { JobActorRunner } from './job-actors.js';
import type { MachineRegistry } from './machine-registry.js';
import type { RegionJobs } from './region-jobs.js';

/** Options of one `commit` call. */
export interface CommitOptions {
  /** Lock owner whose row on the main instance the commit deletes (the caller's send lock). */
  releaseLockOwner?: string;
  /** A lock-free send's commit: fails when someone holds the instance's lock (`CommitRequest.lockFree`). */
  lockFree?: boolean;
  /** The timer fire this step delivers, claimed in the same transaction (`CommitRequest.timerFire`). */
  timerFire?: TimerFireClaim;
  /** Runs in the commit's transaction after the store's writes (a model record's binding). */
  inTransaction?: TransactionHook;
  /** The Idempotency-Key record the step answers, completed in the same transaction. */
  idempotency?: IdempotencyCompletion;
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

/** The runtime as the engine's parts see it. */
export interface EngineServices {
  readonly store: Store;
  readonly machines: MachineRegistry;
  readonly sendRetry: SendRetry;
  /**
   * Scenarios are on (`MACHINE_SCENARIOS_ENABLED`): a forwarded event honours the child's kept
   * scenario (9.7.0). Children started with a scenario keep it either way.
   */
  readonly scenariosEnabled: boolean;
  now(): Date;
  /** Options of every interpreter call (clock, machine resolver, depth limit). */
  macrostepOptions(): Pick<MacrostepOptions, 'now' | 'machines' | 'maxTransitionDepth'>;
  /** `commitStep` on this runtime's store, queue and listeners. */
  commit(input: CommitInput, options?: CommitOptions): Promise<CommitPlan>;
  /** `writeCommit`: the write alone; pass the result to `finish` once the lock is released. */
  write(input: CommitInput, options?: CommitOptions): Promise<PreparedCommit>;
  /** `finishCommit`: the follow-up work of a `write`. */
  finish(prepared: PreparedCommit): Promise<void>;
  /** Enqueues jobs outside a commit (retries, a completion after a failed start). */
  enqueue(jobs: readonly PlannedJob[]): Promise<void>;
  /** `MachineRuntime.send`: lock without waiting, one macrostep, commit. */
  send(definition: MachineDefinition, id: string, event: EventObject): Promise<unknown>;
  /** `MachineRuntime.withLock`: runs `fn` holding the instance lock, waiting up to `timeoutMs`. */
  withLock<T>(
    id: string,
    fn: () => Promise<T>,
    options: { timeoutMs?: number; context?: string },
  ): Promise<T>;
  /** Failures nobody awaits (a send given up, an unknown machine in a job). */
  onError(error: unknown, context: string): void;
  /** The job actors running in this process (abort on cancel or timeout). */
  readonly jobActors: JobActorRunner;
  /** Parallel dispatch's region jobs and their settings. */
  readonly regionJobs: RegionJobs;
}

/** Runs one job kind (`info`: the queue's view of the job: attempt, attempts in all). */
export type JobRunner<K extends keyof JobPayloads> = (
  engine: EngineServices,
  payload: JobPayloads[K],
  info: JobInfo,
) => Promise<void>;
