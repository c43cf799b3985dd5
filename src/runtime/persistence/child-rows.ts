/**
 * Reading and applying `machine_children` rows (the row shapes are interpreter data:
 * interpreter/child-rows.ts).
 */
import {
  ACTIVE_CHILD_STATUSES,
  type ChildRow,
  type ChildRowChange,
  type ChildStatus,
} from '../interpreter/child-rows.js';

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
  if (change.kind === 'moveState') {
    const row = rows.find((candidate) => candidate.id === change.childId);
    if (
      row !== undefined &&
      row.parentStateId === change.from &&
      ACTIVE_CHILD_STATUSES.includes(row.status)
    )
      row.parentStateId = change.to;
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
