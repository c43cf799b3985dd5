/**
 * The arguments of the locked step (engine/locked-step.ts, `runLocked`): how it holds the
 * instance, what it checks and computes, and what a computed step asks to be written.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { CommitInput } from '../interpreter/plan-commit.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { LockHandle } from '../persistence/locks.js';
import type { CommitOptions } from './context.js';

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
