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
import type { MachineDefinition } from '../definition/machine-definition.js';
import { MachineAlreadyRunningException, MachineNotFoundException } from '../errors.js';
import { isInstanceId } from '../ids.js';
import type { CommitInput } from '../interpreter/plan-commit.js';
import { isSnapshot, type MachineSnapshot } from '../interpreter/types.js';
import type { LockHandle } from '../persistence/locks.js';
import {
  InstanceLockedError,
  SequenceConflictError,
  StoreBusyError,
} from '../persistence/store.js';
import { finishCommit, writeCommit, type PreparedCommit } from './commit-step.js';
import type { CommitOptions, EngineContext } from './context.js';
import { countContention, recordLockWait } from './instrumentation.js';
import {
  definitionOf,
  versionStep,
  type PlannedMigration,
} from './versioning/instance-versions.js';
import { migratedChildren } from './versioning/migration-children.js';

/**
 * How the step holds the instance:
 * - `'try'`: takes the lock row without waiting (refused at once when held);
 * - `{ waitMs }`: waits up to `waitMs` for it (in order of arrival within this process);
 * - `{ held }`: a lock the caller holds (`withLock`, a timer delivery); the commit leaves it held;
 * - `'slot'`: this process's in-process slot only, no lock row; the commit checks that nobody
 *   took the row meanwhile (lock-free sends, engine/lock-free-sends.ts).
 */
export type LockMode = 'try' | { waitMs: number } | { held: LockHandle } | 'slot';

/** What a step computed under the lock: its value, and the step to commit if any. */
export interface LockedStep<T> {
  value: T;
  /** The step, fenced on the snapshot `compute` was given; nothing is written without one. */
  commit?: CommitInput;
  /**
   * Commit options. A `releaseLockOwner` of the step's own names the row the commit deletes
   * when its main instance is not the locked one (a forwarded send commits its parent); the
   * locked instance's lock is then released after the write instead.
   */
  options?: CommitOptions;
  /** Runs once the step is written, before its follow-ups. */
  onWritten?(): void;
}

/** Arguments of {@link runLocked}. */
export interface LockedRun<T> {
  id: string;
  lock: LockMode;
  /** Recorded in the lock row (diagnostics: `send`, `timer`, `child.complete`, ...). */
  context: string;
  /** The machine named by a contention answer. */
  machineId?: string;
  /**
   * The definition the step runs (its version decides whether a loaded snapshot is migrated
   * first or fenced out, docs/versioning.md); default: the runtime's definition of the
   * snapshot's machine.
   */
  definition?: MachineDefinition;
  /** The lock's lifetime in ms (default: the runtime's `MACHINE_LOCK_TTL`). */
  ttlMs?: number;
  /**
   * Checks a snapshot as read (before any contention answer): throws to refuse, e.g. 404 for an
   * unknown id or another machine's instance. `null`: no such instance.
   */
  check?(snapshot: MachineSnapshot | null): void;
  /** `{ held }` only: the snapshot the holder already read (else it is read now). */
  loaded?: MachineSnapshot;
  /**
   * The step on the last committed snapshot (`null`: no such instance, and no lock was taken).
   * `lock` is the lock this run took (`null` for `held` and `slot`), for a step that commits
   * another instance first (its owner then goes in `options.releaseLockOwner`).
   */
  compute(
    snapshot: MachineSnapshot | null,
    lock: LockHandle | null,
  ): LockedStep<T> | Promise<LockedStep<T>>;
}

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
      // In this turn when the store reads synchronously: no promise for the read.
      loaded =
        ctx.store.loadForReadNow === undefined
          ? await ctx.store.loadForRead(run.id)
          : ctx.store.loadForReadNow(run.id);
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

/**
 * Writes the migration `versionStep` planned for a loaded snapshot (docs/versioning.md) and
 * returns the migrated snapshot the step computes on: through the commit step, under the lock
 * this run holds (kept held for the step), fenced on the loaded sequence like any commit, with
 * the child rows of its delegating states settled (versioning/migration-children.ts).
 */
async function writeMigration<T>(
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
function writeStep<T>(
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
async function contention(
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

/** Arguments of {@link holdLock}. */
export interface LockHold {
  id: string;
  /** Without waiting, or waiting up to `waitMs`. */
  lock: 'try' | { waitMs: number };
  /** Recorded in the lock row. */
  context: string;
}

/**
 * Runs `fn` holding the instance's lock (its steps go through `runLocked` with `{ held }`) and
 * releases it after; `null` when the lock was not had (held elsewhere, or not within `waitMs`).
 */
export async function holdLock<T>(
  ctx: EngineContext,
  hold: LockHold,
  fn: (lock: LockHandle) => Promise<T>,
): Promise<{ value: T } | null> {
  const lock =
    hold.lock === 'try'
      ? await ctx.locks.tryAcquire(hold.id, hold.context)
      : await ctx.locks.acquire(hold.id, { timeoutMs: hold.lock.waitMs, context: hold.context });
  if (lock === null) return null;
  try {
    return { value: await fn(lock) };
  } finally {
    await lock.release().catch(() => false);
  }
}

/** The contention answer of a lock not had within `waitMs` (`withLock`), naming its holder. */
export async function lockRefusal(
  ctx: EngineContext,
  id: string,
  waitMs: number,
): Promise<MachineAlreadyRunningException> {
  const holder = await ctx.store.readLock(id);
  return new MachineAlreadyRunningException(
    `Failed to acquire lock for machine '${id}' within ${waitMs} ms.` +
      (holder
        ? ` Held by: ${holder.ownerId} since ${holder.acquiredAt} (context: ${holder.context}).`
        : ''),
    isInstanceId(id) ? await ctx.store.load(id) : null,
    { key: id },
  );
}
