/**
 * The locked step, written once: take the instance's lock, load its last committed snapshot,
 * compute a step, write it (the commit releases the lock), then run the step's follow-ups, and
 * turn every way of meeting another writer into one answer, `MachineAlreadyRunningException`
 * carrying the last committed snapshot. Every locked writer goes through {@link runLocked}:
 * sends (locking, waiting, lock-free), forwarded sends, child completions and queued listeners
 * (`applyToParent`), region merges, timer fires and `withLock`'s sends.
 *
 * Order, the same on every store (docs/persistence.md "Locks"): lock + load in one short write
 * transaction -> compute outside any transaction -> commit + lock release in a second short
 * transaction, fenced on the sequence number read with the lock -> follow-ups (jobs, commit
 * notices, synchronous sends) once the lock is released, since a follow-up may send to the same
 * instance.
 *
 * What counts as contention, and the snapshot the answer carries:
 * | Met | Snapshot |
 * |---|---|
 * | lock row held by another process | the one read in the lock's own transaction |
 * | lock held by this process (refused without a round trip) | read now |
 * | commit fenced out (`SequenceConflictError`: our lock expired, someone committed) | read now |
 * | lock-free commit met a lock row (`InstanceLockedError`) | read now |
 * | database busy past its timeout (`StoreBusyError`), at lock or commit | read now, `null` if that fails too |
 */
import { MachineAlreadyRunningException } from '../errors.js';
import { isInstanceId } from '../ids.js';
import { isSnapshot } from '../interpreter/types.js';
import { StoreBusyError } from '../persistence/store.js';
import { finishCommit, type PreparedCommit } from './commit-step.js';
import type { EngineContext } from './context.js';
import { recordLockWait } from './instrumentation.js';
import type { LockedRun } from './locked-run.js';
import { contention, writeMigration, writeStep } from './locked-write.js';
import { definitionOf, versionStep } from './versioning/instance-versions.js';

export type { LockMode, LockedRun, LockedStep } from './locked-run.js';

/** Runs of a waiting step on one lock: a second fence failure under the same lock is unusual. */
const STALE_RETRIES = 3;

/**
 * Runs one locked step (see the module comment). Throws what `check` and `compute` throw,
 * nothing written then, and `MachineAlreadyRunningException` on contention.
 */
export function runLocked<T>(ctx: EngineContext, run: LockedRun<T>): Promise<T> {
  const mode = run.lock;
  if (mode === 'slot') return runInSlot(ctx, run);
  if (typeof mode === 'object' && 'held' in mode) return runHeld(ctx, run);
  return runWithLock(ctx, run, mode === 'try' ? 0 : mode.waitMs);
}

async function runWithLock<T>(ctx: EngineContext, run: LockedRun<T>, waitMs: number): Promise<T> {
  const started = Date.now();
  const deadline = started + waitMs;
  let acquired;
  try {
    acquired =
      waitMs > 0
        ? await ctx.locks.acquireAndLoad(run.id, {
            waitMs,
            context: run.context,
            ...(run.ttlMs === undefined ? {} : { ttlMs: run.ttlMs }),
          })
        : await ctx.locks.tryAcquireAndLoad(run.id, run.context, run.ttlMs);
  } catch (error) {
    if (!(error instanceof StoreBusyError)) throw error;
    throw await contention(ctx, run, 'busy');
  }
  const { lock, loaded } = acquired;
  if (waitMs > 0 && lock !== null) recordLockWait(run.machineId, run.context, Date.now() - started);
  if (loaded !== null) {
    try {
      run.check?.(loaded.snapshot);
    } catch (error) {
      await lock?.release().catch(() => false);
      throw error;
    }
  }
  if (lock === null) {
    // No such instance: nothing to lock, nothing to wait for.
    if (loaded !== null && loaded.snapshot === null) return (await run.compute(null, null)).value;
    // Held elsewhere (refused with the snapshot read in the same transaction) or by this
    // process (refused without a database round trip).
    throw await contention(ctx, run, loaded?.snapshot ?? 'now');
  }
  let outcome: { value: T; prepared: PreparedCommit | null };
  try {
    let snapshot = loaded!.snapshot!;
    for (let attempt = 1; ; attempt += 1) {
      try {
        const migration = versionStep(ctx, definitionOf(ctx, snapshot, run.definition), snapshot);
        if (migration !== null)
          snapshot = await writeMigration(ctx, run, snapshot, migration, false);
        outcome = await writeStep(ctx, run, snapshot, lock, null);
        break;
      } catch (error) {
        // A waiting step fenced out before its commit (its snapshot was read while another
        // process's commit was landing) or refused by a busy database still holds the lock:
        // it runs again on the state committed meanwhile, which the refusal carries.
        const fresh = error instanceof MachineAlreadyRunningException ? error.snapshot : null;
        if (
          waitMs === 0 ||
          lock.released ||
          !isSnapshot(fresh) ||
          attempt >= STALE_RETRIES ||
          Date.now() >= deadline
        )
          throw error;
        snapshot = fresh;
      }
    }
  } finally {
    // A failed release must not hide the outcome: the row expires after the lock TTL.
    await lock.release().catch(() => false);
  }
  const following = outcome.prepared === null ? undefined : finishCommit(ctx, outcome.prepared);
  if (following !== undefined) await following;
  return outcome.value;
}

async function runHeld<T>(ctx: EngineContext, run: LockedRun<T>): Promise<T> {
  const snapshot = run.loaded ?? (isInstanceId(run.id) ? await ctx.store.load(run.id) : null);
  run.check?.(snapshot);
  if (snapshot === null) return (await run.compute(null, null)).value;
  const migration = versionStep(ctx, definitionOf(ctx, snapshot, run.definition), snapshot);
  const current =
    migration === null ? snapshot : await writeMigration(ctx, run, snapshot, migration, false);
  const { value, prepared } = await writeStep(ctx, run, current, null, null);
  const following = prepared === null ? undefined : finishCommit(ctx, prepared);
  if (following !== undefined) await following;
  return value;
}

// The in-process slot keeps this process's other writers out; the commit's `lockFree` check and
// sequence fence keep other processes' writers out.
async function runInSlot<T>(ctx: EngineContext, run: LockedRun<T>): Promise<T> {
  const release = ctx.locks.claimSlot(run.id);
  if (release === null) throw await contention(ctx, run, 'now');
  try {
    let loaded;
    try {
      loaded = await ctx.store.loadForRead(run.id);
    } catch (error) {
      if (!(error instanceof StoreBusyError)) throw error;
      throw await contention(ctx, run, 'busy');
    }
    run.check?.(loaded?.snapshot ?? null);
    if (loaded === null) return (await run.compute(null, null)).value;
    if (loaded.lockExpiresAt !== null) {
      // A live lock row (another process, a job's withLock elsewhere): refused with the state
      // read in the same statement, the last committed one.
      if (loaded.lockExpiresAt >= Date.now()) throw await contention(ctx, run, loaded.snapshot);
      // An expired row (a crashed holder's): the locking path takes it over and deletes it.
      release();
      return await runWithLock(ctx, run, 0);
    }
    // No await on the common path (no migration): the step computes in the same tick as before.
    const migration = versionStep(
      ctx,
      definitionOf(ctx, loaded.snapshot, run.definition),
      loaded.snapshot,
    );
    const current =
      migration === null
        ? loaded.snapshot
        : await writeMigration(ctx, run, loaded.snapshot, migration, true);
    const { value, prepared } = await writeStep(ctx, run, current, null, release);
    // Awaited only when its follow-ups wait (an await of nothing makes a promise too).
    const following = prepared === null ? undefined : finishCommit(ctx, prepared);
    if (following !== undefined) await following;
    return value;
  } finally {
    release();
  }
}
