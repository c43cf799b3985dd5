/**
 * The effectful side of parallel dispatch (docs/parallel-dispatch.md): the `parallel.region`
 * and `parallel.timeout` job handlers, with the region jobs' own settings
 * (`MACHINE_PARALLEL_DISPATCH_*`: queue, lock timeout and TTL, attempts, backoff, attempt
 * timeout). The rules are pure, in `interpreter/plan-region-dispatch.ts`; the jobs are written
 * with the entering step's commit by `planCommit` (transactional outbox).
 *
 * A region job runs its entry actions on the last committed snapshot without the lock (so the
 * regions of one parallel state run at the same time in different worker processes), then
 * takes the instance lock (waiting up to `lock_timeout`, living `lock_ttl`), reads the history
 * since the parallel state was entered, and merges through `commitStep` fenced on the snapshot
 * it read. Exactly once: an attempt that died before its commit left nothing and runs again; an
 * attempt that committed left a `region.merged` record, which a later run of the same job finds
 * (it then commits nothing). While a region job holds the lock, the instance answers like any
 * locked one (HTTP 423, GET 200 with `isProcessing: true`).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { MachineAlreadyRunningException } from '../errors.js';
import type { JobKind, JobPayloads, PlannedJob } from '../interpreter/job-payloads.js';
import {
  mergeRegion,
  regionStatus,
  runRegionEntry,
  timeoutParallel,
} from '../interpreter/plan-region-dispatch.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from '../interpreter/types.js';
import type { JobInfo } from '../jobs/job-queue.js';
import type { DurableJobRequest } from '../jobs/types.js';
import { LockManager, type LockHandle } from '../persistence/locks.js';
import { SequenceConflictError, type Store } from '../persistence/store.js';
import type { PreparedCommit } from './commit-step.js';
import type { CommitOptions } from './engine-services.js';
import type { CommitInput } from '../interpreter/plan-commit.js';
import { unknownMachine } from './machine-registry.js';
import type { ParallelDispatchSettings } from './parallel-dispatch-config.js';

/** What the region jobs need from the runtime. */
export interface RegionJobHost {
  readonly store: Store;
  now(): Date;
  definition(machineId: string): MachineDefinition | undefined;
  macrostepOptions(): Pick<MacrostepOptions, 'now' | 'machines' | 'maxTransitionDepth'>;
  write(input: CommitInput, options?: CommitOptions): Promise<PreparedCommit>;
  finish(prepared: PreparedCommit): Promise<void>;
}

/** What a region job did (tests and logs). */
export type RegionJobOutcome = 'merged' | 'already-merged' | 'stale' | 'unknown-instance';

const REGION_JOB = 'machine-routes.parallel.region';
const TIMEOUT_JOB = 'machine-routes.parallel.timeout';

/** The region jobs of one runtime, with their settings. */
export class RegionJobs {
  readonly settings: Readonly<ParallelDispatchSettings>;
  readonly #host: RegionJobHost;
  readonly #locks: LockManager;

  constructor(host: RegionJobHost, settings: Readonly<ParallelDispatchSettings>) {
    this.#host = host;
    this.settings = settings;
    this.#locks = new LockManager(host.store, settings.lockTtl * 1000);
  }

  /**
   * The queue name of a parallel dispatch job kind: on `MACHINE_PARALLEL_DISPATCH_QUEUE`
   * (`machine-routes.parallel.region@<queue>`) when set; `null` for other kinds.
   */
  nameOf(kind: JobKind): string | null {
    const base =
      kind === 'parallel.region' ? REGION_JOB : kind === 'parallel.timeout' ? TIMEOUT_JOB : null;
    if (base === null) return null;
    return this.settings.queue === null ? base : `${base}@${this.settings.queue}`;
  }

  /**
   * The queue request of a parallel dispatch job, with the region jobs' attempts, backoff and
   * attempt timeout; `null` for other kinds (they keep the queue's `MACHINE_JOB_*` defaults).
   */
  request(job: PlannedJob, payload: DurableJobRequest['payload']): DurableJobRequest | null {
    const name = this.nameOf(job.kind);
    if (name === null) return null;
    return {
      name,
      payload,
      ...(job.key === undefined ? {} : { key: job.key }),
      ...(job.runAt === undefined ? {} : { runAt: job.runAt }),
      maxAttempts: this.settings.jobTries,
      backoffMs: this.settings.jobBackoff * 1000,
      timeoutMs: this.settings.jobTimeout * 1000,
    };
  }

  /** The `parallel.region` job: entry actions without the lock, then the merge under it. */
  async run(work: JobPayloads['parallel.region'], _info?: JobInfo): Promise<RegionJobOutcome> {
    const definition = this.#definition(work.machineId);
    const base = await this.#host.store.load(work.instanceId);
    if (base === null) return 'unknown-instance';
    const early = regionStatus(definition, base, await this.#afterEntry(base.id, work), work);
    if (early !== 'pending') return early === 'merged' ? 'already-merged' : 'stale';
    const options = this.#host.macrostepOptions();
    const entry = runRegionEntry(definition, base, work, options);
    return this.#underLock(work.instanceId, `parallel-region ${work.regionId}`, async (fresh) => {
      const afterEntry = await this.#afterEntry(fresh.id, work);
      const status = regionStatus(definition, fresh, afterEntry, work);
      if (status !== 'pending')
        return { outcome: status === 'merged' ? 'already-merged' : 'stale' };
      const result = mergeRegion(definition, fresh, afterEntry, work, entry, {
        ...options,
        parallelDispatch: this.stepOption(),
      });
      return { outcome: 'merged', result };
    });
  }

  /** The `parallel.timeout` job (`region_timeout`). */
  async timeout(watch: JobPayloads['parallel.timeout']): Promise<void> {
    const definition = this.#definition(watch.machineId);
    if ((await this.#host.store.load(watch.instanceId)) === null) return;
    await this.#underLock(
      watch.instanceId,
      `parallel-timeout ${watch.parallelStateId}`,
      async (fresh) => {
        const afterEntry = await this.#host.store.history(fresh.id, {
          afterSequence: watch.enteredAt,
        });
        const result = timeoutParallel(definition, fresh, afterEntry, watch, {
          ...this.#host.macrostepOptions(),
          parallelDispatch: this.stepOption(),
        });
        return result === null ? { outcome: 'stale' } : { outcome: 'merged', result };
      },
    );
  }

  /** `MacrostepOptions.parallelDispatch` for this runtime's steps (`null` when off). */
  stepOption(): MacrostepOptions['parallelDispatch'] {
    if (!this.settings.enabled) return null;
    return {
      regionTimeoutSeconds: this.settings.regionTimeout > 0 ? this.settings.regionTimeout : null,
    };
  }

  #definition(machineId: string): MachineDefinition {
    const definition = this.#host.definition(machineId);
    if (definition === undefined) throw unknownMachine(machineId);
    return definition;
  }

  #afterEntry(id: string, work: { enteredAt: number }) {
    return this.#host.store.history(id, { afterSequence: work.enteredAt });
  }

  /**
   * Runs `compute` on the committed snapshot holding the instance lock and commits its step
   * (fenced on that snapshot; the commit releases the lock). A lock not had within
   * `lock_timeout`, or a commit fenced out, fails the attempt: the queue retries it.
   */
  async #underLock(
    id: string,
    context: string,
    compute: (
      fresh: MachineSnapshot,
    ) => Promise<{ outcome: RegionJobOutcome; result?: MacrostepResult }>,
  ): Promise<RegionJobOutcome> {
    const timeoutMs = this.settings.lockTimeout * 1000;
    const lock: LockHandle | null = await this.#locks.acquire(id, { timeoutMs, context });
    if (lock === null) {
      throw new MachineAlreadyRunningException(
        `Parallel dispatch: machine '${id}' stayed locked for ${this.settings.lockTimeout} s ` +
          `(MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT); the region job is retried.`,
        null,
        { key: id },
      );
    }
    let prepared: PreparedCommit | null = null;
    let outcome: RegionJobOutcome;
    try {
      const fresh = await this.#host.store.load(id);
      if (fresh === null) return 'unknown-instance';
      const step = await compute(fresh);
      outcome = step.outcome;
      if (step.result !== undefined) {
        try {
          prepared = await this.#host.write(
            { main: { result: step.result, from: fresh }, at: this.#host.now() },
            { releaseLockOwner: lock.ownerId },
          );
          lock.releasedByCommit();
        } catch (error) {
          if (error instanceof SequenceConflictError) {
            throw new Error(
              `Parallel dispatch: machine '${id}' moved on while its lock was held past ` +
                `MACHINE_PARALLEL_DISPATCH_LOCK_TTL (${this.settings.lockTtl} s); the job is retried.`,
              { cause: error },
            );
          }
          throw error;
        }
      }
    } finally {
      await lock.release().catch(() => false);
    }
    if (prepared !== null) await this.#host.finish(prepared);
    return outcome;
  }
}
