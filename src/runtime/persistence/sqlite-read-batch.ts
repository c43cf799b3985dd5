/**
 * Batched reads of the SQLite store (docs/persistence.md "Read batches"): the `loadForRead`s asked in
 * one turn of the event loop run together after its I/O callbacks, in one read transaction.
 *
 * Why: every statement outside a transaction opens and closes a read transaction of its own,
 * and in WAL mode that is file and shared-memory locks (system calls) on both ends, a large
 * part of a point read's cost; one transaction for the turn's reads pays them once.
 *
 * Why it misses no commit: the transaction begins after every read of the batch was asked, so
 * any commit that finished before a read was asked (by this process or another) is in the
 * snapshot. Starting it at the first read instead would let a later read of the same turn miss
 * a commit that landed in between. The snapshot is one consistent state, as a single
 * statement's is: a read never sees part of a commit.
 *
 * When the turn's group commit runs first (sqlite-group-commit.ts), the reads queued by then run
 * at the end of its write transaction instead ({@link ReadBatches.inWriteTransaction}): that
 * transaction too began after they were asked, and they are answered only once its COMMIT
 * returned, so they see a committed state, newer than they need. One transaction per turn
 * instead of two: what a lock-free send reads and what the sends before it commit share it.
 */
// Taken from the module, not the global: a test's fake timers replace the global one, and
// queued reads must still be answered.
import { setImmediate as afterIo } from 'node:timers';
import type Database from 'better-sqlite3';
import type { ReadLoad } from './store.js';

/** A read waiting for its batch. */
interface QueuedRead {
  rootEventId: string;
  resolve: (load: ReadLoad | null) => void;
  reject: (error: unknown) => void;
}

/** The read queue of one connection. */
export class ReadBatches {
  readonly #db: Database.Database;
  readonly #read: (rootEventId: string) => ReadLoad | null;
  #begin: Database.Statement | undefined;
  #commit: Database.Statement | undefined;
  #queued: QueuedRead[] = [];

  /** @param read one read, synchronously (inside the batch's transaction when there is one) */
  constructor(db: Database.Database, read: (rootEventId: string) => ReadLoad | null) {
    this.#db = db;
    this.#read = read;
  }

  /** Answers once the read ran in this turn's batch. */
  enqueue(rootEventId: string): Promise<ReadLoad | null> {
    return new Promise((resolve, reject) => {
      if (this.#queued.length === 0) afterIo(this.#run);
      this.#queued.push({ rootEventId, resolve, reject });
    });
  }

  /** Runs the queued reads now (the store closes). */
  flush(): void {
    if (this.#queued.length > 0) this.#run();
  }

  /**
   * Runs the queued reads inside the caller's write transaction (a group commit's, after its
   * commits), without answering them: returns `settle`, to be called once that transaction
   * ended, with whether it committed. Committed: each read is answered with what it read. Not
   * (rolled back, COMMIT failed): what they read may never have been committed, so they run
   * again in a transaction of their own and are answered from that. Undefined: none queued.
   */
  inWriteTransaction(): ((committed: boolean) => void) | undefined {
    const batch = this.#queued;
    if (batch.length === 0) return undefined;
    this.#queued = [];
    const loads: (ReadLoad | null)[] = [];
    let errors: Map<number, unknown> | undefined;
    for (let index = 0; index < batch.length; index += 1) {
      try {
        loads.push(this.#read(batch[index]!.rootEventId));
      } catch (error) {
        loads.push(null);
        (errors ??= new Map()).set(index, error);
      }
    }
    return (committed) => {
      if (!committed) {
        this.#runBatch(batch);
        return;
      }
      for (let index = 0; index < batch.length; index += 1) {
        if (errors?.has(index) === true) batch[index]!.reject(errors.get(index));
        else batch[index]!.resolve(loads[index]!);
      }
    };
  }

  /** True when reads wait for this turn's batch. */
  get pending(): boolean {
    return this.#queued.length > 0;
  }

  readonly #run = (): void => {
    const batch = this.#queued;
    if (batch.length === 0) return;
    this.#queued = [];
    this.#runBatch(batch);
  };

  #runBatch(batch: readonly QueuedRead[]): void {
    // One read is its own statement's transaction; inside another transaction (none is left
    // open between turns today) BEGIN would fail, and the reads see that transaction's state.
    if (batch.length === 1 || this.#db.inTransaction) {
      for (const queued of batch) this.#answer(queued);
      return;
    }
    try {
      (this.#begin ??= this.#db.prepare('BEGIN DEFERRED')).run();
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      return;
    }
    try {
      for (const queued of batch) this.#answer(queued);
    } finally {
      // A read-only transaction: COMMIT only releases its snapshot and locks.
      (this.#commit ??= this.#db.prepare('COMMIT')).run();
    }
  }

  #answer(queued: QueuedRead): void {
    let load: ReadLoad | null;
    try {
      load = this.#read(queued.rootEventId);
    } catch (error) {
      queued.reject(error);
      return;
    }
    queued.resolve(load);
  }
}
