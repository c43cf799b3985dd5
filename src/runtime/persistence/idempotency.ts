/**
 * `machine_idempotency_keys`: the Idempotency-Key records of command endpoints (IETF draft
 * `Idempotency-Key` header), one table of their own, one implementation per backend.
 *
 * A record is claimed before the request runs (`pending`, with a short lease), and becomes
 * `done` with the response the first request got. On the send path that write is part of the
 * event's own commit (`CommitRequest.idempotency`), so a crash cannot keep the event and lose
 * its stored response: a `pending` record whose lease ran out, or whose holder process is known
 * dead (as for lock rows), therefore means the first request committed nothing, and a retry may
 * take it over and run again.
 */

/** The response stored for a key: replayed as it is to every retry. */
export interface StoredResponse {
  status: number;
  body: unknown;
  /**
   * The `ETag` header of the first answer (the instance version it showed), so a replay names
   * the same version; absent when that answer had none (and on records stored before it was kept).
   */
  etag?: string;
}

/** Arguments of {@link IdempotencyKeyStore.claim}. */
export interface IdempotencyClaim {
  /** Route name and instance (`ticket.comment 01J...`): a key is only the same on both. */
  scope: string;
  /** The `Idempotency-Key` header value. */
  key: string;
  /** Hash of the request (body and query): the same key with another request is refused. */
  fingerprint: string;
  /** ULID of the request holding the claim. */
  ownerId: string;
  /** How long a `pending` claim blocks retries before it may be taken over (its holder died). */
  leaseMs: number;
  /** Lifetime of the record: after it, the key is free again. */
  ttlMs: number;
}

/** A record found by a claim that could not take it. */
export interface IdempotencyRecord {
  fingerprint: string;
  /** `pending`: the first request is still running (or died within its lease). */
  status: 'pending' | 'done';
  /** Set when `done`. */
  response: StoredResponse | null;
}

/** Outcome of a claim. */
export type IdempotencyClaimResult =
  { kind: 'claimed' } | { kind: 'existing'; record: IdempotencyRecord };

/** The `pending` -> `done` write of a claim (inside a commit, or on its own). */
export interface IdempotencyCompletion {
  scope: string;
  key: string;
  ownerId: string;
  response: StoredResponse;
}

/** The Idempotency-Key records of a store. */
export interface IdempotencyKeyStore {
  /**
   * Inserts a `pending` record, or takes over one that expired (or whose `pending` lease ran
   * out). One atomic statement: two requests with the same key never both claim it.
   */
  claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult>;
  /** Stores the response of a claim still held by `ownerId`; `false` when it was lost. */
  complete(completion: IdempotencyCompletion): Promise<boolean>;
  /** Deletes a `pending` claim of `ownerId` (nothing was committed: a retry runs again). */
  release(scope: string, key: string, ownerId: string): Promise<void>;
  /** Deletes expired records; returns how many. */
  sweepExpired(): Promise<number>;
}

/**
 * The claim of a commit's `idempotency` was lost (its lease ran out and another request took
 * the key over): the commit rolls back. Internal to persistence.
 */
export class IdempotencyClaimLostError extends Error {
  constructor(completion: Pick<IdempotencyCompletion, 'scope' | 'key'>) {
    super(
      `The Idempotency-Key '${completion.key}' of '${completion.scope}' is no longer held by this request.`,
    );
    this.name = 'IdempotencyClaimLostError';
  }
}

export const IDEMPOTENCY_TABLE_SQLITE = `
CREATE TABLE machine_idempotency_keys (
  scope           TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint     TEXT NOT NULL,
  owner_id        TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'done')),
  response_status INTEGER,
  response_body   TEXT,
  created_at      TEXT NOT NULL,
  locked_until    TEXT NOT NULL,
  expires_at      TEXT NOT NULL,
  PRIMARY KEY (scope, idempotency_key)
);
CREATE INDEX machine_idempotency_keys_expires_idx ON machine_idempotency_keys (expires_at);
`;

export const IDEMPOTENCY_TABLE_POSTGRES = `
CREATE TABLE machine_idempotency_keys (
  scope           text NOT NULL,
  idempotency_key text NOT NULL,
  fingerprint     text NOT NULL,
  owner_id        text NOT NULL,
  status          text NOT NULL CHECK (status IN ('pending', 'done')),
  response_status integer,
  response_body   json,
  created_at      timestamptz NOT NULL,
  locked_until    timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (scope, idempotency_key)
);
CREATE INDEX machine_idempotency_keys_expires_idx ON machine_idempotency_keys (expires_at);
`;

interface MemoryRecord extends IdempotencyRecord {
  ownerId: string;
  lockedUntil: number;
  expiresAt: number;
}

/** Idempotency-Key records in process memory (the memory store). */
export class MemoryIdempotencyKeys implements IdempotencyKeyStore {
  readonly #records = new Map<string, MemoryRecord>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult> {
    const id = `${claim.scope}\u0000${claim.key}`;
    const now = this.#now();
    const existing = this.#records.get(id);
    if (
      existing !== undefined &&
      !(existing.expiresAt < now) &&
      !(existing.status === 'pending' && existing.lockedUntil < now)
    ) {
      return {
        kind: 'existing',
        record: {
          fingerprint: existing.fingerprint,
          status: existing.status,
          response: structuredClone(existing.response),
        },
      };
    }
    this.#records.set(id, {
      fingerprint: claim.fingerprint,
      status: 'pending',
      response: null,
      ownerId: claim.ownerId,
      lockedUntil: now + claim.leaseMs,
      expiresAt: now + claim.ttlMs,
    });
    return { kind: 'claimed' };
  }

  /** Whether `complete` would succeed (checked before a memory commit applies anything). */
  holds(completion: Pick<IdempotencyCompletion, 'scope' | 'key' | 'ownerId'>): boolean {
    const record = this.#records.get(`${completion.scope}\u0000${completion.key}`);
    return record?.ownerId === completion.ownerId && record.status === 'pending';
  }

  completeSync(completion: IdempotencyCompletion): boolean {
    if (!this.holds(completion)) return false;
    const record = this.#records.get(`${completion.scope}\u0000${completion.key}`)!;
    record.status = 'done';
    record.response = structuredClone(completion.response);
    return true;
  }

  async complete(completion: IdempotencyCompletion): Promise<boolean> {
    return this.completeSync(completion);
  }

  async release(scope: string, key: string, ownerId: string): Promise<void> {
    if (this.holds({ scope, key, ownerId })) this.#records.delete(`${scope}\u0000${key}`);
  }

  async sweepExpired(): Promise<number> {
    const now = this.#now();
    let deleted = 0;
    for (const [id, record] of this.#records) {
      if (record.expiresAt < now) {
        this.#records.delete(id);
        deleted += 1;
      }
    }
    return deleted;
  }
}
