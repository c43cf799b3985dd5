/**
 * The effectful side of job actors (`job` on a delegating state): the `job.run` handler that
 * runs the function, and the parent step that applies its outcome (`job.outcome` when the parent
 * was busy). The rows and jobs a `startJob` effect writes with its step's commit are planned by
 * `planCommit`; the engine's job handler table (job-handlers.ts) routes both job kinds here.
 *
 * Guarantees:
 * - Durable start: the `machine_children` row (`pending`; `childMachineId` = the job's name, no
 *   child instance) and the `machine-routes.job.run` job are written inside the step's commit
 *   when the queue has an outbox (SQLite embedded queue, pg-boss), so entering the state and
 *   requesting the job commit together.
 * - Retries: a rejection is a failed attempt of the queue's job (its `maxAttempts` and backoff);
 *   the last failed attempt routes `@fail`. Input and output schema failures route `@fail` at
 *   once (retrying would not change them; the call itself may have happened).
 * - Abort: leaving the state marks the row `cancelled` in that commit; the running function's
 *   signal fires at once in this process, and within `abortPollMs` in another process (the
 *   runner re-reads its row). Whatever it returns afterwards is ignored.
 * - Exactly once from the machine's view: the outcome is applied under the parent's lock, after
 *   re-reading the row, in one commit that also moves the row to `completed` / `failed` (and
 *   fences on the parent's sequence). A second run of the same job (a worker died after the
 *   call, before its attempt was recorded) finds the row terminal and changes nothing. The
 *   function itself is at-least-once: it may run again after a crash, with the same
 *   `idempotencyKey` (the job id).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { JobInvocation } from '../definition/invocation.js';
import { ACTIVE_CHILD_STATUSES, type ChildRowChange } from '../interpreter/child-rows.js';
import {
  completeJob,
  resolveJobOutcome,
  type ReportedJobOutcome,
} from '../interpreter/complete-child.js';
import type { JobSlot } from '../interpreter/effects.js';
import type { JobOutcome } from '../interpreter/invoke-child.js';
import type { JobPayloads, PlannedJob } from '../interpreter/job-payloads.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from '../interpreter/types.js';
import type { JobInfo } from '../jobs/job-queue.js';
import type { ChildStore } from '../persistence/child-rows.js';

/** The payload of a `job.run` job: the start effect without its kind. */
type RunPayload = JobPayloads['job.run'];
/** The payload of a `job.outcome` job. */
type OutcomePayload = JobPayloads['job.outcome'];

/** What the runner needs from the shell that drives it. */
export interface JobActorHost {
  readonly store: ChildStore;
  now(): Date;
  /** A definition the runtime knows, by id. */
  definition(machineId: string): MachineDefinition | undefined;
  /** Options of the steps it computes (clock, machine resolver, depth limit). */
  macrostepOptions(): Pick<MacrostepOptions, 'now' | 'machines' | 'maxTransitionDepth'>;
  /**
   * Computes and commits a step of the parent under its lock (see `DelegationShell`); `compute`
   * runs holding the lock, `first` are row changes of the same commit. `false` when the lock
   * could not be had within the lock timeout.
   */
  applyToParent(step: {
    definition: MachineDefinition;
    parentId: string;
    context: string;
    compute: (parent: MachineSnapshot) => Promise<MacrostepResult | null>;
    children: ChildRowChange[];
  }): Promise<boolean>;
  enqueue(job: PlannedJob): Promise<void>;
  /** Delay before an outcome whose parent was busy is tried again, in ms. */
  readonly retryDelayMs: number;
  onError(error: unknown, context: string): void;
}

/** A job running in this process. */
interface RunningJob {
  readonly controller: AbortController;
  readonly parentId: string;
  readonly parentStateId: string;
}

/** Runs job actors for one runtime. */
export class JobActorRunner {
  readonly #host: JobActorHost;
  readonly #abortPollMs: number;
  readonly #running = new Map<string, RunningJob>();

  /** `abortPollMs`: how often a running job re-reads its row to notice it was left elsewhere. */
  constructor(host: JobActorHost, options: { abortPollMs?: number | undefined } = {}) {
    this.#host = host;
    this.#abortPollMs = options.abortPollMs ?? 1000;
  }

  /**
   * Fires the signal of jobs running here that were cancelled (`cancelJob` committed) or settled
   * otherwise (`@timeout`): by job id, or by the state that ran them. By state, each job's row is
   * read first: a step that left and re-entered the same state cancelled the old job's row only,
   * and the new job (same state) must keep running.
   */
  abort(target: { jobId: string } | Pick<JobSlot, 'parentId' | 'parentStateId'>): void {
    for (const [jobId, running] of this.#running) {
      if ('jobId' in target) {
        if (jobId === target.jobId) running.controller.abort(new JobAbortedError(jobId));
      } else if (
        running.parentId === target.parentId &&
        running.parentStateId === target.parentStateId
      ) {
        void this.#abortIfSettled(jobId, running.controller);
      }
    }
  }

  async #abortIfSettled(jobId: string, controller: AbortController): Promise<void> {
    try {
      const [row] = await this.#host.store.findChildren({ id: jobId });
      if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status))
        controller.abort(new JobAbortedError(jobId));
    } catch (error) {
      this.#host.onError(error, `checking job ${jobId}`);
    }
  }

  /** The `job.run` handler. */
  async run(payload: RunPayload, info: JobInfo): Promise<void> {
    const { store } = this.#host;
    const [row] = await store.findChildren({ id: payload.jobId });
    if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return;
    const definition = this.#host.definition(payload.parentMachineId);
    const invocation = definition?.idMap.get(payload.parentStateId)?.invocation;
    if (definition === undefined || invocation?.kind !== 'job') {
      // Thrown, not dropped: a worker that knows the machine may take the retry.
      throw new Error(
        `machine-routes: job '${payload.job}' of machine '${payload.parentMachineId}' (state '${payload.parentStateId}') is not known to this runtime. Pass the machine in MachineRuntime's 'machines' option.`,
      );
    }
    if (row.status === 'pending') {
      await store.updateChildren([
        {
          kind: 'setStatus',
          childId: payload.jobId,
          from: ['pending'],
          status: 'running',
          at: this.#host.now().toISOString(),
        },
      ]);
    }

    const reported = await this.#call(invocation, payload, info);
    if (reported === null) return;
    const outcome = resolveJobOutcome(invocation, reported);
    if (payload.fireAndForget) {
      await this.#settleRow(payload.jobId, outcome);
      if (outcome.outcome === 'fail')
        this.#host.onError(
          new Error(outcome.error.message),
          `fire-and-forget job '${payload.job}' (${payload.jobId}) failed`,
        );
      return;
    }
    await this.#applyOrDefer(definition, { jobId: payload.jobId, outcome });
  }

  /** The `job.outcome` handler. */
  async applyLater(payload: OutcomePayload): Promise<void> {
    const [row] = await this.#host.store.findChildren({ id: payload.jobId });
    if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return;
    const definition = this.#host.definition(row.parentMachineId);
    if (definition === undefined) {
      throw new Error(
        `machine-routes: machine '${row.parentMachineId}' is not known to this runtime. Pass it in MachineRuntime's 'machines' option.`,
      );
    }
    await this.#applyOrDefer(definition, payload);
  }

  /**
   * Runs the function once. `null` when the job was aborted (its result is ignored); rethrows a
   * failure while attempts remain, so the queue retries it with its backoff.
   */
  async #call(
    invocation: JobInvocation,
    payload: RunPayload,
    info: JobInfo,
  ): Promise<ReportedJobOutcome | null> {
    const { job } = invocation;
    const { jobId } = payload;
    let input: unknown = payload.input;
    if (job.input !== null) {
      const parsed = job.input.safeParse(input);
      if (!parsed.success) {
        const issues = parsed.error.issues
          .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
          .join('; ');
        return {
          outcome: 'fail',
          jobId,
          error: {
            name: 'MachineValidationException',
            code: 'MR_VALIDATION_FAILED',
            message: `Job '${invocation.name}' got an input that does not match its input schema: ${issues}.`,
          },
        };
      }
      input = parsed.data;
    }

    const controller = new AbortController();
    this.#running.set(jobId, {
      controller,
      parentId: payload.parentId,
      parentStateId: payload.parentStateId,
    });
    const watch = payload.fireAndForget ? null : this.#watch(jobId, controller);
    try {
      const output = await job.run(input, {
        signal: controller.signal,
        idempotencyKey: jobId,
        instance: { machineId: payload.parentMachineId, id: payload.parentId },
        actor: payload.actor,
        attempt: info.attempt,
      });
      return controller.signal.aborted ? null : { outcome: 'done', jobId, output };
    } catch (error) {
      if (controller.signal.aborted) return null;
      if (info.attempt < (info.maxAttempts ?? 1)) throw error;
      return { outcome: 'fail', jobId, error: toError(error) };
    } finally {
      if (watch !== null) clearInterval(watch);
      this.#running.delete(jobId);
    }
  }

  /** Aborts the run when its row stops being active (the state was left in another process). */
  #watch(jobId: string, controller: AbortController): NodeJS.Timeout {
    const timer = setInterval(
      () => void this.#abortIfSettled(jobId, controller),
      this.#abortPollMs,
    );
    timer.unref();
    return timer;
  }

  async #applyOrDefer(definition: MachineDefinition, payload: OutcomePayload): Promise<void> {
    if (await this.#apply(definition, payload)) return;
    // The parent stayed locked past the lock timeout: apply later rather than run the job again.
    await this.#host.enqueue({
      kind: 'job.outcome',
      payload,
      runAt: new Date(this.#host.now().getTime() + this.#host.retryDelayMs),
    });
  }

  /**
   * Applies `outcome` in the parent once: under the parent's lock the row is read again, and
   * only an active row lets the step commit, moving the row to its terminal status with it.
   */
  #apply(definition: MachineDefinition, { jobId, outcome }: OutcomePayload): Promise<boolean> {
    const { store } = this.#host;
    return store.findChildren({ id: jobId }).then(([row]) => {
      if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return true;
      return this.#host.applyToParent({
        definition,
        parentId: row.parentRootEventId,
        context: 'job.outcome',
        compute: async (parent) => {
          const [current] = await store.findChildren({ id: jobId });
          if (current === undefined || !ACTIVE_CHILD_STATUSES.includes(current.status)) return null;
          return completeJob(
            definition,
            parent,
            row.parentStateId,
            outcome,
            this.#host.macrostepOptions(),
          );
        },
        children: [this.#terminal(jobId, outcome)],
      });
    });
  }

  async #settleRow(jobId: string, outcome: JobOutcome): Promise<void> {
    await this.#host.store.updateChildren([this.#terminal(jobId, outcome)]);
  }

  #terminal(jobId: string, outcome: JobOutcome): ChildRowChange {
    return {
      kind: 'setStatus',
      childId: jobId,
      from: ACTIVE_CHILD_STATUSES,
      status:
        outcome.outcome === 'done'
          ? 'completed'
          : outcome.outcome === 'fail'
            ? 'failed'
            : 'timed_out',
      at: this.#host.now().toISOString(),
    };
  }
}

/** The reason a job's signal carries when its state was left. */
export class JobAbortedError extends Error {
  override readonly name = 'AbortError';

  constructor(jobId: string) {
    super(`Job ${jobId} was aborted: its state was left before it finished.`);
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
