/**
 * `machine_children` rows: how the shell tracks child machines (the spec's "Persisted records").
 * A row is written when a child is requested (async: `pending`) or ran inline (sync: `running` or
 * `completed`), and moves `pending -> running -> completed | failed | cancelled | timed_out`.
 */

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
  | { kind: 'cancel'; parentRootEventId: string; parentStateId: string; at: string };

/** Filter of `findChildren` (all given fields must match). */
export interface ChildQuery {
  id?: string;
  parentRootEventId?: string;
  parentStateId?: string;
  childMachineId?: string;
  childRootEventId?: string;
  statuses?: readonly ChildStatus[];
}

/** What a store provides for child rows (the `Store` implementations implement it). */
export interface ChildStore {
  /** Rows matching `query`, oldest first. */
  findChildren(query: ChildQuery): Promise<ChildRow[]>;
  /** Applies changes outside an instance commit, atomically. */
  updateChildren(changes: readonly ChildRowChange[]): Promise<void>;
}

/** True when `row` matches `query` (memory store, tests). */
export function matchesChildQuery(row: ChildRow, query: ChildQuery): boolean {
  return (
    (query.id === undefined || row.id === query.id) &&
    (query.parentRootEventId === undefined || row.parentRootEventId === query.parentRootEventId) &&
    (query.parentStateId === undefined || row.parentStateId === query.parentStateId) &&
    (query.childMachineId === undefined || row.childMachineId === query.childMachineId) &&
    (query.childRootEventId === undefined || row.childRootEventId === query.childRootEventId) &&
    (query.statuses === undefined || query.statuses.includes(row.status))
  );
}

/** Applies one change to an in-memory list of rows (memory store, tests). */
export function applyChildChange(rows: ChildRow[], change: ChildRowChange): void {
  if (change.kind === 'insert') {
    if (!rows.some((row) => row.id === change.row.id)) rows.push({ ...change.row });
    return;
  }
  const terminal = (status: ChildStatus) => !ACTIVE_CHILD_STATUSES.includes(status);
  for (const row of rows) {
    const hit =
      change.kind === 'setStatus'
        ? row.id === change.childId && change.from.includes(row.status)
        : row.parentRootEventId === change.parentRootEventId &&
          row.parentStateId === change.parentStateId &&
          ACTIVE_CHILD_STATUSES.includes(row.status);
    if (!hit) continue;
    row.status = change.kind === 'setStatus' ? change.status : 'cancelled';
    if (terminal(row.status)) row.completedAt = change.at;
  }
}
