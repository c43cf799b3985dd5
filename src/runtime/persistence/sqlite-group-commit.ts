/**
 * Group commits of the SQLite store (docs/persistence.md "Group commits"): the commits queued
 * in one turn of the event loop are written together, after its I/O callbacks, in one write
 * transaction, each inside a savepoint of its own, so a refused one (fenced out, locked) writes
 * nothing and does not affect the others.
 */
// Taken from the module, not the global: a test's fake timers replace the global one, and
// queued commits must still be written.
import { setImmediate as afterIo } from 'node:timers';
import type Database from 'better-sqlite3';
import { isBusy } from './sqlite-statements.js';
import { StoreBusyError, type CommitRequest } from './store.js';

/**
 * Most commits per group transaction: a large burst is written in several transactions, so the
 * database's write lock, which other processes wait for, is held for a bounded time.
 */
export const COMMIT_GROUP_MAX = 64;

/** A commit waiting for its group's transaction. */
interface QueuedCommit {
  request: CommitRequest;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Reads that ride along at the end of a group's write transaction (the turn's read batch,
 * sqlite-read-batch.ts): `inWriteTransaction` runs them and returns how to settle them once the
 * transaction ended (committed or not), or undefined when none were queued.
 */
export interface ReadsAlong {
  readonly pending: boolean;
  inWriteTransaction(): ((committed: boolean) => void) | undefined;
}

/** A part of a group failed in a way that rolled the whole transaction back (SQLITE_FULL, I/O). */
class GroupRolledBack extends Error {}

/** The commit queue of one connection. */
export class GroupCommits {
  readonly #commitAloneTransaction: (request: CommitRequest) => void;
  readonly #groupTransaction: Database.Transaction<
    (group: readonly QueuedCommit[], withReads: boolean) => unknown[]
  >;
  readonly #committed: () => void;
  readonly #reads: ReadsAlong | undefined;
  /** How to settle the reads the running group transaction took (undefined: none). */
  #settleReads: ((committed: boolean) => void) | undefined;
  /** Commits of this turn of the event loop, written together after its I/O callbacks. */
  #queued: QueuedCommit[] = [];

  /**
   * @param apply writes one commit (synchronously, inside the transaction it is given)
   * @param committed called once per commit that reached the file
   * @param reads the turn's queued reads, run at the end of the turn's last group transaction
   *   (one transaction for the turn instead of a write and a read one)
   */
  constructor(
    db: Database.Database,
    apply: (request: CommitRequest) => void,
    committed: () => void,
    reads?: ReadsAlong,
  ) {
    this.#committed = committed;
    this.#reads = reads;
    const commit = db.transaction(apply);
    // IMMEDIATE takes the write lock at BEGIN: a deferred transaction that upgrades later can
    // fail with SQLITE_BUSY without waiting when another process writes concurrently.
    this.#commitAloneTransaction = (request) => commit.immediate(request);
    this.#groupTransaction = db.transaction(
      (group: readonly QueuedCommit[], withReads: boolean) => {
        const outcomes: unknown[] = [];
        for (const queued of group) {
          try {
            // Called inside the group's transaction, better-sqlite3 wraps it in a savepoint.
            commit(queued.request);
            outcomes.push(undefined);
          } catch (error) {
            // A refusal (fence, lock, hook) rolled back its savepoint only; an error that ended
            // the transaction (disk full, I/O) took the others' writes with it.
            if (!db.inTransaction) throw new GroupRolledBack('group rolled back', { cause: error });
            outcomes.push(error ?? new Error('commit failed'));
          }
        }
        // Last, so they see the group's commits (answered only once COMMIT returned). A read
        // error that ended the transaction: as a commit's, everything again on its own.
        if (withReads) {
          this.#settleReads = this.#reads?.inWriteTransaction();
          if (!db.inTransaction) throw new GroupRolledBack('group rolled back by a read');
        }
        return outcomes;
      },
    );
  }

  /** Queues a commit; settles once its group's transaction committed (or refused it). */
  enqueue(request: CommitRequest): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.#queued.push({ request, resolve, reject }) === 1) afterIo(this.flush);
    });
  }

  /** Writes the queued commits now, in groups of at most COMMIT_GROUP_MAX (alone when only one). */
  readonly flush = (): void => {
    const queued = this.#queued;
    this.#queued = [];
    for (let start = 0; start < queued.length; start += COMMIT_GROUP_MAX)
      this.#commitGroup(
        queued.slice(start, start + COMMIT_GROUP_MAX),
        start + COMMIT_GROUP_MAX >= queued.length && this.#reads?.pending === true,
      );
  };

  #commitGroup(group: QueuedCommit[], withReads: boolean): void {
    if (group.length === 1 && !withReads) {
      this.#commitAlone(group[0]!);
      return;
    }
    let outcomes: unknown[];
    try {
      outcomes = this.#groupTransaction.immediate(group, withReads);
    } catch (error) {
      // Not committed: the reads it took (if it got that far) run again on their own, after
      // the commits are retried or refused.
      const settleReads = this.#settleReads;
      this.#settleReads = undefined;
      this.#finishGroupFailure(group, error);
      settleReads?.(false);
      return;
    }
    const settleReads = this.#settleReads;
    this.#settleReads = undefined;
    for (let index = 0; index < group.length; index += 1) {
      const outcome = outcomes[index];
      if (outcome === undefined) {
        this.#committed();
        group[index]!.resolve();
      } else group[index]!.reject(outcome);
    }
    settleReads?.(true);
  }

  #finishGroupFailure(group: readonly QueuedCommit[], error: unknown): void {
    if (error instanceof GroupRolledBack) {
      // Nothing of the group was written: each commit again, in a transaction of its own.
      for (const queued of group) this.#commitAlone(queued);
      return;
    }
    // BEGIN or COMMIT failed (busy past the timeout, closed): nothing written, for anyone.
    const failure = isBusy(error) ? new StoreBusyError(error) : error;
    for (const queued of group) queued.reject(failure);
  }

  #commitAlone(queued: QueuedCommit): void {
    try {
      this.#commitAloneTransaction(queued.request);
    } catch (error) {
      // Another connection kept the database locked past the busy timeout: nothing applied.
      queued.reject(isBusy(error) ? new StoreBusyError(error) : error);
      return;
    }
    this.#committed();
    queued.resolve();
  }
}
