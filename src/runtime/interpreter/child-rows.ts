/**
 * `machine_children` rows as data: how the engine tracks child machines (the spec's "Persisted
 * records"); `planCommit` produces their changes, persistence applies them.
 * A row is written when a child is requested (async: `pending`) or ran inline (sync: `running` or
 * `completed`), and moves `pending -> running -> completed | failed | cancelled | timed_out`.
 */

import type { CarriedScenario } from './types.js';

/** Status of a child row. */
export type ChildStatus =
  'pending' | 'running' | 'completed' | 'failed' | 'cancelled' | 'timed_out';

/** Statuses of a child that may still reach an outcome. */
export const ACTIVE_CHILD_STATUSES: readonly ChildStatus[] = ['pending', 'running'];

/** One `machine_children` row. */
export interface ChildRow {
  /** Row id: the child's instance id, chosen by the parent's macrostep. */
  id: string;
  parentRootEventId: string;
  /** Full id of the delegating state that started the child. */
  parentStateId: string;
  parentMachineId: string;
  childMachineId: string;
  /** The child's instance id once it exists (equal to `id` here). */
  childRootEventId: string | null;
  status: ChildStatus;
  /** ISO-8601 UTC. */
  createdAt: string;
  /** ISO-8601 UTC, set with a terminal status. */
  completedAt: string | null;
  /**
   * The scenario the parent's step that started the child played (scenario isolation): the
   * parent's completion step (`child.complete`, `child.timeout`) plays it again.
   */
  parentScenario?: CarriedScenario;
}

/** A change of `machine_children`, applied in a commit (or on its own with `updateChildren`). */
export type ChildRowChange =
  | { kind: 'insert'; row: ChildRow }
  /** Moves the row `childId` to `status` if its status is one of `from` (else nothing). */
  | {
      kind: 'setStatus';
      childId: string;
      from: readonly ChildStatus[];
      status: ChildStatus;
      at: string;
    }
  /** Cancels the active (`pending`/`running`) rows of a delegating state. */
  | { kind: 'cancel'; parentRootEventId: string; parentStateId: string; at: string }
  /**
   * Points the active row `childId` at the delegating state a migration renamed its state to
   * (`parentStateId` from `from` to `to`; nothing when the row moved on).
   */
  | { kind: 'moveState'; childId: string; from: string; to: string };
