/**
 * The expired-row sweep run by workers and by servers that run their own jobs: deletes
 * `machine_locks` rows left by killed processes, Idempotency-Key records past their `ttl` and
 * flow-control rows of keys idle for an hour.
 *
 * A process killed while holding an instance lock leaves its row behind; the next send on that
 * instance takes it over, but an instance nobody uses again would keep the row forever. An
 * Idempotency-Key record is replaced in place by the next claim of the same key after it
 * expired, but keys are rarely reused, so without a sweep `machine_idempotency_keys` would only
 * grow. Flow control keeps rows per key that ever sent (a bucket, slot rows, a burst's latest),
 * which a key's next request would make again. All are deleted periodically so the tables only hold live rows (and diagnostics such
 * as `readLock` stay meaningful).
 *
 * Only expired rows are deleted, one statement per table and sweep: a live lock or a key still
 * within its `ttl` is never touched, and several processes sweeping the same store at once only
 * race to delete the same rows.
 */
import { FLOW_IDLE_MS } from '../persistence/flow-control.js';
import type { Store } from '../persistence/store.js';
import { SweepLoop } from './sweep-loop.js';

/** Default pause between two sweeps: locks live for seconds, so a minute keeps the table small. */
export const DEFAULT_LOCK_SWEEP_INTERVAL_MS = 60_000;

/** What one sweep deleted. */
export interface ExpiredRowsReport {
  /** Expired `machine_locks` rows. */
  locks: number;
  /** Expired `machine_idempotency_keys` records. */
  idempotencyKeys: number;
  /** Flow-control rows of keys idle for {@link FLOW_IDLE_MS} (PostgreSQL; in-process buckets elsewhere). */
  flowRows: number;
}

/** Options of {@link LockSweeper}. */
export interface LockSweeperOptions {
  store: Store;
  /** Pause between two sweeps in ms (default {@link DEFAULT_LOCK_SWEEP_INTERVAL_MS}). */
  intervalMs?: number;
  /** A failed sweep (default: one line on stderr); the loop goes on. */
  onError?: (error: unknown) => void;
  /** Told how many rows each sweep deleted (tools, tests). */
  onSweep?: (report: ExpiredRowsReport) => void;
}

/** A background loop deleting expired lock rows and Idempotency-Key records; `start` once, `stop` to end it. */
export class LockSweeper {
  readonly #store: Store;
  readonly #loop: SweepLoop<ExpiredRowsReport>;

  constructor(options: LockSweeperOptions) {
    this.#store = options.store;
    // The worker's queue keeps the process alive; the sweep alone must not.
    this.#loop = new SweepLoop({
      sweep: () => this.sweepOnce(),
      intervalMs: options.intervalMs ?? DEFAULT_LOCK_SWEEP_INTERVAL_MS,
      ...(options.onSweep ? { onResult: options.onSweep } : {}),
      onError: options.onError ?? reportError,
    });
  }

  /** Sweeps now, then every `intervalMs` after the previous sweep ends. */
  start(): void {
    this.#loop.start();
  }

  /** Stops the loop and waits for a sweep in progress to end. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Deletes every expired lock row, Idempotency-Key record and idle flow-control row now; how many of each. */
  async sweepOnce(): Promise<ExpiredRowsReport> {
    const locks = await this.#store.sweepExpiredLocks();
    const idempotencyKeys = await this.#store.idempotencyKeys.sweepExpired();
    const flowRows = await this.#store.flowControl.sweepIdle(FLOW_IDLE_MS);
    return { locks, idempotencyKeys, flowRows };
  }
}

function reportError(error: unknown): void {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`machine-routes: expired-row sweep failed: ${text}\n`);
}
