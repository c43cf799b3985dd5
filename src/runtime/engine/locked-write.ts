/**
 * The write half of the locked step (engine/locked-step.ts): a computed step written through
 * the commit step, a planned version migration written before it, and the contention answer
 * every refusal of a locked writer becomes (`MachineAlreadyRunningException` carrying the last
 * committed snapshot; the table of what counts is in locked-step.ts's module comment).
 */
import { MachineAlreadyRunningException, MachineNotFoundException } from '../errors.js';
import { isInstanceId } from '../ids.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { LockHandle } from '../persistence/locks.js';
import {
  InstanceLockedError,
  SequenceConflictError,
  StoreBusyError,
} from '../persistence/store.js';
import { finishCommit, writeCommit, type PreparedCommit } from './commit-step.js';
import type { CommitOptions, EngineContext } from './context.js';
import { countContention } from './instrumentation.js';
import type { LockedRun, LockedStep } from './locked-run.js';
import type { PlannedMigration } from './versioning/instance-versions.js';
import { migratedChildren } from './versioning/migration-children.js';

/**
 * Writes the migration `versionStep` planned for a loaded snapshot (docs/versioning.md) and
 * returns the migrated snapshot the step computes on: through the commit step, under the lock
 * this run holds (kept held for the step), fenced on the loaded sequence like any commit, with
 * the child rows of its delegating states settled (versioning/migration-children.ts).
 */
export async function writeMigration<T>(
  ctx: EngineContext,
  run: LockedRun<T>,
  snapshot: MachineSnapshot,
  migration: PlannedMigration,
  lockFree: boolean,
): Promise<MachineSnapshot> {
  const children = await migratedChildren(ctx, snapshot, migration);
  let prepared: PreparedCommit;
  try {
    prepared = await writeCommit(
      ctx,
      {
        main: { result: migration.result, from: snapshot },
        ...(children.changes.length === 0 ? {} : { children: children.changes }),
        at: ctx.now(),
      },
      lockFree ? { lockFree: true } : {},
    );
  } catch (error) {
    if (error instanceof SequenceConflictError || error instanceof InstanceLockedError)
      throw await contention(ctx, run, 'now');
    if (error instanceof StoreBusyError) throw await contention(ctx, run, 'busy');
    throw error;
  }
  // Commit notices only: a migration causes no jobs and no sends.
  await finishCommit(ctx, prepared);
  // A job actor of a delegating state the migration left stops now if it runs here.
  for (const jobId of children.cancelled) ctx.runningJobs.abort({ jobId });
  return migration.result.snapshot;
}

/**
 * Computes and writes one step. `lock`: the run's own lock, released by the commit; `slot`: a
 * lock-free run's slot, given back once the step is written. Not async: a step computed in the
 * caller's turn goes to the store at once, and the write is one `then` on the store's promise
 * (each promise is a run of an OpenTelemetry context manager's hooks). Fails by rejecting.
 */
export function writeStep<T>(
  ctx: EngineContext,
  run: LockedRun<T>,
  snapshot: MachineSnapshot,
  lock: LockHandle | null,
  slot: (() => void) | null,
): Promise<{ value: T; prepared: PreparedCommit | null }> {
  let step: LockedStep<T> | Promise<LockedStep<T>>;
  try {
    step = run.compute(snapshot, lock);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  return step instanceof Promise
    ? step.then((computed) => writeComputed(ctx, run, computed, lock, slot))
    : writeComputed(ctx, run, step, lock, slot);
}

function writeComputed<T>(
  ctx: EngineContext,
  run: LockedRun<T>,
  step: LockedStep<T>,
  lock: LockHandle | null,
  slot: (() => void) | null,
): Promise<{ value: T; prepared: PreparedCommit | null }> {
  if (step.commit === undefined) return Promise.resolve({ value: step.value, prepared: null });
  const releasesOwn = lock !== null && step.options?.releaseLockOwner === undefined;
  const options: CommitOptions = { ...step.options };
  if (releasesOwn) options.releaseLockOwner = lock.ownerId;
  if (slot !== null) options.lockFree = true;
  return writeCommit(ctx, step.commit, options).then(
    (prepared) => {
      if (releasesOwn) lock.releasedByCommit();
      slot?.();
      step.onWritten?.();
      return { value: step.value, prepared };
    },
    async (error: unknown) => {
      // Fenced out: our lock expired and another writer committed in between (or, lock-free,
      // another process took the lock or committed while this step was computed).
      if (error instanceof SequenceConflictError || error instanceof InstanceLockedError)
        throw await contention(ctx, run, 'now');
      // The database stayed locked by another connection past its busy timeout: contention.
      if (error instanceof StoreBusyError) throw await contention(ctx, run, 'busy');
      throw error;
    },
  );
}

/**
 * The contention answer. `read`: the snapshot read with the refusal, or when to read it now
 * (`busy`: a read that fails too answers `null`; an unknown id stays a 404).
 */
export async function contention(
  ctx: EngineContext,
  run: Pick<LockedRun<unknown>, 'id' | 'machineId' | 'check' | 'context'>,
  read: MachineSnapshot | 'now' | 'busy',
): Promise<MachineAlreadyRunningException> {
  countContention(run.machineId, run.context);
  let snapshot: MachineSnapshot | null;
  if (typeof read === 'object') snapshot = read;
  else {
    try {
      snapshot = isInstanceId(run.id) ? await ctx.store.load(run.id) : null;
      run.check?.(snapshot);
    } catch (error) {
      if (read !== 'busy' || error instanceof MachineNotFoundException) throw error;
      snapshot = null;
    }
  }
  return new MachineAlreadyRunningException(
    `Event processing failed: Machine \`${run.id}\` is already running.`,
    snapshot,
    run.machineId === undefined ? { key: run.id } : { machine: run.machineId, key: run.id },
  );
}
