/**
 * Plain data that crosses module boundaries: the snapshot of an instance and its history
 * records. Both are JSON-serializable; persistence stores them as they are.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ScenarioPlan } from '../definition/scenarios.js';
import type { Context, EventObject } from '../definition/types.js';
import type { MachineTarget } from '../definition/behavior-types.js';
import type { MacrostepEffect } from './effects.js';

/** The state of one machine instance between two events. */
export interface MachineSnapshot {
  /** Definition id (`order`). */
  machineId: string;
  /** Instance id: the root event id (ULID of the first history record). */
  id: string;
  /** Active state ids, one per active region (`['order.submitted']`). */
  value: string[];
  /** The persisted context (computed values excluded). */
  context: Context;
  /** `done` once a top-level final state is reached. */
  status: 'active' | 'done';
  /** Sequence number of the last history record (the next one is `sequence + 1`). */
  sequence: number;
  /**
   * The parent instance when this one was started by a delegating state. Absent otherwise;
   * `sendToParent` / `dispatchToParent` throw NoParentMachineException without it.
   */
  parent?: MachineTarget;
  /**
   * The version of the definition that last wrote the instance (`MachineDefinition.version`,
   * docs/versioning.md). Absent on rows written before versions were recorded.
   */
  version?: string;
  /**
   * When an operator paused the instance (ISO-8601 UTC; docs/operations.md): it refuses events
   * and fires no timers until resumed. Absent when not paused.
   */
  pausedAt?: string;
}

/**
 * Whether an untyped value (an error's `snapshot`, a row read back) has a snapshot's shape: the
 * check the runtime and the HTTP layer make before using one.
 */
export function isSnapshot(value: unknown): value is MachineSnapshot {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as MachineSnapshot).id === 'string' &&
    Array.isArray((value as MachineSnapshot).value)
  );
}

/** Where a history record came from. */
export type HistorySource = 'external' | 'internal';

/**
 * One row of `machine_events`. Internal types follow the original's scheme
 * (`<machine>.transition.<route>.<EVENT>.start`, see interpreter/history.ts).
 */
export interface HistoryRecord {
  /** ULID of this record. The first record's id is the instance id. */
  id: string;
  /** 1-based, gap-free per instance. */
  sequence: number;
  /** ISO-8601 UTC time the record was made. */
  createdAt: string;
  /** Definition id. */
  machineId: string;
  /** Instance id. */
  rootEventId: string;
  source: HistorySource;
  type: string;
  payload: Record<string, unknown> | null;
  /** Active state ids when the record was made. */
  value: string[];
  /**
   * Full context after the step, on the last record of a macrostep (the one restore reads);
   * `null` on intermediate records to keep rows small.
   */
  context: Context | null;
  version: number;
  actor: string | null;
}

/** Failure of a validation guard: the event is rejected with 422, its history is kept. */
export interface ValidationFailure {
  message: string;
  errors: Record<string, string[]>;
}

/** What computing one macrostep (or the initial state) produces. Nothing is applied yet. */
export interface MacrostepResult {
  snapshot: MachineSnapshot;
  /** New history records, in order, continuing `snapshot.sequence` of the input. */
  history: HistoryRecord[];
  /** Set when a validation guard failed: the snapshot is unchanged, the history records it. */
  validationFailure: ValidationFailure | null;
  /** What the engine must write or do besides the history and snapshot (see effects.ts). */
  effects: MacrostepEffect[];
}

/** Options of one `transition` / `initialize` call. */
export interface MacrostepOptions {
  /** Clock for `createdAt`, for deterministic tests. */
  now?: () => Date;
  /** Instance id to use when initializing (default: a new ULID). */
  id?: string;
  /** `initialize` only: values merged over the definition's initial context. */
  context?: Context;
  /** `initialize` only: actor recorded on the initial history records. */
  actor?: string | null;
  /** `initialize` only: the parent instance of a child machine (kept in its snapshot). */
  parent?: MachineTarget;
  /**
   * Resolves a child machine referenced by id (`machine: 'payment'`) when a delegating state is
   * entered. Children referenced by definition need nothing.
   */
  machines?: (machineId: string) => MachineDefinition | undefined;
  /**
   * `transition` only: the scenario whose overrides replace guards, actions and child outcomes
   * for this event (see `planScenarioStep`). Absent: the real behaviour runs.
   */
  scenario?: ActiveScenario | null;
  /**
   * Depth limit for machines without their own `max_transition_depth` (default 100): the
   * runtime's `maxTransitionDepth` setting, passed with every step rather than held globally.
   */
  maxTransitionDepth?: number | undefined;
  /**
   * Parallel dispatch (docs/parallel-dispatch.md): when set, entering a parallel state leaves
   * each region's entry actions to a region job (`dispatchRegion` effects) instead of running
   * them in this step. `regionTimeoutSeconds`: the watchdog's delay, `null` for none.
   */
  parallelDispatch?: { regionTimeoutSeconds: number | null } | null | undefined;
  /**
   * A span per guard, action, calculator and listener call (`MACHINE_TRACE_BEHAVIORS`; off by
   * default: a busy machine's behaviors would multiply its spans).
   */
  traceBehaviors?: boolean | undefined;
  /**
   * `false`: history records are counted (sequence numbers stay right) but not built, and
   * `history` is empty. For steps whose history nobody reads: stateless sends answered over
   * HTTP, where building records and their ids was a good part of the request's cost.
   */
  history?: boolean;
  /**
   * `transition` only: the input snapshot's context belongs to this step (the caller made it
   * and drops the snapshot), so behaviors change it in place instead of a copy made first. The
   * input snapshot is then changed too, and after a failed validation guard the returned
   * snapshot carries the changed context: only for callers that keep neither (stateless steps
   * without history, whose validation failure is answered without a state).
   */
  adoptContext?: boolean;
}

/** A scenario plan in force for one macrostep, with the request's validated `scenarioParams`. */
export interface ActiveScenario {
  slug: string;
  plan: ScenarioPlan;
  params: Record<string, unknown>;
}

/**
 * A scenario kept on an instance (`machine_current_states.scenario_class` / `scenario_params`):
 * a continuation, or a child's scenario waiting for its source state and event.
 */
export interface StoredScenario {
  slug: string;
  params: Record<string, unknown>;
}

/**
 * The scenario a step played, carried by the work it started (a job actor's run, a child's
 * start, a queued listener) so that work plays it too (scenario isolation): its slug and
 * params, and which of its plans was in force.
 */
export interface CarriedScenario extends StoredScenario {
  part: 'plan' | 'continuation';
}

/** An event accepted in the current state, as listed in responses. */
export interface AvailableEvent {
  type: string;
  source: 'parent' | 'forward';
  region?: string;
}

export type { EventObject };
