/**
 * The write rules of a step, pure: which rows, instances and jobs a macrostep's result turns
 * into (`planCommit`). The engine's `commitStep` applies the plan in one store transaction and
 * then runs the follow-up work the plan lists; nothing here performs I/O or reads a clock.
 *
 * Rules, in one place for every writer (create, send, forwarded send, child jobs, messaging):
 * - `startChild`: a `pending` child row, the start job, and the `@timeout` job when set;
 * - `persistChild` (a synchronous child ran inline): the child instance written in the same
 *   transaction, its row, and its own effects planned like the parent's;
 * - `cancelChild`: the delegating state's active rows cancelled;
 * - `send`: `async` becomes a send job, `sync` is delivered after the commit;
 * - `listener` (a queued listener): a `listener.run` job;
 * - a child that reached its final state through its own event: its row completes and the
 *   parent's completion job is written with it;
 * - `dispatchRegion` (parallel dispatch): the region job, and once per entry of the parallel
 *   state the `region_timeout` watchdog job when it is on.
 */
import { ACTIVE_CHILD_STATUSES, type ChildRowChange } from './child-rows.js';
import type { ChildSlot, JobSlot, MacrostepEffect, SendEffect } from './effects.js';
import type { PlannedJob } from './job-payloads.js';
import type {
  CarriedScenario,
  HistoryRecord,
  MacrostepResult,
  MachineSnapshot,
  StoredScenario,
} from './types.js';

/**
 * One instance written by a commit: its new history records and snapshot, fenced on the
 * sequence it was computed from. Persistence's `CommitRequest` is this plus transaction options.
 */
export interface InstanceWrite {
  /** The snapshot after the step. Its `sequence` must be the last history record's. */
  snapshot: MachineSnapshot;
  /** New history records, in order, continuing `expectedSequence`. */
  history: readonly HistoryRecord[];
  /**
   * Sequence of the snapshot the step was computed from; `null` when creating the instance.
   * The commit fails when the stored instance has moved on (or, on create, already exists).
   */
  expectedSequence: number | null;
  /** Active state ids of that snapshot (`[]` on create): the base of the current-state diff. */
  previousValue: readonly string[];
  /** Time written as `state_entered_at` for newly entered states. */
  now: Date;
  /**
   * The scenario the instance keeps after the step (`scenario_class` / `scenario_params` of
   * every `machine_current_states` row, states entered by the step included): `null` clears
   * it, `undefined` leaves the columns as they are (no write; always so with scenarios off).
   */
  scenario?: StoredScenario | null;
  /** `machine_children` changes, applied in the same transaction after the instance writes. */
  children?: readonly ChildRowChange[];
  /** Other instances written in the same transaction (each fenced like this one). */
  also?: readonly InstanceWrite[];
}

/** One instance's step of a commit: its macrostep result and the snapshot it started from. */
export interface PlannedStep {
  result: MacrostepResult;
  /** The last committed snapshot the step was computed from; `null` when the step creates it. */
  from: MachineSnapshot | null;
  /** The scenario the instance keeps after the step (see `InstanceWrite.scenario`). */
  scenario?: StoredScenario | null;
}

/** What `planCommit` is given. */
export interface CommitInput {
  /** The main instance's step: its write is the commit's top-level one. */
  main: PlannedStep;
  /**
   * Other instances' steps committed in the same transaction (the child a forwarded event
   * reached). Their effects are planned like the main step's.
   */
  others?: readonly PlannedStep[];
  /** Row changes applied before the steps' own (a started child's `pending -> running`). */
  children?: readonly ChildRowChange[];
  /** The commit time (history rows carry their own). */
  at: Date;
}

/** A commit and its follow-up work, as data. */
export interface CommitPlan {
  /** The instance writes of the one transaction. */
  write: InstanceWrite;
  /** Jobs the commit causes; written in the commit (transactional outbox) or enqueued after it. */
  jobs: PlannedJob[];
  /** Synchronous sends (`sendTo`, `sendToParent`), delivered after the commit, in order. */
  sends: SendEffect[];
  /** Job actors whose state the commit left: their running function is aborted after it. */
  cancelledJobs: JobSlot[];
}

/**
 * Turns the steps of one commit into its writes and follow-up work. Pure.
 *
 * @example
 * const plan = planCommit({ main: { result, from: snapshot }, at: new Date() });
 * await store.commit(plan.write); // then enqueue plan.jobs and deliver plan.sends
 */
export function planCommit(input: CommitInput): CommitPlan {
  const at = input.at;
  const iso = at.toISOString();
  const plan: CommitPlan = {
    write: writeOf(input.main, at),
    jobs: [],
    sends: [],
    cancelledJobs: [],
  };
  const children: ChildRowChange[] = [...(input.children ?? [])];
  const also: InstanceWrite[] = (input.others ?? []).map((step) => writeOf(step, at));
  for (const step of [input.main, ...(input.others ?? [])]) {
    planEffects(step.result.effects, iso, { plan, children, also });
    const { snapshot } = step.result;
    // A child that finished through its own event: its row completes with this commit, and the
    // parent's completion job is written with it.
    if (snapshot.status === 'done' && snapshot.parent !== undefined) {
      children.push({
        kind: 'setStatus',
        childId: snapshot.id,
        from: ACTIVE_CHILD_STATUSES,
        status: 'completed',
        at: iso,
      });
      plan.jobs.push(completionJob(snapshot.id));
    }
  }
  if (children.length > 0) plan.write.children = children;
  if (also.length > 0) plan.write.also = also;
  return plan;
}

/** The parent's completion job for child `childId` (deduplicated while one waits). */
export function completionJob(
  childId: string,
  error?: PlannedJob<'child.complete'>['payload']['error'],
): PlannedJob<'child.complete'> {
  return {
    kind: 'child.complete',
    payload: error === undefined ? { childId } : { childId, error },
    key: `complete:${childId}`,
  };
}

function writeOf(step: PlannedStep, at: Date): InstanceWrite {
  const write: InstanceWrite = {
    snapshot: step.result.snapshot,
    history: step.result.history,
    expectedSequence: step.from === null ? null : step.from.sequence,
    previousValue: step.from === null ? [] : step.from.value,
    now: at,
  };
  if (step.scenario !== undefined) write.scenario = step.scenario;
  return write;
}

interface PlanTarget {
  plan: CommitPlan;
  children: ChildRowChange[];
  also: InstanceWrite[];
}

function planEffects(effects: readonly MacrostepEffect[], at: string, target: PlanTarget): void {
  for (const effect of effects) {
    switch (effect.kind) {
      case 'startChild': {
        target.plan.jobs.push({
          kind: 'child.start',
          payload: effect,
          key: `start:${effect.childId}`,
        });
        if (effect.timeoutSeconds !== null) {
          target.plan.jobs.push({
            kind: 'child.timeout',
            payload: { childId: effect.childId },
            runAt: new Date(Date.parse(at) + effect.timeoutSeconds * 1000),
            key: `timeout:${effect.childId}`,
          });
        }
        target.children.push(insertChildRow(effect, 'pending', at));
        break;
      }
      case 'persistChild': {
        target.also.push({
          snapshot: effect.snapshot,
          history: effect.history,
          expectedSequence: null,
          previousValue: [],
          now: new Date(at),
          ...(effect.scenario === undefined ? {} : { scenario: effect.scenario }),
        });
        target.children.push(insertChildRow(effect, effect.status, at));
        planEffects(effect.effects, at, target);
        break;
      }
      case 'startJob': {
        const { kind: _kind, timeoutSeconds, ...run } = effect;
        target.plan.jobs.push({ kind: 'job.run', payload: run, key: `job:${effect.jobId}` });
        if (timeoutSeconds !== null) {
          target.plan.jobs.push({
            kind: 'child.timeout',
            payload: { childId: effect.jobId },
            runAt: new Date(Date.parse(at) + timeoutSeconds * 1000),
            key: `timeout:${effect.jobId}`,
          });
        }
        // The job's name stands in the child machine column; there is no child instance.
        target.children.push({
          kind: 'insert',
          row: {
            id: effect.jobId,
            parentRootEventId: effect.parentId,
            parentStateId: effect.parentStateId,
            parentMachineId: effect.parentMachineId,
            childMachineId: effect.job,
            childRootEventId: null,
            status: 'pending',
            createdAt: at,
            completedAt: null,
            ...(effect.scenario === undefined ? {} : { parentScenario: effect.scenario }),
          },
        });
        break;
      }
      case 'cancelJob':
        target.children.push({
          kind: 'cancel',
          parentRootEventId: effect.parentId,
          parentStateId: effect.parentStateId,
          at,
        });
        target.plan.cancelledJobs.push({
          parentMachineId: effect.parentMachineId,
          parentId: effect.parentId,
          parentStateId: effect.parentStateId,
          job: effect.job,
        });
        break;
      case 'cancelChild':
        target.children.push({
          kind: 'cancel',
          parentRootEventId: effect.parentId,
          parentStateId: effect.parentStateId,
          at,
        });
        break;
      case 'send':
        if (effect.mode === 'async') {
          target.plan.jobs.push({
            kind: 'send',
            payload: { effect, attempt: 1, exceptions: 0 },
          });
        } else {
          target.plan.sends.push(effect);
        }
        break;
      case 'listener': {
        // Parameters stay out of the payload: the job takes them from the definition.
        const { kind: _kind, params: _params, ...run } = effect;
        target.plan.jobs.push({ kind: 'listener.run', payload: run });
        break;
      }
      case 'dispatchRegion': {
        const { kind: _kind, timeoutSeconds, ...work } = effect;
        target.plan.jobs.push({
          kind: 'parallel.region',
          payload: work,
          key: `region:${work.instanceId}:${work.enteredAt}:${work.regionId}`,
        });
        const watchdogKey = `parallel-timeout:${work.instanceId}:${work.enteredAt}:${work.parallelStateId}`;
        // One watchdog per entry of the parallel state, however many regions it dispatched.
        if (timeoutSeconds !== null && !target.plan.jobs.some((job) => job.key === watchdogKey)) {
          target.plan.jobs.push({
            kind: 'parallel.timeout',
            payload: {
              machineId: work.machineId,
              instanceId: work.instanceId,
              parallelStateId: work.parallelStateId,
              regionIds: work.regionIds,
              enteredAt: work.enteredAt,
              timeoutSeconds,
            },
            runAt: new Date(Date.parse(at) + timeoutSeconds * 1000),
            key: watchdogKey,
          });
        }
        break;
      }
    }
  }
}

/** The `machine_children` row of a child started (`pending`) or run inline by a step. */
function insertChildRow(
  child: ChildSlot & { childId: string; parentScenario?: CarriedScenario },
  status: 'pending' | 'running' | 'completed',
  at: string,
): ChildRowChange {
  return {
    kind: 'insert',
    row: {
      id: child.childId,
      parentRootEventId: child.parentId,
      parentStateId: child.parentStateId,
      parentMachineId: child.parentMachineId,
      childMachineId: child.childMachineId,
      childRootEventId: child.childId,
      status,
      createdAt: at,
      completedAt: status === 'completed' ? at : null,
      ...(child.parentScenario === undefined ? {} : { parentScenario: child.parentScenario }),
    },
  };
}
