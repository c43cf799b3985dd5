/**
 * Versions in the engine (docs/versioning.md): which definition a loaded snapshot belongs to,
 * and what the locked step must do before computing on it (`versionStep`): nothing, migrate it
 * first (the migration is written by the locked step through the commit step, fenced on the
 * sequence like any step), or refuse (the version fence). Reads get the migrated view without a
 * write (`readView`): an instance migrated lazily reads the same before and after its migration
 * is written.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { MigrationDefinition } from '../../definition/migrations.js';
import { migrateSnapshot, planVersion, versionFence } from '../../interpreter/migrate-snapshot.js';
import type { MacrostepResult, MachineSnapshot } from '../../interpreter/types.js';
import type { EngineContext } from '../context.js';

/**
 * The definition that takes `snapshot` in a locked step: the caller's when it is the snapshot's
 * machine, else the runtime's definition of that machine; `undefined` when none is known (a
 * foreign instance the step's own check refuses).
 */
export function definitionOf(
  ctx: EngineContext,
  snapshot: MachineSnapshot,
  given: MachineDefinition | undefined,
): MachineDefinition | undefined {
  if (given !== undefined) return given.id === snapshot.machineId ? given : undefined;
  return ctx.registry.resolve(snapshot.machineId);
}

/** A migration the locked step writes before its compute. */
export interface PlannedMigration {
  /** The migrated snapshot and its one history record. */
  result: MacrostepResult;
  /** The definition migrated to, and the steps from the stored version. */
  definition: MachineDefinition;
  chain: readonly MigrationDefinition[];
}

/**
 * What the locked step does with a loaded snapshot before its compute: `null` to go on with it
 * as it is, or the migration to write first. Throws `VersionFenceException` for a snapshot of a
 * version the definition does not know, `InstanceMigrationFailedException` when the migration
 * fails (nothing written either way).
 */
export function versionStep(
  ctx: EngineContext,
  definition: MachineDefinition | undefined,
  snapshot: MachineSnapshot,
): PlannedMigration | null {
  if (definition === undefined) return null;
  const plan = planVersion(definition, snapshot);
  switch (plan.kind) {
    case 'current':
    case 'pinned':
      return null;
    case 'unknown':
      throw versionFence(definition, snapshot, plan.version);
    case 'migrate':
      return {
        result: migrateSnapshot(definition, snapshot, plan.chain, { now: () => ctx.now() }),
        definition,
        chain: plan.chain,
      };
  }
}

/**
 * The definition a step on `snapshot` runs: the pinned older one when the snapshot is of a
 * version `definition` keeps loaded (`versioning: 'pin'`), else `definition` itself.
 */
export function runningDefinition(
  definition: MachineDefinition,
  snapshot: Pick<MachineSnapshot, 'version'>,
): MachineDefinition {
  if (definition.pinned === undefined || definition.pinned.size === 0) return definition;
  const plan = planVersion(definition, snapshot);
  return plan.kind === 'pinned' ? plan.definition : definition;
}

/**
 * A read's view of a snapshot: migrated in memory (not written, sequence unchanged) when it is
 * of an older version with a migration, else as stored. Reads are not fenced: a snapshot of an
 * unknown version is shown as it is, unless it sits in a state this definition lacks (then the
 * version fence's 409 says why).
 */
export function readView(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
): MachineSnapshot {
  const plan = planVersion(definition, snapshot);
  // A newer version's state this definition lacks: the fence says why, not "removed".
  if (plan.kind === 'unknown' && snapshot.value.some((id) => !definition.idMap.has(id)))
    throw versionFence(definition, snapshot, plan.version);
  if (plan.kind !== 'migrate') return snapshot;
  const view = migrateSnapshot(definition, snapshot, plan.chain, { history: false }).snapshot;
  return { ...view, sequence: snapshot.sequence };
}
