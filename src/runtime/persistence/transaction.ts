/**
 * A store transaction as seen by someone writing into it besides the store: the job queue's
 * transactional outbox. When the queue keeps its jobs in the store's database (the embedded
 * `machine_jobs` table on SQLite, pg-boss beside the store on PostgreSQL), the jobs a macrostep
 * causes are written in the macrostep's own commit, so a crash can never keep the commit and
 * lose the job (or the reverse).
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';

/** The open transaction of a commit, by dialect. */
export type StoreTransaction =
  /** Inside better-sqlite3's transaction function: writes must be synchronous. */
  | { kind: 'sqlite'; database: Database.Database }
  /** Between `BEGIN` and `COMMIT` on this pooled client. */
  | { kind: 'postgres'; client: pg.PoolClient };

/**
 * Runs inside a commit's transaction, after the store's own writes. SQLite hooks must return
 * nothing (better-sqlite3 transactions cannot await); a hook that throws rolls the commit back.
 */
export type TransactionHook = (transaction: StoreTransaction) => void | Promise<void>;

/**
 * Thrown by a model binder's transaction hook when the record got a machine from another
 * request in the meantime: the commit creating a second machine rolls back whole, and the
 * request continues on the record's machine. Internal: never reaches a client.
 */
export class RecordAlreadyBoundError extends Error {
  constructor(record: string) {
    super(`Record ${record} is already bound to a machine.`);
    this.name = 'RecordAlreadyBoundError';
  }
}

/** Runs `hooks` in order in one transaction (synchronously while none returns a promise). */
export function chainHooks(hooks: readonly TransactionHook[]): TransactionHook {
  return (transaction) => {
    for (let index = 0; index < hooks.length; index += 1) {
      const pending = hooks[index]!(transaction);
      if (pending instanceof Promise) {
        return pending.then(async () => {
          for (const hook of hooks.slice(index + 1)) await hook(transaction);
        });
      }
    }
  };
}
