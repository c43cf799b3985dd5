/**
 * The job actors running in this process, so a commit that leaves their state (or a
 * `@timeout`) can fire their abort signal at once; in another process the runner notices
 * within its poll interval (engine/jobs/job-actors.ts).
 */
import type { JobSlot } from '../../interpreter/effects.js';
import { ACTIVE_CHILD_STATUSES } from '../../interpreter/child-rows.js';
import type { ChildStore } from '../../persistence/child-rows.js';

/** A job running in this process. */
interface RunningJob {
  readonly controller: AbortController;
  readonly parentId: string;
  readonly parentStateId: string;
}

/** The running job actors of one runtime. */
export class RunningJobs {
  readonly #store: Pick<ChildStore, 'findChildren'>;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #running = new Map<string, RunningJob>();

  constructor(
    store: Pick<ChildStore, 'findChildren'>,
    onError: (error: unknown, context: string) => void,
  ) {
    this.#store = store;
    this.#onError = onError;
  }

  /** Registers a running job; returns its signal's controller. */
  start(jobId: string, parentId: string, parentStateId: string): AbortController {
    const controller = new AbortController();
    this.#running.set(jobId, { controller, parentId, parentStateId });
    return controller;
  }

  /** The job ended (its outcome is applied or ignored). */
  end(jobId: string): void {
    this.#running.delete(jobId);
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
        void this.abortIfSettled(jobId, running.controller);
      }
    }
  }

  /** Aborts the run when its row is no longer active (its state was left, maybe elsewhere). */
  async abortIfSettled(jobId: string, controller: AbortController): Promise<void> {
    try {
      const [row] = await this.#store.findChildren({ id: jobId });
      if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status))
        controller.abort(new JobAbortedError(jobId));
    } catch (error) {
      this.#onError(error, `checking job ${jobId}`);
    }
  }
}

/** The reason a job's signal carries when its state was left. */
export class JobAbortedError extends Error {
  override readonly name = 'AbortError';

  constructor(jobId: string) {
    super(`Job ${jobId} was aborted: its state was left before it finished.`);
  }
}
