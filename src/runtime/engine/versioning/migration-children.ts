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
import type { InvocationDefinition } from '../../definition/invocation.js';
import { ACTIVE_CHILD_STATUSES, type ChildRowChange } from '../../interpreter/child-rows.js';
import { migratedStateId } from '../../interpreter/migrate-snapshot.js';
import type { MachineSnapshot } from '../../interpreter/types.js';
import type { EngineContext } from '../context.js';
import type { PlannedMigration } from './instance-versions.js';

/** What a migration does to one active child row (the eager dry run lists them). */
export interface ChildRowMigration {
  /** The row's id: the child's instance id, or the job's id for a job actor. */
  id: string;
  /** The child machine's id, or the job's name. */
  childMachineId: string;
  /** The delegating state the row belongs to before the migration. */
  from: string;
  /** `kept`: same state; `moved`: pointed at `to`; `cancelled`: the row is cancelled. */
  change: 'kept' | 'moved' | 'cancelled';
  /** The state the row belongs to after the migration; `null` when cancelled. */
  to: string | null;
}

/** The row changes committed with a migration, and the job rows to abort once it is written. */
export interface MigratedChildren {
  changes: ChildRowChange[];
  /** Rows cancelled: their running job actors (if any, in this process) are aborted. */
  cancelled: string[];
  /** Each active row and what happens to it. */
  rows: ChildRowMigration[];
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
  const described: ChildRowMigration[] = [];
  const at = ctx.now().toISOString();
  const active = migration.result.snapshot.value;
  const cancelledStates = new Set<string>();
  for (const row of rows) {
    const target = migratedStateId(migration.definition, migration.chain, row.parentStateId);
    const node = migration.definition.idMap.get(target);
    const isActive = active.some((id) => id === target || id.startsWith(`${target}.`));
    const own = { id: row.id, childMachineId: row.childMachineId, from: row.parentStateId };
    if (isActive && node?.invocation != null && delegatesTo(node.invocation, row.childMachineId)) {
      const moved = target !== row.parentStateId;
      if (moved)
        changes.push({ kind: 'moveState', childId: row.id, from: row.parentStateId, to: target });
      described.push({ ...own, change: moved ? 'moved' : 'kept', to: target });
      continue;
    }
    described.push({ ...own, change: 'cancelled', to: null });
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
  return { changes, cancelled, rows: described };
}

/**
 * Whether `invocation` starts what a child row of `childMachineId` tracks: the same child
 * machine, or the same job.
 */
export function delegatesTo(invocation: InvocationDefinition, childMachineId: string): boolean {
  if (invocation.kind === 'job') return invocation.name === childMachineId;
  const machine = invocation.machine;
  return (typeof machine === 'string' ? machine : machine.id) === childMachineId;
}
