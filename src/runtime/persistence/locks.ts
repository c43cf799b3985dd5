/**
 * Per-instance locks on top of `Store.tryAcquireLock`: immediate and waiting acquisition.
 *
 * A lock is a `machine_locks` row with an owner ULID and an expiry. Expiry is the only recovery
 * from a crashed holder, so it must outlast any honest macrostep; a holder that overruns it is
 * still safe because commits are fenced on the instance's sequence number.
 *
 * Instances this manager holds are also kept in an in-process map: a second attempt from the
 * same process is refused without a database round trip (no write transaction for a refusal).
 * The map is marked before the first `await`, so two calls of this process never both reach the
 * database for one instance.
 *
 * Waiting (`acquireAndLoad` with `waitMs`, the `contention: { wait }` policy) queues in that map:
 * each instance has a FIFO of this process's waiters, and a holder's release hands the
 * in-process slot straight to the next one, which then takes the row. Within a process the
 * lock is therefore taken in order of arrival, with no store polling at all, and at most one
 * request per process contends for the row of an instance. Only that one waits for another
 * process: woken by a release signal (`LockManagerOptions.releases`: on PostgreSQL the commit
 * feed's NOTIFY, which every commit and every release without commit sends) and, as a safety
 * net, by a jittered backoff from 25 ms up to 250 ms (the only wake-up between processes on
 * SQLite).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { newUlid } from '../ids.js';
import { StoreBusyError, type LockedLoad, type Store } from './store.js';

/** A held lock. `release` is idempotent. */
export interface LockHandle {
  readonly rootEventId: string;
  readonly ownerId: string;
  /** Deletes the row if this owner still holds it; `false` when it had expired and was taken. */
  release(): Promise<boolean>;
  /** Records that a commit already deleted the row (`CommitRequest.releaseLockOwner`): `release` becomes a no-op. */
  releasedByCommit(): void;
  /** True once `release` or `releasedByCommit` was called. */
  readonly released: boolean;
}

/** Options of a waiting acquire. */
export interface AcquireOptions {
  /** Give up after this many milliseconds (0: a single attempt). */
  timeoutMs: number;
  /** Recorded in the row for diagnostics. */
  context?: string;
  /** Lifetime of this lock in ms (default: the manager's). */
  ttlMs?: number;
}

/** Options of {@link LockManager}. */
export interface LockManagerOptions {
  /**
   * Calls `listener` whenever the lock of instance `id` may have been freed by another process
   * (a commit or a release there). Resolves, with the function that stops it, once later
   * signals are sure to be heard. Without it, waiting across processes relies on the backoff.
   */
  releases?: (id: string, listener: () => void) => Promise<() => void>;
  /** Told after this manager deleted a lock row without a commit (to signal other processes). */
  onRelease?: (rootEventId: string) => void;
}

/** What waits for an instance's in-process slot: called with `true` when handed it. */
type Waiter = (handed: boolean) => void;

/** First and longest pause between two attempts on a lock another process holds, in ms. */
const FIRST_RETRY_MS = 25;
const LAST_RETRY_MS = 250;

/** Acquires and releases instance locks of one store. */
export class LockManager {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #options: LockManagerOptions;
  /**
   * Instances held (or being acquired) through this manager, each with the FIFO of this
   * process's requests waiting for it.
   */
  readonly #held = new Map<string, Waiter[]>();

  /** @param ttlMs lifetime of a lock whose acquire names none. */
  constructor(store: Store, ttlMs: number, options: LockManagerOptions = {}) {
    this.#store = store;
    this.#ttlMs = ttlMs;
    this.#options = options;
  }

  /** One attempt, never waiting: the handle, or `null` when someone else holds the lock. */
  async tryAcquire(
    rootEventId: string,
    context?: string,
    ttlMs: number = this.#ttlMs,
  ): Promise<LockHandle | null> {
    if (this.#held.has(rootEventId)) return null;
    this.#held.set(rootEventId, []);
    const ownerId = newUlid();
    let acquired = false;
    try {
      acquired = await this.#store.tryAcquireLock({
        rootEventId,
        ownerId,
        ttlMs,
        context: context ?? null,
      });
    } finally {
      if (!acquired) this.#handOff(rootEventId);
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
    ttlMs: number = this.#ttlMs,
  ): Promise<{ lock: LockHandle | null; loaded: LockedLoad | null }> {
    if (this.#held.has(rootEventId)) return { lock: null, loaded: null };
    this.#held.set(rootEventId, []);
    return this.#lockAndLoad(rootEventId, context, ttlMs);
  }

  /**
   * {@link tryAcquireAndLoad}, waiting up to `waitMs` for a held lock: first for this process's
   * earlier requests (in order of arrival, handed over on release), then for another process's
   * holder (release signals and backoff). A busy database (`StoreBusyError`) counts as held
   * until the deadline. On timeout `lock` is `null` and `loaded` the last refusal's read, or
   * `null` when the request never reached the database (the caller reads the snapshot itself).
   */
  async acquireAndLoad(
    rootEventId: string,
    options: { waitMs: number; context?: string; ttlMs?: number },
  ): Promise<{ lock: LockHandle | null; loaded: LockedLoad | null }> {
    const deadline = Date.now() + options.waitMs;
    if (!(await this.#takeSlot(rootEventId, deadline))) return { lock: null, loaded: null };
    // This request holds the in-process slot: only it contends for the row.
    let stop: (() => void) | null = null;
    let wake: (() => void) | null = null;
    let signalled = false;
    let interval = FIRST_RETRY_MS;
    try {
      for (;;) {
        signalled = false;
        let attempt: { lock: LockHandle | null; loaded: LockedLoad | null } | null;
        try {
          attempt = await this.#lockAndLoad(
            rootEventId,
            options.context,
            options.ttlMs ?? this.#ttlMs,
            false,
          );
        } catch (error) {
          if (!(error instanceof StoreBusyError) || Date.now() >= deadline) throw error;
          attempt = null;
        }
        if (attempt?.lock) return attempt;
        // Unknown instance: nothing to wait for.
        if (attempt !== null && attempt.loaded?.snapshot == null) return attempt;
        const left = deadline - Date.now();
        if (left <= 0) return attempt ?? { lock: null, loaded: null };
        if (stop === null && this.#options.releases !== undefined) {
          // Subscribed after a refusal, then one more attempt at once: a release between the
          // refusal and the subscription is not missed.
          stop = await this.#options.releases(rootEventId, () => {
            signalled = true;
            wake?.();
          });
          continue;
        }
        if (!signalled) {
          const pause = Math.min(left, interval * (0.5 + Math.random()));
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, pause);
            function done() {
              clearTimeout(timer);
              wake = null;
              resolve();
            }
            wake = done;
          });
        }
        interval = Math.min(interval * 2, LAST_RETRY_MS);
      }
    } finally {
      stop?.();
      // The slot goes to the next waiter unless a handle now owns it.
      if (!this.#owned.has(rootEventId)) this.#handOff(rootEventId);
    }
  }

  /**
   * The in-process slot of an instance without a lock row, for a lock-free send (the store's
   * commit checks the row instead: `CommitRequest.lockFree`). `null` when a request of this
   * process holds or is acquiring the instance; else the function giving the slot back (to
   * this process's next waiter, if any), safe to call twice.
   */
  claimSlot(rootEventId: string): (() => void) | null {
    if (this.#held.has(rootEventId)) return null;
    this.#held.set(rootEventId, []);
    let claimed = true;
    return () => {
      if (!claimed) return;
      claimed = false;
      this.#handOff(rootEventId);
    };
  }

  /** True while this manager holds (or is acquiring) the instance's lock. */
  holds(rootEventId: string): boolean {
    return this.#held.has(rootEventId);
  }

  /**
   * Waits until the lock is free (or expired) or `timeoutMs` has passed: the handle, or `null`
   * on timeout (`withLock`: jobs). Queues behind this process's earlier requests like
   * `acquireAndLoad`; a row another process holds is retried with a growing, jittered interval
   * (25 ms up to 250 ms) so waiters of several processes do not retry in lockstep.
   */
  async acquire(rootEventId: string, options: AcquireOptions): Promise<LockHandle | null> {
    const deadline = Date.now() + options.timeoutMs;
    if (!(await this.#takeSlot(rootEventId, deadline))) return null;
    let interval = FIRST_RETRY_MS;
    try {
      for (;;) {
        const ownerId = newUlid();
        const acquired = await this.#store.tryAcquireLock({
          rootEventId,
          ownerId,
          ttlMs: options.ttlMs ?? this.#ttlMs,
          context: options.context ?? null,
        });
        if (acquired) return this.#handle(rootEventId, ownerId);
        const left = deadline - Date.now();
        if (left <= 0) return null;
        await sleep(Math.min(left, interval * (0.5 + Math.random())));
        interval = Math.min(interval * 2, LAST_RETRY_MS);
      }
    } finally {
      if (!this.#owned.has(rootEventId)) this.#handOff(rootEventId);
    }
  }

  /**
   * Takes the in-process slot of an instance: at once when free, else in order of arrival
   * once every earlier request of this process released it. `false` when `deadline` passed
   * first (the request left the queue).
   */
  async #takeSlot(rootEventId: string, deadline: number): Promise<boolean> {
    const queue = this.#held.get(rootEventId);
    if (queue === undefined) {
      this.#held.set(rootEventId, []);
      return true;
    }
    return this.#waitForSlot(queue, deadline);
  }

  /** Instances whose slot a live handle of this manager owns (set by `#handle`): its owner id. */
  readonly #owned = new Map<string, string>();

  /**
   * Deletes the lock row of every handle still live (steps a shutdown cut: requests still in
   * flight at its bound, abandoned jobs), so no row of this process outlives it. The steps
   * themselves may still run; their commits are fenced by the instance's sequence as any
   * commit without a lock row. Returns how many rows were deleted.
   */
  async releaseAll(): Promise<number> {
    let deleted = 0;
    for (const [rootEventId, ownerId] of [...this.#owned]) {
      if (await this.#store.releaseLock(rootEventId, ownerId)) deleted += 1;
      this.#options.onRelease?.(rootEventId);
    }
    return deleted;
  }

  /**
   * One `lockAndLoad` for an instance whose slot this call holds. `handOffOnRefusal`: give the
   * slot up when the row was not taken (a waiting caller keeps it for its next attempt).
   */
  async #lockAndLoad(
    rootEventId: string,
    context: string | undefined,
    ttlMs: number,
    handOffOnRefusal = true,
  ): Promise<{ lock: LockHandle | null; loaded: LockedLoad }> {
    const ownerId = newUlid();
    let loaded: LockedLoad | null = null;
    try {
      loaded = await this.#store.lockAndLoad({
        rootEventId,
        ownerId,
        ttlMs,
        context: context ?? null,
      });
    } finally {
      if (loaded?.acquired !== true && handOffOnRefusal) this.#handOff(rootEventId);
    }
    return { lock: loaded.acquired ? this.#handle(rootEventId, ownerId) : null, loaded };
  }

  /**
   * Waits in `queue` until the slot is handed over (`true`) or `deadline` passes (`false`, the
   * waiter leaves the queue).
   */
  #waitForSlot(queue: Waiter[], deadline: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(
        () => {
          const at = queue.indexOf(waiter);
          if (at !== -1) queue.splice(at, 1);
          resolve(false);
        },
        Math.max(0, deadline - Date.now()),
      );
      const waiter: Waiter = (handed) => {
        clearTimeout(timer);
        resolve(handed);
      };
      queue.push(waiter);
    });
  }

  /** The slot of an instance goes to its next waiter, or is freed when none waits. */
  #handOff(rootEventId: string): void {
    this.#owned.delete(rootEventId);
    const next = this.#held.get(rootEventId)?.shift();
    if (next) next(true);
    else this.#held.delete(rootEventId);
  }

  #handle(rootEventId: string, ownerId: string): LockHandle {
    let released: Promise<boolean> | undefined;
    this.#owned.set(rootEventId, ownerId);
    const forget = () => this.#handOff(rootEventId);
    const onRelease = this.#options.onRelease;
    return {
      rootEventId,
      ownerId,
      get released() {
        return released !== undefined;
      },
      release: () =>
        (released ??= this.#store
          .releaseLock(rootEventId, ownerId)
          .then((deleted) => {
            // Waiters of other processes hear of it without waiting for their backoff.
            if (deleted) onRelease?.(rootEventId);
            return deleted;
          })
          .finally(forget)),
      releasedByCommit: () => {
        if (released === undefined) {
          released = Promise.resolve(true);
          forget();
        }
      },
    };
  }
}
