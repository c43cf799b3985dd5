/**
 * The child rows of a migrated instance (docs/versioning.md "Delegating states"). A migration
 * moves an instance between states without exiting or entering them, so the `machine_children`
 * rows of its delegating states are settled with the migration's own commit:
 * - the delegating state was renamed (mapped) to a state of the new version that is active after
 *   the migration and delegates to the same child machine (or job): the row is pointed at it
 *   (`moveState`), so the child's completion finds its parent there and routes `@done`;
 * - otherwise (the state was removed, mapped to a state that delegates to something else or to
 *   nothing, or is no longer active): the row is cancelled, as leaving the state would, and a
 *   job actor running in this process is aborted. A completion arriving later finds the row
 *   cancelled and is ignored.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { InvocationDefinition } from '../../definition/invocation.js';
import {
  ACTIVE_CHILD_STATUSES,
  type ChildRow,
  type ChildRowChange,
} from '../../interpreter/child-rows.js';
import { migratedStateId } from '../../interpreter/migrate-snapshot.js';
import type { MachineSnapshot } from '../../interpreter/types.js';
import type { EngineContext } from '../context.js';
import type { PlannedMigration } from './instance-versions.js';

/** The row changes committed with a migration, and the job rows to abort once it is written. */
export interface MigratedChildren {
  changes: ChildRowChange[];
  /** Rows cancelled: their running job actors (if any, in this process) are aborted. */
  cancelled: string[];
}

/** Reads the instance's active child rows and settles each against the migrated states. */
export async function migratedChildren(
  ctx: EngineContext,
  stored: MachineSnapshot,
  migration: PlannedMigration,
): Promise<MigratedChildren> {
  const rows = await ctx.store.findChildren({
    parentRootEventId: stored.id,
    statuses: ACTIVE_CHILD_STATUSES,
  });
  const changes: ChildRowChange[] = [];
  const cancelled: string[] = [];
  const at = ctx.now().toISOString();
  const active = migration.result.snapshot.value;
  const cancelledStates = new Set<string>();
  for (const row of rows) {
    const target = migratedStateId(migration.definition, migration.chain, row.parentStateId);
    const node = migration.definition.idMap.get(target);
    const isActive = active.some((id) => id === target || id.startsWith(`${target}.`));
    if (isActive && node?.invocation != null && delegatesTo(node.invocation, row)) {
      if (target !== row.parentStateId)
        changes.push({ kind: 'moveState', childId: row.id, from: row.parentStateId, to: target });
      continue;
    }
    cancelled.push(row.id);
    if (cancelledStates.has(row.parentStateId)) continue;
    cancelledStates.add(row.parentStateId);
    changes.push({
      kind: 'cancel',
      parentRootEventId: stored.id,
      parentStateId: row.parentStateId,
      at,
    });
  }
  return { changes, cancelled };
}

/** Whether `invocation` starts what `row` tracks: the same child machine, or the same job. */
function delegatesTo(invocation: InvocationDefinition, row: ChildRow): boolean {
  if (invocation.kind === 'job') return invocation.name === row.childMachineId;
  const machine = invocation.machine;
  return (typeof machine === 'string' ? machine : machine.id) === row.childMachineId;
}
