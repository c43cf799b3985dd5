/**
 * The deferred effects a macrostep returns for delegation and messaging. Plain JSON data: the
 * shell (MachineRuntime) applies them in the macrostep's transaction (rows) and after the
 * commit (jobs). Declared as type aliases so they stay assignable to `DeferredEffect`.
 */
import type { Context, EventObject, MachineTarget } from '../definition/types.js';
import type {
  DeferredEffect,
  HistoryRecord,
  MachineSnapshot,
  StoredScenario,
} from '../interpreter/types.js';

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
  effects: DeferredEffect[];
  /** A scenario of the child kept on it while it waits for events (a parent's plan `children` entry). */
  scenario?: StoredScenario;
};

/**
 * A delegating state whose child may still run was left. The shell marks a `pending` or
 * `running` row `cancelled` (terminal rows stay as they are).
 */
export type CancelChildEffect = ChildSlot & { kind: 'cancelChild' };

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

/** A queued listener (`[listener, { '@queue': true }]`), run later by a job. */
export type ListenerEffect = {
  kind: 'listener';
  phase: 'entry' | 'exit' | 'transition';
  listener: string;
  params: Record<string, unknown>;
};

/** Every effect kind a macrostep produces. */
export type MacrostepEffect =
  StartChildEffect | PersistChildEffect | CancelChildEffect | SendEffect | ListenerEffect;

/** Narrows a deferred effect to one of the known kinds. */
export function isEffectOfKind<K extends MacrostepEffect['kind']>(
  effect: DeferredEffect,
  kind: K,
): effect is Extract<MacrostepEffect, { kind: K }> & DeferredEffect {
  return effect.kind === kind;
}
