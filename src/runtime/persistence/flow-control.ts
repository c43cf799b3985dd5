/**
 * The counters of flow control (docs/http.md "Flow control"): token buckets (rate), in-flight
 * slots (concurrency) and the latest request of a burst (debounce), per route scope and key.
 *
 * PostgreSQL keeps them in three unlogged tables shared by every process (flow-control-sql.ts):
 * one statement per check, atomic on its row. The memory store and SQLite keep them in the
 * process (a SQLite database serves one server process), in {@link MemoryFlowControl}.
 *
 * Rate limits are a GCRA token bucket: a key's row holds its theoretical arrival time `tat`;
 * a request is let through when `max(tat, now) - now <= interval - interval / limit` and then
 * moves `tat` on by `interval / limit`. `limit` requests can come at once, then one per
 * `interval / limit`; a refusal says exactly when the next one is let through.
 */

/** A rate limit: `limit` requests per `interval` ms. */
export interface FlowRate {
  limit: number;
  interval: number;
}

/** Outcome of taking a token: `retryAfterMs` until one is free when refused. */
export type FlowTokenResult = { granted: true } | { granted: false; retryAfterMs: number };

/** An in-flight slot held by one request; give it back with `releaseSlot`. */
export interface FlowSlot {
  scope: string;
  key: string;
  slot: number;
  ownerId: string;
}

/** The flow-control counters of a store. */
export interface FlowControlStore {
  /** Takes a token of `key`'s bucket in `scope`, or says how long until one is free. */
  takeToken(scope: string, key: string, rate: FlowRate): Promise<FlowTokenResult>;
  /**
   * Takes one of `limit` in-flight slots of `key` in `scope` for at most `leaseMs` (a holder
   * that dies frees its slot at once on PostgreSQL, see docs/persistence.md "Dead holders");
   * `null` when all are held.
   */
  acquireSlot(
    scope: string,
    key: string,
    limit: number,
    ownerId: string,
    leaseMs: number,
  ): Promise<FlowSlot | null>;
  /** Gives a slot back (nothing when its lease ran out and another request took it). */
  releaseSlot(slot: FlowSlot): Promise<void>;
  /**
   * Makes `ownerId` the latest request of `key`'s burst in `scope` (starting a burst when there
   * is none); the ms since the burst's first request, 0 for the first (debounce's `maxWait`).
   */
  markLatest(scope: string, key: string, ownerId: string): Promise<number>;
  /** Whether `ownerId` is still the latest of its burst; `true` also ends the burst. */
  takeLatest(scope: string, key: string, ownerId: string): Promise<boolean>;
  /**
   * Deletes the rows of keys idle for `idleMs` (run by the expired-row sweep,
   * engine/lock-sweeper.ts): full buckets, slot rows of keys none of whose slots was taken
   * since and none is held, bursts not marked since (their latest request died unanswered).
   * Each is what a key's next request would make again: nothing a request sees changes. How
   * many rows were deleted.
   */
  sweepIdle(idleMs: number): Promise<number>;
}

/**
 * How long a key's flow-control rows stay once idle: far longer than any window, lease or
 * wait, so a row a request may still use is never deleted (and a process trusts its knowledge
 * that a key's slot rows exist for less than this, flow-control-sql.ts).
 */
export const FLOW_IDLE_MS = 3_600_000;

/** GCRA: the new `tat`, or how long until a request is let through. */
export function gcra(
  tat: number | undefined,
  now: number,
  rate: FlowRate,
): { granted: true; tat: number } | { granted: false; retryAfterMs: number } {
  const emission = rate.interval / rate.limit;
  const tolerance = rate.interval - emission;
  const start = Math.max(tat ?? now, now);
  if (start - now <= tolerance) return { granted: true, tat: start + emission };
  return { granted: false, retryAfterMs: start - tolerance - now };
}

/** Entries kept before idle ones are dropped (full buckets, keys with nothing in flight). */
const MEMORY_SWEEP_AT = 10_000;

/** Flow-control counters in process memory (the memory and SQLite stores). */
export class MemoryFlowControl implements FlowControlStore {
  readonly #tats = new Map<string, number>();
  readonly #inFlight = new Map<string, number>();
  /** The latest request of each key's burst, and when the burst began. */
  readonly #latest = new Map<string, { ownerId: string; firstAt: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async takeToken(scope: string, key: string, rate: FlowRate): Promise<FlowTokenResult> {
    const id = `${scope}\u0000${key}`;
    const now = this.#now();
    const result = gcra(this.#tats.get(id), now, rate);
    if (!result.granted) return result;
    if (this.#tats.size >= MEMORY_SWEEP_AT && !this.#tats.has(id)) {
      // A bucket whose tat has passed is full: dropping it changes nothing.
      for (const [other, tat] of this.#tats) if (tat <= now) this.#tats.delete(other);
    }
    this.#tats.set(id, result.tat);
    return { granted: true };
  }

  async acquireSlot(
    scope: string,
    key: string,
    limit: number,
    ownerId: string,
  ): Promise<FlowSlot | null> {
    const id = `${scope}\u0000${key}`;
    const held = this.#inFlight.get(id) ?? 0;
    if (held >= limit) return null;
    this.#inFlight.set(id, held + 1);
    return { scope, key, slot: held, ownerId };
  }

  async releaseSlot(slot: FlowSlot): Promise<void> {
    const id = `${slot.scope}\u0000${slot.key}`;
    const held = (this.#inFlight.get(id) ?? 1) - 1;
    if (held <= 0) this.#inFlight.delete(id);
    else this.#inFlight.set(id, held);
  }

  async markLatest(scope: string, key: string, ownerId: string): Promise<number> {
    const id = `${scope}\u0000${key}`;
    const now = this.#now();
    const firstAt = this.#latest.get(id)?.firstAt ?? now;
    this.#latest.set(id, { ownerId, firstAt });
    return now - firstAt;
  }

  async takeLatest(scope: string, key: string, ownerId: string): Promise<boolean> {
    const id = `${scope}\u0000${key}`;
    if (this.#latest.get(id)?.ownerId !== ownerId) return false;
    this.#latest.delete(id);
    return true;
  }

  /**
   * In the process, slots and bursts are gone with the requests that held them: only full
   * buckets stay behind.
   */
  async sweepIdle(idleMs: number): Promise<number> {
    const before = this.#now() - idleMs;
    let deleted = 0;
    for (const [id, tat] of this.#tats)
      if (tat < before) {
        this.#tats.delete(id);
        deleted += 1;
      }
    return deleted;
  }
}

/**
 * The PostgreSQL tables (migration 17; migration 21 adds what the idle sweep and debounce's
 * `maxWait` read: {@link FLOW_CONTROL_IDLE_POSTGRES}). Unlogged, like lock rows: they need no durability (a
 * server crash empties them, which only refills buckets and frees slots) and so write no WAL.
 * Times are ms since the epoch on the database clock, which every process shares.
 */
export const FLOW_CONTROL_TABLES_POSTGRES = `
CREATE UNLOGGED TABLE machine_flow_buckets (
  scope    text NOT NULL,
  flow_key text NOT NULL,
  tat      double precision NOT NULL,
  seen_at  double precision NOT NULL,
  granted  boolean NOT NULL,
  PRIMARY KEY (scope, flow_key)
);
CREATE UNLOGGED TABLE machine_flow_slots (
  scope        text NOT NULL,
  flow_key     text NOT NULL,
  slot         integer NOT NULL,
  owner_id     text,
  expires_at   double precision,
  holder_pid   integer,
  holder_start timestamptz,
  PRIMARY KEY (scope, flow_key, slot)
);
CREATE UNLOGGED TABLE machine_flow_latest (
  scope    text NOT NULL,
  flow_key text NOT NULL,
  owner_id text NOT NULL,
  PRIMARY KEY (scope, flow_key)
);
`;

/**
 * Migration 21: when a slot was last taken (`used_at`), when a burst began (`first_at`, for
 * debounce's `maxWait`) and was last marked (`marked_at`), ms on the database clock. Rows from
 * before read 0: idle since ever, swept at the first sweep unless held.
 */
export const FLOW_CONTROL_IDLE_POSTGRES = `
ALTER TABLE machine_flow_slots ADD COLUMN used_at double precision NOT NULL DEFAULT 0;
ALTER TABLE machine_flow_latest ADD COLUMN first_at double precision NOT NULL DEFAULT 0,
  ADD COLUMN marked_at double precision NOT NULL DEFAULT 0;
`;
