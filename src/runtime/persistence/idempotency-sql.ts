/**
 * The SQL backends of `machine_idempotency_keys` (SQLite and PostgreSQL): the claim's upsert
 * with its takeover rule, reads, completion, release and the expiry sweep.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { HOLDER_GONE_SQL, holderGoneCall, processHolder, type BackendHolder } from './holders.js';
import type {
  IdempotencyClaim,
  IdempotencyClaimResult,
  IdempotencyCompletion,
  IdempotencyKeyStore,
  IdempotencyRecord,
} from './idempotency.js';

// The claim's takeover rule: an expired record, or a pending one whose holder's lease ran out
// or whose holder process is known dead (it committed nothing, see the module comment).
// `gone` is each dialect's dead-holder test of the row (docs/persistence.md "Dead holders").
const takeover = (gone: string) => `WHERE machine_idempotency_keys.expires_at < excluded.created_at
  OR (machine_idempotency_keys.status = 'pending' AND (machine_idempotency_keys.locked_until < excluded.created_at
    OR ${gone}))`;
const upsertSet = (
  holder: string,
) => `SET fingerprint = excluded.fingerprint, owner_id = excluded.owner_id,
  status = 'pending', response_status = NULL, response_body = NULL, response_etag = NULL,
  created_at = excluded.created_at,
  locked_until = excluded.locked_until, expires_at = excluded.expires_at, ${holder}`;

const SQLITE = {
  claim: `INSERT INTO machine_idempotency_keys
    (scope, idempotency_key, fingerprint, owner_id, status, created_at, locked_until, expires_at, holder)
    VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)
    ON CONFLICT (scope, idempotency_key) DO UPDATE ${upsertSet('holder = excluded.holder')}
    ${takeover(`${HOLDER_GONE_SQL}(machine_idempotency_keys.holder)`)}
    RETURNING owner_id`,
  read: `SELECT fingerprint, status, response_status, response_body, response_etag FROM machine_idempotency_keys
    WHERE scope = ? AND idempotency_key = ?`,
  complete: `UPDATE machine_idempotency_keys SET status = 'done', response_status = ?, response_body = ?, response_etag = ?
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
  read: `SELECT fingerprint, status, response_status, response_body, response_etag FROM machine_idempotency_keys
    WHERE scope = $1 AND idempotency_key = $2`,
  complete: `UPDATE machine_idempotency_keys SET status = 'done', response_status = $1, response_body = $2::json,
    response_etag = $3 WHERE scope = $4 AND idempotency_key = $5 AND owner_id = $6 AND status = 'pending'`,
  release: `DELETE FROM machine_idempotency_keys
    WHERE scope = $1 AND idempotency_key = $2 AND owner_id = $3 AND status = 'pending'`,
  sweep: `DELETE FROM machine_idempotency_keys WHERE expires_at < clock_timestamp()`,
} as const;

interface RecordRow {
  fingerprint: string;
  status: 'pending' | 'done';
  response_status: number | null;
  response_body: unknown;
  response_etag: string | null;
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
            ...(row.response_etag === null ? {} : { etag: row.response_etag }),
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
      completion.response.etag ?? null,
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
        completion.response.etag ?? null,
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
