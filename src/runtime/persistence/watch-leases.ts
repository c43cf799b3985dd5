/**
 * Watch leases (PostgreSQL, migration 19): `machine_instances.watched_until` says that some
 * process, any process, follows the instance's commits (a state stream, a waiting read, a
 * sender waiting for its lock). The one-statement commit returns it with the row it updates, so
 * a commit of an instance nobody watches sends no `NOTIFY`: two round trips per event instead
 * of three (bench/scale/round-trips.ts).
 *
 * Why a column of the instance row, and why that is enough across processes: the commit's
 * `UPDATE ... RETURNING` returns the newest version of the row it locked, so a lease written
 * before it is always seen. A lease written after it waits for the commit's row lock; the
 * watcher then reads the instance (the feed's subscribe resolves only after the lease is
 * written) and so sees that commit by its read instead of by a notice. A separate table would
 * be read at the commit's snapshot and miss a lease committed while the commit ran.
 *
 * A lease lasts {@link LEASE_SECONDS} by the database's clock (both sides read `now()`), and
 * each process renews those of the instances it still watches well before they end. A process
 * that stops watching, or dies, leaves its lease to run out: commits of that instance keep
 * notifying until then (a `NOTIFY` nobody needed, never a notice missed).
 */
import type pg from 'pg';

/** Migration 19 on PostgreSQL (SQLite's feed never leaves its process: nothing to record). */
export const WATCH_LEASES_POSTGRES = `ALTER TABLE machine_instances ADD COLUMN watched_until timestamptz;`;

/** How long a lease lasts, in seconds of the database's clock. */
export const LEASE_SECONDS = 300;

/** Timing of the leases (shorter in tests). */
export interface WatchLeaseTiming {
  /** Seconds a lease lasts. */
  leaseSeconds: number;
  /** A lease this process took longer ago than this is taken again (renewed). */
  renewAfterMs: number;
}

const DEFAULT_TIMING: WatchLeaseTiming = { leaseSeconds: LEASE_SECONDS, renewAfterMs: 60_000 };

/**
 * Sets the leases of `$1` (ids) to end `$2` seconds from now, unless one already ends later
 * than `$3` seconds from now (another process renewed it: no row version written for nothing).
 */
const TAKE = `UPDATE machine_instances SET watched_until = now() + make_interval(secs => $2)
  WHERE root_event_id = ANY($1::text[])
    AND (watched_until IS NULL OR watched_until < now() + make_interval(secs => $3))`;

/** The leases of one process. */
export class WatchLeases {
  readonly #pool: pg.Pool;
  readonly #timing: WatchLeaseTiming;
  /** When this process last made sure of each id's lease (`performance.now()` before asking). */
  readonly #taken = new Map<string, number>();
  /** Leases being taken: a second watcher of the id waits for the same query. */
  readonly #taking = new Map<string, Promise<void>>();
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    pool: pg.Pool,
    onError: (error: unknown) => void,
    timing: Partial<WatchLeaseTiming> = {},
  ) {
    this.#pool = pool;
    this.#onError = onError;
    this.#timing = { ...DEFAULT_TIMING, ...timing };
  }

  /**
   * Resolves once `id`'s lease is in effect: every commit of the instance from then on sends
   * its notice. `watched` lists what this process still watches; the renewals read it.
   */
  take(id: string, watched: () => Iterable<string>): Promise<void> {
    const at = this.#taken.get(id);
    if (at !== undefined && performance.now() - at < this.#timing.renewAfterMs)
      return Promise.resolve();
    let taking = this.#taking.get(id);
    if (taking === undefined) {
      const started = performance.now();
      taking = this.#write([id]).then(
        () => {
          this.#taking.delete(id);
          this.#taken.set(id, started);
          this.#schedule(watched);
        },
        (error: unknown) => {
          this.#taking.delete(id);
          throw error;
        },
      );
      this.#taking.set(id, taking);
    }
    return taking;
  }

  /** Stops renewing (the leases run out by themselves). */
  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#taken.clear();
  }

  #write(ids: string[]): Promise<unknown> {
    const { leaseSeconds, renewAfterMs } = this.#timing;
    // A lease that still runs longer than a renewal period beyond the next renewal is left.
    const enough = leaseSeconds - (2 * renewAfterMs) / 1000;
    return this.#pool.query(TAKE, [ids, leaseSeconds, enough]);
  }

  /**
   * Renews, every half renewal period, the leases of the ids still watched that were taken a
   * renewal period ago; forgets the others. The timer stops when nothing is watched.
   */
  #schedule(watched: () => Iterable<string>): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => {
      const now = performance.now();
      const still = new Set(watched());
      const due: string[] = [];
      for (const [id, at] of this.#taken) {
        if (!still.has(id)) this.#taken.delete(id);
        else if (now - at >= this.#timing.renewAfterMs) due.push(id);
      }
      if (this.#taken.size === 0) this.close();
      if (due.length === 0) return;
      this.#write(due).then(
        () => {
          for (const id of due) if (this.#taken.has(id)) this.#taken.set(id, now);
        },
        // Left as they were: the next tick tries again, well within the lease.
        this.#onError,
      );
    }, this.#timing.renewAfterMs / 2);
    this.#timer.unref();
  }
}
