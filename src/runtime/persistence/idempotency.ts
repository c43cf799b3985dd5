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
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { HOLDER_GONE_SQL, holderGoneCall, processHolder, type BackendHolder } from './holders.js';

/** The response stored for a key: replayed as it is to every retry. */
export interface StoredResponse {
  status: number;
  body: unknown;
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

// The claim's takeover rule: an expired record, or a pending one whose holder's lease ran out
// or whose holder process is known dead (it committed nothing, see the module comment).
// `gone` is each dialect's dead-holder test of the row (docs/persistence.md "Dead holders").
const takeover = (gone: string) => `WHERE machine_idempotency_keys.expires_at < excluded.created_at
  OR (machine_idempotency_keys.status = 'pending' AND (machine_idempotency_keys.locked_until < excluded.created_at
    OR ${gone}))`;
const upsertSet = (
  holder: string,
) => `SET fingerprint = excluded.fingerprint, owner_id = excluded.owner_id,
  status = 'pending', response_status = NULL, response_body = NULL, created_at = excluded.created_at,
  locked_until = excluded.locked_until, expires_at = excluded.expires_at, ${holder}`;

const SQLITE = {
  claim: `INSERT INTO machine_idempotency_keys
    (scope, idempotency_key, fingerprint, owner_id, status, created_at, locked_until, expires_at, holder)
    VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)
    ON CONFLICT (scope, idempotency_key) DO UPDATE ${upsertSet('holder = excluded.holder')}
    ${takeover(`${HOLDER_GONE_SQL}(machine_idempotency_keys.holder)`)}
    RETURNING owner_id`,
  read: `SELECT fingerprint, status, response_status, response_body FROM machine_idempotency_keys
    WHERE scope = ? AND idempotency_key = ?`,
  complete: `UPDATE machine_idempotency_keys SET status = 'done', response_status = ?, response_body = ?
    WHERE scope = ? AND idempotency_key = ? AND owner_id = ? AND status = 'pending'`,
  release: `DELETE FROM machine_idempotency_keys
    WHERE scope = ? AND idempotency_key = ? AND owner_id = ? AND status = 'pending'`,
  sweep: `DELETE FROM machine_idempotency_keys WHERE expires_at < ?`,
} as const;

// PostgreSQL uses the database clock, like the lock rows: processes on several hosts agree.
const POSTGRES = {
  claim: `INSERT INTO machine_idempotency_keys
    (scope, idempotency_key, fingerprint, owner_id, status, created_at, locked_until, expires_at,
      holder_pid, holder_start)
    VALUES ($1, $2, $3, $4, 'pending', clock_timestamp(),
      clock_timestamp() + $5 * interval '1 millisecond', clock_timestamp() + $6 * interval '1 millisecond',
      $7, $8)
    ON CONFLICT (scope, idempotency_key) DO UPDATE
    ${upsertSet('holder_pid = excluded.holder_pid, holder_start = excluded.holder_start')}
    ${takeover(holderGoneCall('machine_idempotency_keys.holder_pid', 'machine_idempotency_keys.holder_start'))}
    RETURNING owner_id`,
  read: `SELECT fingerprint, status, response_status, response_body FROM machine_idempotency_keys
    WHERE scope = $1 AND idempotency_key = $2`,
  complete: `UPDATE machine_idempotency_keys SET status = 'done', response_status = $1, response_body = $2::json
    WHERE scope = $3 AND idempotency_key = $4 AND owner_id = $5 AND status = 'pending'`,
  release: `DELETE FROM machine_idempotency_keys
    WHERE scope = $1 AND idempotency_key = $2 AND owner_id = $3 AND status = 'pending'`,
  sweep: `DELETE FROM machine_idempotency_keys WHERE expires_at < clock_timestamp()`,
} as const;

interface RecordRow {
  fingerprint: string;
  status: 'pending' | 'done';
  response_status: number | null;
  response_body: unknown;
}

function recordFromRow(row: RecordRow, parse: boolean): IdempotencyRecord {
  return {
    fingerprint: row.fingerprint,
    status: row.status,
    response:
      row.status === 'done' && row.response_status !== null
        ? {
            status: row.response_status,
            body: parse ? JSON.parse(row.response_body as string) : row.response_body,
          }
        : null,
  };
}

// A claim that neither inserted nor took over reads the record; if it vanished in between
// (swept, or released by its holder), claiming again settles it.
const CLAIM_ATTEMPTS = 3;

/** `machine_idempotency_keys` on a SQLite connection. */
export class SqliteIdempotencyKeys implements IdempotencyKeyStore {
  readonly #db: Database.Database;
  #statements: Record<keyof typeof SQLITE, Database.Statement> | undefined;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  get #sql(): Record<keyof typeof SQLITE, Database.Statement> {
    if (this.#statements === undefined) {
      const prepared = {} as Record<keyof typeof SQLITE, Database.Statement>;
      for (const name of Object.keys(SQLITE) as (keyof typeof SQLITE)[])
        prepared[name] = this.#db.prepare(SQLITE[name]);
      this.#statements = prepared;
    }
    return this.#statements;
  }

  async claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      const now = Date.now();
      const taken = this.#sql.claim.get(
        claim.scope,
        claim.key,
        claim.fingerprint,
        claim.ownerId,
        new Date(now).toISOString(),
        new Date(now + claim.leaseMs).toISOString(),
        new Date(now + claim.ttlMs).toISOString(),
        processHolder(),
      );
      if (taken !== undefined) return { kind: 'claimed' };
      const row = this.#sql.read.get(claim.scope, claim.key) as RecordRow | undefined;
      if (row !== undefined) return { kind: 'existing', record: recordFromRow(row, true) };
    }
    throw new Error(`Could not claim the Idempotency-Key '${claim.key}' of '${claim.scope}'.`);
  }

  /** The completion inside a running transaction (synchronous, as better-sqlite3 requires). */
  completeSync(completion: IdempotencyCompletion): boolean {
    const result = this.#sql.complete.run(
      completion.response.status,
      JSON.stringify(completion.response.body ?? null),
      completion.scope,
      completion.key,
      completion.ownerId,
    );
    return result.changes === 1;
  }

  async complete(completion: IdempotencyCompletion): Promise<boolean> {
    return this.completeSync(completion);
  }

  async release(scope: string, key: string, ownerId: string): Promise<void> {
    this.#sql.release.run(scope, key, ownerId);
  }

  async sweepExpired(): Promise<number> {
    return this.#sql.sweep.run(new Date().toISOString()).changes;
  }

  /** Statements are prepared against the schema: drop them after a migration. */
  reset(): void {
    this.#statements = undefined;
  }
}

/** `machine_idempotency_keys` through a PostgreSQL pool. */
export class PostgresIdempotencyKeys implements IdempotencyKeyStore {
  readonly #pool: pg.Pool;
  readonly #holder: () => Promise<BackendHolder>;

  /** `holder`: the backend claims name (the store's holder connection). */
  constructor(pool: pg.Pool, holder: () => Promise<BackendHolder>) {
    this.#pool = pool;
    this.#holder = holder;
  }

  #query<R extends pg.QueryResultRow>(
    name: keyof typeof POSTGRES,
    values: unknown[],
    client: pg.Pool | pg.PoolClient = this.#pool,
  ): Promise<pg.QueryResult<R>> {
    return client.query<R>({ name: `mr_idem_${name}`, text: POSTGRES[name], values });
  }

  async claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult> {
    const holder = await this.#holder();
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      const taken = await this.#query('claim', [
        claim.scope,
        claim.key,
        claim.fingerprint,
        claim.ownerId,
        claim.leaseMs,
        claim.ttlMs,
        holder.pid,
        holder.start,
      ]);
      if (taken.rowCount === 1) return { kind: 'claimed' };
      const read = await this.#query<RecordRow>('read', [claim.scope, claim.key]);
      const row = read.rows[0];
      if (row !== undefined) return { kind: 'existing', record: recordFromRow(row, false) };
    }
    throw new Error(`Could not claim the Idempotency-Key '${claim.key}' of '${claim.scope}'.`);
  }

  /** The completion on a client inside a commit's transaction. */
  async completeOn(
    client: pg.Pool | pg.PoolClient,
    completion: IdempotencyCompletion,
  ): Promise<boolean> {
    const result = await this.#query(
      'complete',
      [
        completion.response.status,
        JSON.stringify(completion.response.body ?? null),
        completion.scope,
        completion.key,
        completion.ownerId,
      ],
      client,
    );
    return result.rowCount === 1;
  }

  complete(completion: IdempotencyCompletion): Promise<boolean> {
    return this.completeOn(this.#pool, completion);
  }

  async release(scope: string, key: string, ownerId: string): Promise<void> {
    await this.#query('release', [scope, key, ownerId]);
  }

  async sweepExpired(): Promise<number> {
    return (await this.#query('sweep', [])).rowCount ?? 0;
  }
}

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
