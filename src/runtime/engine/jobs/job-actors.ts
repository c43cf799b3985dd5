/**
 * The effectful side of job actors (`job` on a delegating state): the `job.run` handler that
 * runs the function, and the parent step that applies its outcome (`job.outcome` when the parent
 * was busy). The rows and jobs a `startJob` effect writes with its step's commit are planned by
 * `planCommit`; the engine's job handler table (job-handlers.ts) routes both job kinds here. Which
 * of them run in this process is kept by `RunningJobs` (running-jobs.ts), on the context.
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
import type { JobInvocation } from '../../definition/invocation.js';
import { ACTIVE_CHILD_STATUSES, type ChildRowChange } from '../../interpreter/child-rows.js';
import {
  completeJob,
  resolveJobOutcome,
  type ReportedJobOutcome,
} from '../../interpreter/complete-child.js';
import type { JobOutcome } from '../../interpreter/child-outcomes.js';
import type { JobPayloads } from '../../interpreter/job-payloads.js';
import { scenarioJobOutcome } from '../../interpreter/scenario-isolation.js';
import { resumeScenario } from '../../interpreter/scenarios.js';
import type { JobInfo } from '../../jobs/job-queue.js';
import { commitChildRows } from '../commit-step.js';
import type { EngineContext } from '../context.js';
import { countJobFailure } from '../work-instrumentation.js';
import { unknownMachine } from '../machine-registry.js';
import { applyToParent, instanceDefinition } from './child-jobs.js';
import { enqueueJobs, later } from './job-requests.js';

/** The payload of a `job.run` job: the start effect without its kind. */
type RunPayload = JobPayloads['job.run'];
/** The payload of a `job.outcome` job. */
type OutcomePayload = JobPayloads['job.outcome'];

/** The `job.run` handler. */
export async function runJobActor(
  ctx: EngineContext,
  payload: RunPayload,
  info: JobInfo,
): Promise<void> {
  const { store } = ctx;
  const [row] = await store.findChildren({ id: payload.jobId });
  if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return;
  // A parent pinned to an older version runs that version's job (docs/versioning.md).
  const definition = await instanceDefinition(ctx, payload.parentMachineId, payload.parentId);
  const invocation = definition?.idMap.get(payload.parentStateId)?.invocation;
  if (definition === undefined || invocation?.kind !== 'job') {
    // Thrown, not dropped: a worker that knows the machine may take the retry.
    throw new Error(
      `machine-routes: job '${payload.job}' of machine '${payload.parentMachineId}' (state '${payload.parentStateId}') is not known to this runtime. Pass the machine in MachineRuntime's 'machines' option.`,
    );
  }
  if (row.status === 'pending') {
    await commitChildRows(ctx, [
      {
        kind: 'setStatus',
        childId: payload.jobId,
        from: ['pending'],
        status: 'running',
        at: ctx.now().toISOString(),
      },
    ]);
  }

  // Started under a scenario that gives this state an outcome: that outcome, and the function
  // never runs (scenario isolation: a QA run reaches no real side effect through a job).
  const parent = payload.scenario === undefined ? null : await store.load(payload.parentId);
  const forced =
    parent === null ? null : scenarioJobOutcome(definition, parent, payload, ctx.macrostepOptions);
  let outcome: JobOutcome;
  if (forced !== null) outcome = forced;
  else {
    const reported = await call(ctx, invocation, payload, info);
    if (reported === null) return;
    outcome = resolveJobOutcome(invocation, reported);
  }
  if (payload.fireAndForget) {
    await commitChildRows(ctx, [terminal(ctx, payload.jobId, outcome)]);
    if (outcome.outcome === 'fail')
      ctx.onError(
        new Error(outcome.error.message),
        `fire-and-forget job '${payload.job}' (${payload.jobId}) failed`,
      );
    return;
  }
  // The completion step plays the scenario the run carried (scenario isolation): work it starts
  // carries it on.
  await applyOrDefer(ctx, payload.parentMachineId, {
    jobId: payload.jobId,
    outcome,
    ...(payload.scenario === undefined ? {} : { scenario: payload.scenario }),
  });
}

/** The `job.outcome` handler. */
export async function applyJobOutcome(ctx: EngineContext, payload: OutcomePayload): Promise<void> {
  const [row] = await ctx.store.findChildren({ id: payload.jobId });
  if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return;
  if (ctx.registry.resolve(row.parentMachineId) === undefined) {
    throw new Error(
      `machine-routes: machine '${row.parentMachineId}' is not known to this runtime. Pass it in MachineRuntime's 'machines' option.`,
    );
  }
  await applyOrDefer(ctx, row.parentMachineId, payload);
}

/**
 * Runs the function once. `null` when the job was aborted (its result is ignored); rethrows a
 * failure while attempts remain, so the queue retries it with its backoff.
 */
async function call(
  ctx: EngineContext,
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

  const controller = ctx.runningJobs.start(jobId, payload.parentId, payload.parentStateId);
  const watch = payload.fireAndForget ? null : watchRow(ctx, jobId, controller);
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
    countJobFailure('job.run', true);
    return { outcome: 'fail', jobId, error: toError(error) };
  } finally {
    if (watch !== null) clearInterval(watch);
    ctx.runningJobs.end(jobId);
  }
}

/** Aborts the run when its row stops being active (the state was left in another process). */
function watchRow(ctx: EngineContext, jobId: string, controller: AbortController): NodeJS.Timeout {
  const timer = setInterval(
    () => void ctx.runningJobs.abortIfSettled(jobId, controller),
    ctx.settings.jobAbortPollMs,
  );
  timer.unref();
  return timer;
}

async function applyOrDefer(
  ctx: EngineContext,
  machineId: string,
  payload: OutcomePayload,
): Promise<void> {
  if (await apply(ctx, machineId, payload)) return;
  // The parent stayed locked past the lock timeout: apply later rather than run the job again.
  await enqueueJobs(ctx, [{ kind: 'job.outcome', payload, runAt: later(ctx) }]);
}

/**
 * Applies `outcome` in the parent once: under the parent's lock the row is read again, and
 * only an active row lets the step commit, moving the row to its terminal status with it.
 */
async function apply(
  ctx: EngineContext,
  machineId: string,
  { jobId, outcome, scenario }: OutcomePayload,
): Promise<boolean> {
  const { store } = ctx;
  const [row] = await store.findChildren({ id: jobId });
  if (row === undefined || !ACTIVE_CHILD_STATUSES.includes(row.status)) return true;
  const newest = ctx.registry.resolve(machineId);
  if (newest === undefined) throw unknownMachine(machineId);
  return applyToParent(ctx, {
    definition: newest,
    parentId: row.parentRootEventId,
    context: 'job.outcome',
    // The parent's own version's state and routes (pinned, docs/versioning.md).
    compute: async (parent, definition) => {
      const [current] = await store.findChildren({ id: jobId });
      if (current === undefined || !ACTIVE_CHILD_STATUSES.includes(current.status)) return null;
      return completeJob(definition, parent, row.parentStateId, outcome, {
        ...ctx.macrostepOptions,
        scenario: resumeScenario(definition, scenario),
      });
    },
    children: [terminal(ctx, jobId, outcome)],
  });
}

function terminal(ctx: EngineContext, jobId: string, outcome: JobOutcome): ChildRowChange {
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
    at: ctx.now().toISOString(),
  };
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
