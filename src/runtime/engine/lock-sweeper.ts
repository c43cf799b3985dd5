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
  readonly #options: LockSweeperOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;

  constructor(options: LockSweeperOptions) {
    this.#options = options;
  }

  /** Sweeps now, then every `intervalMs` after the previous sweep ends. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Stops the loop and waits for a sweep in progress to end. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** Deletes every expired lock now; how many. */
  sweepOnce(): Promise<number> {
    return this.#options.store.sweepExpiredLocks();
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#tick().finally(() => {
        this.#running = null;
        this.#schedule(this.#options.intervalMs ?? DEFAULT_LOCK_SWEEP_INTERVAL_MS);
      });
    }, delayMs);
    // The worker's queue keeps the process alive; the sweep alone must not.
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    try {
      const deleted = await this.sweepOnce();
      this.#options.onSweep?.(deleted);
    } catch (error) {
      (this.#options.onError ?? reportError)(error);
    }
  }
}

function reportError(error: unknown): void {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`machine-routes: expired-lock sweep failed: ${text}\n`);
}
