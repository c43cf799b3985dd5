/**
 * The expired-lock sweep run by workers. A process killed while holding an instance lock leaves
 * its `machine_locks` row behind; the next send on that instance takes it over, but an instance
 * nobody uses again would keep the row forever. Workers delete such rows periodically so the
 * table only holds locks of live holders (and diagnostics such as `readLock` stay meaningful).
 *
 * Only expired rows are deleted, in one statement per sweep: a live lock is never touched, and
 * several workers sweeping the same store at once only race to delete the same rows.
 */
import type { Store } from '../persistence/store.js';
import { SweepLoop } from './sweep-loop.js';

/** Default pause between two sweeps: locks live for seconds, so a minute keeps the table small. */
export const DEFAULT_LOCK_SWEEP_INTERVAL_MS = 60_000;

/** Options of {@link LockSweeper}. */
export interface LockSweeperOptions {
  store: Store;
  /** Pause between two sweeps in ms (default {@link DEFAULT_LOCK_SWEEP_INTERVAL_MS}). */
  intervalMs?: number;
  /** A failed sweep (default: one line on stderr); the loop goes on. */
  onError?: (error: unknown) => void;
  /** Told how many rows each sweep deleted (tools, tests). */
  onSweep?: (deleted: number) => void;
}

/** A background loop deleting expired lock rows; `start` once, `stop` to end it. */
export class LockSweeper {
  readonly #store: Store;
  readonly #loop: SweepLoop<number>;

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

  /** Deletes every expired lock now; how many. */
  sweepOnce(): Promise<number> {
    return this.#store.sweepExpiredLocks();
  }
}

function reportError(error: unknown): void {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`machine-routes: expired-lock sweep failed: ${text}\n`);
}
