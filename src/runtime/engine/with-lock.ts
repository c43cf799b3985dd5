/**
 * `withLock`: runs a callback holding an instance's lock; the callback's sends go through the
 * locked step with the lock it holds (`{ held }`), while sends from anywhere else are refused
 * as usual. The lock is handed over explicitly rather than tracked in AsyncLocalStorage, whose
 * promise hooks would tax every request of the process.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { LockHandle } from '../persistence/locks.js';
import type { TimerFireClaim } from '../persistence/store.js';
import type { InstanceResult } from '../persistence/types.js';
import type { EngineContext } from './context.js';
import { holdLock, lockRefusal } from './lock-hold.js';
import { restore } from './reads.js';
import { sendHeld } from './send.js';

/** Options of `withLock`. */
export interface WithLockOptions {
  /** Milliseconds to wait for a busy lock (default: the runtime's lock timeout). */
  timeoutMs?: number;
  /** Recorded in the lock row (default `job`). */
  context?: string;
}

/** The instance handed to a `withLock` callback: sends under the lock already held. */
export interface LockedInstance {
  readonly id: string;
  /** The last committed snapshot. */
  restore(definition: MachineDefinition): Promise<MachineSnapshot>;
  /**
   * `send` without taking the lock again (it is held); same persistence and errors otherwise.
   * `options.timerFire`: the timer fire this event delivers, claimed in the same transaction;
   * `options.onStepError`: told when computing the step threw (a behavior, not the store).
   */
  send(
    definition: MachineDefinition,
    event: EventObject,
    options?: { timerFire?: TimerFireClaim; onStepError?: (error: unknown) => void },
  ): Promise<InstanceResult>;
}

/**
 * Runs `fn` holding the instance lock, waiting up to `timeoutMs` for it. Throws
 * `MachineAlreadyRunningException`, carrying the last committed snapshot, on timeout.
 */
export async function withLock<T>(
  ctx: EngineContext,
  id: string,
  fn: (instance: LockedInstance) => Promise<T>,
  options: WithLockOptions = {},
): Promise<T> {
  const waitMs = options.timeoutMs ?? ctx.settings.lockTimeoutMs;
  const held = await holdLock(
    ctx,
    { id, lock: { waitMs }, context: options.context ?? 'job' },
    (lock) => fn(lockedInstance(ctx, id, lock)),
  );
  if (held === null) throw await lockRefusal(ctx, id, waitMs);
  return held.value;
}

/** `withLock` without waiting: `null` when someone holds the lock. */
export async function tryWithLock<T>(
  ctx: EngineContext,
  id: string,
  fn: (instance: LockedInstance) => Promise<T>,
  options: { context?: string } = {},
): Promise<T | null> {
  const held = await holdLock(ctx, { id, lock: 'try', context: options.context ?? 'job' }, (lock) =>
    fn(lockedInstance(ctx, id, lock)),
  );
  return held === null ? null : held.value;
}

/** The instance as a holder of `lock` sees it. */
export function lockedInstance(ctx: EngineContext, id: string, lock: LockHandle): LockedInstance {
  return {
    id,
    restore: (definition) => restore(ctx, definition, id),
    send: async (definition, event, sendOptions = {}) => {
      if (lock.released)
        throw new Error(`The lock of machine '${id}' was released: send through the runtime.`);
      return sendHeld(ctx, definition, id, event, lock, sendOptions);
    },
  };
}
