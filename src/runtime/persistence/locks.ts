/**
 * Per-instance locks on top of `Store.tryAcquireLock`: immediate and waiting acquisition.
 *
 * A lock is a `machine_locks` row with an owner ULID and an expiry. Expiry is the only recovery
 * from a crashed holder, so it must outlast any honest macrostep; a holder that overruns it is
 * still safe because commits are fenced on the instance's sequence number.
 *
 * Instances this manager holds are also kept in an in-process set: a second attempt from the
 * same process is refused without a database round trip (no write transaction for a refusal).
 * The set is marked before the first `await`, so two calls of this process never both reach the
 * database for one instance.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { newUlid } from '../ids.js';
import type { LockedLoad, Store } from './store.js';

/** A held lock. `release` is idempotent. */
export interface LockHandle {
  readonly rootEventId: string;
  readonly ownerId: string;
  /** Deletes the row if this owner still holds it; `false` when it had expired and was taken. */
  release(): Promise<boolean>;
  /** Records that a commit already deleted the row (`CommitRequest.releaseLockOwner`): `release` becomes a no-op. */
  releasedByCommit(): void;
}

/** Options of a waiting acquire. */
export interface AcquireOptions {
  /** Give up after this many milliseconds (0: a single attempt). */
  timeoutMs: number;
  /** Recorded in the row for diagnostics. */
  context?: string;
}

/** Acquires and releases instance locks of one store. */
export class LockManager {
  readonly #store: Store;
  readonly #ttlMs: number;
  /** Instances held (or being acquired) through this manager. */
  readonly #held = new Set<string>();

  /** @param ttlMs lifetime of every lock taken by this manager. */
  constructor(store: Store, ttlMs: number) {
    this.#store = store;
    this.#ttlMs = ttlMs;
  }

  /** One attempt, never waiting: the handle, or `null` when someone else holds the lock. */
  async tryAcquire(rootEventId: string, context?: string): Promise<LockHandle | null> {
    if (this.#held.has(rootEventId)) return null;
    this.#held.add(rootEventId);
    const ownerId = newUlid();
    let acquired = false;
    try {
      acquired = await this.#store.tryAcquireLock({
        rootEventId,
        ownerId,
        ttlMs: this.#ttlMs,
        context: context ?? null,
      });
    } finally {
      if (!acquired) this.#held.delete(rootEventId);
    }
    return acquired ? this.#handle(rootEventId, ownerId) : null;
  }

  /**
   * `tryAcquire` and the instance's last committed snapshot in one short write transaction
   * (`Store.lockAndLoad`). `lock` is `null` when someone holds it or the instance does not
   * exist; `snapshot` is `null` when it does not exist, or when this process holds the lock
   * (refused without a database round trip: the caller reads the snapshot itself).
   */
  async tryAcquireAndLoad(
    rootEventId: string,
    context?: string,
  ): Promise<{ lock: LockHandle | null; loaded: LockedLoad | null }> {
    if (this.#held.has(rootEventId)) return { lock: null, loaded: null };
    this.#held.add(rootEventId);
    const ownerId = newUlid();
    let loaded: LockedLoad | null = null;
    try {
      loaded = await this.#store.lockAndLoad({
        rootEventId,
        ownerId,
        ttlMs: this.#ttlMs,
        context: context ?? null,
      });
    } finally {
      if (loaded?.acquired !== true) this.#held.delete(rootEventId);
    }
    return { lock: loaded.acquired ? this.#handle(rootEventId, ownerId) : null, loaded };
  }

  /** True while this manager holds (or is acquiring) the instance's lock. */
  holds(rootEventId: string): boolean {
    return this.#held.has(rootEventId);
  }

  /**
   * Retries until the lock is free (or expired) or `timeoutMs` has passed: the handle, or
   * `null` on timeout. Polls with a growing, jittered interval (25 ms up to 250 ms) so waiters
   * of several processes do not retry in lockstep.
   */
  async acquire(rootEventId: string, options: AcquireOptions): Promise<LockHandle | null> {
    const deadline = Date.now() + options.timeoutMs;
    let interval = 25;
    for (;;) {
      const handle = await this.tryAcquire(rootEventId, options.context);
      if (handle) return handle;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await sleep(Math.min(left, interval * (0.5 + Math.random())));
      interval = Math.min(interval * 2, 250);
    }
  }

  #handle(rootEventId: string, ownerId: string): LockHandle {
    let released: Promise<boolean> | undefined;
    const forget = () => {
      this.#held.delete(rootEventId);
    };
    return {
      rootEventId,
      ownerId,
      release: () => (released ??= this.#store.releaseLock(rootEventId, ownerId).finally(forget)),
      releasedByCommit: () => {
        if (released === undefined) {
          released = Promise.resolve(true);
          forget();
        }
      },
    };
  }
}
