/**
 * A lock held across several steps (`withLock`, a timer delivery): taken once, its steps run
 * through the locked step with `{ held }` (engine/locked-step.ts), released after; and the
 * refusal of a lock not had in time, naming its holder.
 */
import { MachineAlreadyRunningException } from '../errors.js';
import { isInstanceId } from '../ids.js';
import type { LockHandle } from '../persistence/locks.js';
import type { EngineContext } from './context.js';

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
