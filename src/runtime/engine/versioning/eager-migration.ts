/**
 * The eager migration (`machine-routes instances migrate`, docs/versioning.md): every stored
 * instance of a machine whose version has a migration chain to the definition's is migrated now,
 * a page at a time, each instance through the locked step (the same write as the lazy path:
 * engine/locked-step.ts). Resumable: instances already at the version are skipped, so a run
 * stopped halfway is finished by running it again. A dry run computes every migration without
 * writing and lists what would change and what would fail.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import { MachineAlreadyRunningException, MachineRoutesError } from '../../errors.js';
import {
  migrateSnapshot,
  planVersion,
  storedVersion,
  versionFence,
} from '../../interpreter/migrate-snapshot.js';
import { readInstancePage } from '../../persistence/live-instances.js';
import type { EngineContext } from '../context.js';
import { runLocked } from '../locked-step.js';
import { migratedChildren, type ChildRowMigration } from './migration-children.js';

/** Options of {@link migrateInstances}. */
export interface EagerMigrationOptions {
  /** Compute and report, write nothing. */
  dryRun?: boolean;
  /** Instances read and migrated per batch (default 100); a batch's instances run concurrently. */
  batch?: number;
  /** How long each instance waits for its lock, in ms (default: the runtime's lock timeout). */
  lockWaitMs?: number;
  /** Told after each batch (progress output). */
  onBatch?(report: EagerMigrationReport): void;
}

/** One instance the migration changes (or would). */
export interface MigratedInstance {
  id: string;
  from: string;
  /** Active states before and after. */
  before: string[];
  after: string[];
  /**
   * Dry run: the instance's active child rows the migration moves to a renamed delegating state
   * or cancels (docs/versioning.md "Delegating states"); rows it keeps are not listed.
   */
  children?: ChildRowMigration[];
}

/** One instance the migration cannot take. */
export interface FailedInstance {
  id: string;
  from: string;
  states: string[];
  /** The error's code: `MR_INSTANCE_MIGRATION_FAILED`, `MR_VERSION_FENCE`, `MR_MACHINE_ALREADY_RUNNING`, ... */
  code: string;
  message: string;
}

/** What a run did (or, dry, would do). */
export interface EagerMigrationReport {
  machineId: string;
  version: string;
  dryRun: boolean;
  /** Instances read. */
  scanned: number;
  /** Already at the version (skipped). */
  current: number;
  /** On a pinned older version (left to finish there). */
  pinned: number;
  migrated: MigratedInstance[];
  failed: FailedInstance[];
}

/**
 * Migrates (or, with `dryRun`, checks) every stored instance of `definition`'s machine. Never
 * throws for one instance: its failure is listed (and, for a busy lock, left to the next run).
 */
export async function migrateInstances(
  ctx: EngineContext,
  definition: MachineDefinition,
  options: EagerMigrationOptions = {},
): Promise<EagerMigrationReport> {
  const report: EagerMigrationReport = {
    machineId: definition.id,
    version: definition.version,
    dryRun: options.dryRun === true,
    scanned: 0,
    current: 0,
    pinned: 0,
    migrated: [],
    failed: [],
  };
  const batch = Math.max(1, Math.floor(options.batch ?? 100));
  const waitMs = options.lockWaitMs ?? ctx.settings.lockTimeoutMs;
  let afterId: string | undefined;
  for (;;) {
    const page = await readInstancePage(ctx.store, {
      machineId: definition.id,
      limit: batch,
      ...(afterId === undefined ? {} : { afterId }),
    });
    if (page.length === 0) break;
    afterId = page[page.length - 1]!.id;
    report.scanned += page.length;
    await Promise.all(
      page.map(async (snapshot) => {
        const from = storedVersion(definition, snapshot);
        const plan = planVersion(definition, snapshot);
        if (plan.kind === 'current') return void (report.current += 1);
        if (plan.kind === 'pinned') return void (report.pinned += 1);
        try {
          if (plan.kind === 'unknown') throw versionFence(definition, snapshot, plan.version);
          if (report.dryRun) {
            // The same migration the write computes, without the write.
            const migrated = migrateSnapshot(definition, snapshot, plan.chain, { history: false });
            const { rows } = await migratedChildren(ctx, snapshot, {
              result: migrated,
              definition,
              chain: plan.chain,
            });
            report.migrated.push({
              id: snapshot.id,
              from,
              before: snapshot.value,
              after: migrated.snapshot.value,
              children: rows.filter((row) => row.change !== 'kept'),
            });
            return;
          }
          const after = await runLocked(ctx, {
            id: snapshot.id,
            lock: { waitMs },
            context: 'migrate',
            machineId: definition.id,
            definition,
            // The locked step migrated the snapshot before this: nothing else to write.
            compute: (loaded) => ({ value: loaded }),
          });
          if (after === null) return;
          report.migrated.push({
            id: snapshot.id,
            from,
            before: snapshot.value,
            after: after.value,
          });
        } catch (error) {
          if (!(error instanceof MachineRoutesError)) throw error;
          report.failed.push({
            id: snapshot.id,
            from,
            states: snapshot.value,
            code: error.code,
            message:
              error instanceof MachineAlreadyRunningException
                ? `busy (another writer holds it); run the migration again to take it.`
                : error.message,
          });
        }
      }),
    );
    options.onBatch?.(report);
  }
  return report;
}
