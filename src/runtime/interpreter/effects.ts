/**
 * The effects a macrostep returns besides its history and snapshot, as one discriminated union
 * of plain JSON data. `planCommit` turns them into rows written in the macrostep's transaction
 * and follow-up work (jobs, synchronous sends); nothing here runs them.
 */
import type { Context, EventObject } from '../definition/types.js';
import type { MachineTarget } from '../definition/behavior-types.js';
import type { CarriedScenario, HistoryRecord, MachineSnapshot, StoredScenario } from './types.js';

/** Identifies the delegating state of a parent instance. */
export type ChildSlot = {
  /** Parent definition id. */
  parentMachineId: string;
  /** Parent instance id. */
  parentId: string;
  /** Full id of the delegating state (`parent.processing`). */
  parentStateId: string;
  /** Child definition id. */
  childMachineId: string;
};

/**
 * An asynchronous child was requested on entering a delegating state (`queue` present). The
 * shell writes a `machine_children` row (`pending`) in the same transaction and, after the
 * commit, enqueues the job that creates the child with `childId` and `input`.
 */
export type StartChildEffect = ChildSlot & {
  kind: 'startChild';
  /** Instance id the child gets (chosen here so the row and the job agree without a read). */
  childId: string;
  /** Initial context values of the child (merged over its own initial context). */
  input: Context;
  /** Queue name of `queue: '<name>'`, `null` for the default queue. */
  queue: string | null;
  /** Async without `@done`: nobody awaits the outcome and leaving the state does not cancel it. */
  fireAndForget: boolean;
  /** `@timeout` delay in seconds: the shell schedules the timeout job; `null` without `@timeout`. */
  timeoutSeconds: number | null;
  /** A scenario of the child kept on it from its creation (a parent's plan `children` entry). */
  scenario?: StoredScenario;
  /** The parent's scenario of the step that started it: the child starts under it (isolation). */
  carriedScenario?: CarriedScenario;
  /** The same, whatever the child starts under: the parent's completion step plays it again. */
  parentScenario?: CarriedScenario;
};

/**
 * A synchronous child ran inside the parent's macrostep. The shell persists its history and
 * snapshot in the parent's transaction and writes its `machine_children` row with `status`:
 * `completed` when it finished (the parent already routed `@done`), `running` when it is
 * waiting for events (it is then tracked like an asynchronous child: its completion, through
 * its own events, runs the parent's completion job).
 */
export type PersistChildEffect = ChildSlot & {
  kind: 'persistChild';
  childId: string;
  snapshot: MachineSnapshot;
  history: HistoryRecord[];
  status: 'running' | 'completed';
  /** The child's own effects (its children, its messages), applied like the parent's. */
  effects: MacrostepEffect[];
  /** A scenario of the child kept on it while it waits for events (a parent's plan `children` entry). */
  scenario?: StoredScenario;
  /** The parent's scenario of the step that ran it: the parent's completion step plays it again. */
  parentScenario?: CarriedScenario;
};

/**
 * A delegating state whose child may still run was left. The shell marks a `pending` or
 * `running` row `cancelled` (terminal rows stay as they are).
 */
export type CancelChildEffect = ChildSlot & { kind: 'cancelChild' };

/** Identifies the job-actor state of an instance (`job` on a delegating state). */
export type JobSlot = {
  /** Definition id of the instance. */
  parentMachineId: string;
  /** Instance id. */
  parentId: string;
  /** Full id of the state running the job (`checkout.charging`). */
  parentStateId: string;
  /** The job's name (`InvocationDefinition.name`). */
  job: string;
};

/**
 * A job-actor state was entered. The shell writes a `machine_children` row (`pending`, the job's
 * name as `childMachineId`, no child instance) and the job that runs it, in the step's commit;
 * with `timeoutSeconds`, the `@timeout` job too. The function itself is found again by the
 * worker from `parentMachineId` and `parentStateId`, so the payload stays plain JSON.
 */
export type StartJobEffect = JobSlot & {
  kind: 'startJob';
  /** Row id and idempotency key of this run of the job (stable across its retries). */
  jobId: string;
  /** The mapped input (`input` of the state), validated by the job's schema when it runs. */
  input: Context;
  /** Actor of the event that entered the state, handed to the job. */
  actor: string | null;
  /** `target` without `@done`: nobody awaits the outcome and leaving does not abort it. */
  fireAndForget: boolean;
  timeoutSeconds: number | null;
  /** The scenario of the step that started it: its outcome replaces the function (isolation). */
  scenario?: CarriedScenario;
};

/**
 * A job-actor state whose job may still run was left. The shell marks its active rows
 * `cancelled` in the step's commit and aborts the running function (its signal fires); a
 * result that arrives later finds the row cancelled and is ignored.
 */
export type CancelJobEffect = JobSlot & { kind: 'cancelJob' };

/**
 * `sendTo` / `dispatchTo` / `sendToParent` / `dispatchToParent`. `sync`: applied by the shell
 * right after the commit, before the caller gets its answer; `async`: a send job through the
 * job queue, retried while the target is locked or does not accept the event yet.
 */
export type SendEffect = {
  kind: 'send';
  target: MachineTarget;
  event: EventObject;
  mode: 'sync' | 'async';
  /** The sending instance. */
  source: MachineTarget;
};

/**
 * A queued listener (`[listener, { '@queue': true }]`): a `listener.run` job written with the
 * step's commit, which runs the listener on the instance's latest committed state.
 */
export type ListenerEffect = {
  kind: 'listener';
  /** The instance whose listener it is (a synchronous child's own, when the child queued it). */
  machineId: string;
  id: string;
  phase: 'entry' | 'exit' | 'transition';
  /** Position in `listen.<phase>`: the job finds the listener by it (names need not be unique). */
  index: number;
  listener: string;
  /** The tuple's named parameters, without `@` keys (for reading; the job takes them from the definition). */
  params: Record<string, unknown>;
  /** The event of the step that queued it; the listener sees it as `event`. */
  event: EventObject;
  /** The scenario of the step that queued it: the listener's step plays it (isolation). */
  scenario?: CarriedScenario;
};

/**
 * Parallel dispatch (docs/parallel-dispatch.md): a region of a parallel state entered by this
 * step whose entry actions did not run inline. The shell writes a region job in the step's
 * commit; the job runs `states`' entry actions and merges the result into the instance
 * (`interpreter/plan-region-dispatch.ts`).
 */
export type DispatchRegionEffect = {
  kind: 'dispatchRegion';
  machineId: string;
  instanceId: string;
  /** Full id of the parallel state. */
  parallelStateId: string;
  /** Full id of the region (a child of the parallel state). */
  regionId: string;
  /** Every region of the parallel state dispatched by this step (the watchdog waits for all). */
  regionIds: string[];
  /** States entered in the region whose entry actions the job runs, in document order. */
  states: string[];
  /**
   * Sequence of the parallel state's `enter` record: names this entry of the parallel state, so
   * a job of an earlier entry (the state was left and entered again) is told apart.
   */
  enteredAt: number;
  /** The event that entered the parallel state (what entry actions see). */
  trigger: EventObject;
  /** `region_timeout` in seconds, `null` when the watchdog is off. */
  timeoutSeconds: number | null;
};

/** Every effect kind a macrostep produces. */
export type MacrostepEffect =
  | DispatchRegionEffect
  | StartChildEffect
  | PersistChildEffect
  | CancelChildEffect
  | StartJobEffect
  | CancelJobEffect
  | SendEffect
  | ListenerEffect;
