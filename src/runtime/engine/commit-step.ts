/**
 * The commit protocol, written once: every writer (create, send, forwarded send, child start,
 * completion and timeout jobs, messaging) commits a step through `commitStep`.
 *
 *   planCommit (pure: writes, jobs, sends)  ->  store.commit (one transaction; jobs go in
 *   through the queue's outbox when it shares the store's database)  ->  after the commit:
 *   jobs the outbox did not take are enqueued, commit listeners are told, job actors whose
 *   state was left are aborted, synchronous sends are delivered.
 *
 * The plan travels as data from one phase to the next (`PreparedCommit`); nothing ties them
 * together behind the caller's back. `writeCommit` + `finishCommit` split the protocol for
 * callers that hold a lock until the write is done and run the follow-up after releasing it:
 * only the locked step (engine/locked-step.ts) does; everyone else calls `commitStep`.
 * `commitTimerClaim` records a timer fire no state accepted (its claim alone, no step);
 * `commitChildRows` child-row changes that belong to no step.
 */
import type { ChildRowChange } from '../interpreter/child-rows.js';
import type { SendEffect } from '../interpreter/effects.js';
import type { PlannedJob } from '../interpreter/job-payloads.js';
import {
  planCommit,
  type CommitInput,
  type CommitPlan,
  type InstanceWrite,
} from '../interpreter/plan-commit.js';
import type { JobRequest } from '../jobs/job-queue.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import {
  flattenCommit,
  type CommitOutcome,
  type CommitRequest,
  type Store,
  type TimerFireClaim,
} from '../persistence/store.js';
import type { CommitNotice } from '../persistence/commit-feed.js';
import type { CommitEvent } from './commit-events.js';
import { chainHooks } from '../persistence/transaction.js';
import { currentTraceCarrier } from '../telemetry/tracing.js';
import type { CommitOptions, EngineContext } from './context.js';
import { toJobRequest } from './jobs/job-requests.js';
import { timeCommit, type CommitTiming } from './instrumentation.js';
import { spanInlineChildren } from './child-instrumentation.js';
import { deliverSends } from './jobs/send-jobs.js';

/** A planned commit, ready for the store. */
export interface PreparedCommit {
  plan: CommitPlan;
  /** What to pass to `store.commit`. */
  request: CommitRequest;
  /** The plan's jobs as queue requests. */
  jobs: JobRequest[];
  /** True when `request` writes `jobs` in its own transaction (outbox). */
  outboxed: boolean;
  /** The store said no process watches `request`'s instance: its commit notice is not sent. */
  unwatched?: boolean;
}

/** Plans a commit and builds the store request (jobs in the outbox hook when there is one). */
export function prepareCommit(
  ctx: EngineContext,
  input: CommitInput,
  options: CommitOptions = {},
): PreparedCommit {
  const plan = planCommit(input);
  const jobs = plan.jobs.map((job: PlannedJob) => toJobRequest(job, ctx.settings.parallelDispatch));
  const outbox = jobs.length > 0 ? ctx.jobs.outbox : null;
  const request: CommitRequest = { ...plan.write };
  if (options.releaseLockOwner !== undefined) request.releaseLockOwner = options.releaseLockOwner;
  if (options.lockFree === true) request.lockFree = true;
  if (options.timerFire !== undefined) request.timerFire = options.timerFire;
  const hooks = [
    ...(options.inTransaction === undefined ? [] : [options.inTransaction]),
    ...(outbox === null ? [] : [outbox.write(jobs)]),
  ];
  if (hooks.length > 0) request.inTransaction = hooks.length === 1 ? hooks[0] : chainHooks(hooks);
  if (options.idempotency !== undefined) request.idempotency = options.idempotency;
  if (options.businessKey !== undefined) request.businessKey = options.businessKey;
  // Kept on the states this step enters, for the timers they arm (undefined without an SDK); a
  // step that enters none (a targetless transition: the common event) builds no carrier.
  if (entersStates(request)) {
    const traceContext = currentTraceCarrier();
    if (traceContext !== undefined) request.traceContext = traceContext;
  }
  return { plan, request, jobs, outboxed: outbox !== null };
}

/**
 * True when a write of the commit enters a state (a new instance, or an `.enter` record): the
 * rows the trace context is kept on (`machine_current_states.trace_context`).
 */
function entersStates(write: InstanceWrite): boolean {
  if (write.expectedSequence === null || !sameStates(write.previousValue, write.snapshot.value))
    return true;
  for (const record of write.history) if (record.type.endsWith('.enter')) return true;
  return write.also?.some(entersStates) ?? false;
}

function sameStates(before: readonly string[], after: readonly string[]): boolean {
  if (before === after) return true;
  if (before.length !== after.length) return false;
  for (let index = 0; index < before.length; index += 1)
    if (!before.includes(after[index]!)) return false;
  return true;
}

/**
 * The work after a successful commit: jobs, notifications, synchronous sends. Returns a promise
 * only when some of it waits (jobs the outbox did not take, synchronous sends): the common step
 * has none, and each promise is a run of an OpenTelemetry context manager's hooks.
 */
export function finishCommit(ctx: EngineContext, prepared: PreparedCommit): Promise<void> | void {
  if (prepared.plan.write.children !== undefined) spanInlineChildren(prepared.plan.write.children);
  if (prepared.outboxed) ctx.jobs.outbox?.committed();
  else if (prepared.jobs.length > 0)
    return ctx.jobs.enqueue(prepared.jobs).then(() => afterJobs(ctx, prepared));
  return afterJobs(ctx, prepared);
}

function afterJobs(ctx: EngineContext, prepared: PreparedCommit): Promise<void> | void {
  const writes = flattenCommit(prepared.plan.write);
  // Streams, waiting reads and waiting senders of this process (of every process on
  // PostgreSQL) follow instances on the feed; an instance nobody watches is left out.
  const notices: CommitNotice[] = [];
  for (const write of writes) {
    if (prepared.unwatched === true && write === prepared.plan.write) continue;
    const { id, machineId, sequence } = write.snapshot;
    notices.push({ machineId, id, sequence });
  }
  if (notices.length > 0) ctx.feed.publish(notices);
  if (ctx.listeners.active) {
    const sends = sendsOf(prepared.plan);
    for (const write of writes) {
      const event: CommitEvent = {
        instanceId: write.snapshot.id,
        machineId: write.snapshot.machineId,
        sequence: write.snapshot.sequence,
        snapshot: write.snapshot,
        history: write.history,
      };
      // A step's sends may come from an inline child too: each instance lists its own.
      const own = sends.filter((send) => send.source.id === write.snapshot.id);
      if (own.length > 0) event.sends = own;
      ctx.listeners.emit(event);
    }
  }
  // Committed: a cancelled job's function, if it runs in this process, stops now.
  for (const slot of prepared.plan.cancelledJobs) ctx.runningJobs.abort(slot);
  if (prepared.plan.sends.length > 0) return deliverSends(ctx, prepared.plan.sends);
}

/** The step's sends: the synchronous ones in the order made, then the asynchronous (`send` jobs). */
function sendsOf(plan: CommitPlan): SendEffect[] {
  if (plan.sends.length === 0 && !plan.jobs.some((job) => job.kind === 'send')) return [];
  const sends: SendEffect[] = [...plan.sends];
  for (const job of plan.jobs) if (job.kind === 'send') sends.push(job.payload.effect);
  return sends;
}

/**
 * Plans and writes a step without its follow-up work, for callers that must release a lock
 * first (the follow-up may send to the instance they hold): pass the result to `finishCommit`.
 * Not async: one `then` on the store's promise instead of an async frame and its await.
 */
export function writeCommit(
  ctx: EngineContext,
  input: CommitInput,
  options: CommitOptions = {},
): Promise<PreparedCommit> {
  let prepared: PreparedCommit;
  let timing: CommitTiming;
  try {
    prepared = prepareCommit(ctx, input, options);
    timing = timeCommit(ctx.store, prepared.request, ctx.settings.traceSteps);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  let written: Promise<CommitOutcome | void>;
  try {
    written = ctx.store.commit(prepared.request);
  } catch (error) {
    timing.failed(error);
    return Promise.reject(error as Error);
  }
  return written.then(
    (outcome) => {
      timing.ok();
      if (outcome?.unwatched === true) prepared.unwatched = true;
      return prepared;
    },
    (error: unknown) => {
      timing.failed(error);
      throw error;
    },
  );
}

/**
 * Commits one step and runs its follow-up work; returns the plan. Throws what the store throws
 * (`SequenceConflictError` when fenced out): nothing was written then, and nothing follows.
 */
export async function commitStep(
  ctx: EngineContext,
  input: CommitInput,
  options: CommitOptions = {},
): Promise<CommitPlan> {
  const prepared = await writeCommit(ctx, input, options);
  await finishCommit(ctx, prepared);
  return prepared.plan;
}

/**
 * Writes `machine_children` row changes that belong to no instance's step: a child start that
 * finds its child already created or cannot create it, a job actor moving to `running`, a
 * fire-and-forget job's outcome (nobody's state changes with them). Every other row change rides
 * in a step's commit (`CommitInput.children`). With `commitStep`, the only writer of those rows
 * outside the stores (test/runtime/engine/commit-protocol.test.ts).
 */
export async function commitChildRows(
  ctx: Pick<EngineContext, 'store'>,
  changes: readonly ChildRowChange[],
): Promise<void> {
  if (changes.length === 0) return;
  await ctx.store.updateChildren(changes);
}

/**
 * Commits a timer fire's claim alone: the instance row is rewritten as `snapshot` (unchanged,
 * fenced on its sequence), no history, nothing follows. For a fire whose event no state
 * accepts, so it is recorded once instead of retried forever. Throws `TimerFireConflictError`
 * when another process claimed the fire first, `SequenceConflictError` when the instance moved.
 */
export async function commitTimerClaim(
  store: Pick<Store, 'commit'>,
  snapshot: MachineSnapshot,
  timerFire: TimerFireClaim,
  now: Date,
): Promise<void> {
  await store.commit({
    snapshot,
    history: [],
    expectedSequence: snapshot.sequence,
    previousValue: snapshot.value,
    now,
    timerFire,
  });
}
