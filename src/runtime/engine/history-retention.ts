/**
 * The history retention sweep (`MACHINE_HISTORY_RETENTION_DAYS`, docs/operations.md "History
 * retention"), run by workers: deletes the history of instances that finished more than the
 * retention ago, a batch of instances per transaction, until none is left, then waits for the
 * next sweep. A batch is short (one transaction of `batchSize` instances), so on SQLite the
 * writers of live instances wait at most one batch; several workers sweeping the same store
 * take different instances (PostgreSQL) or run one batch after the other (SQLite). With
 * `archive`, each batch moves the records into `machine_events_archive` instead (same
 * transaction), so a sweep cut between batches resumes where it stopped.
 */
import type { Store } from '../persistence/store.js';
import { SweepLoop } from './sweep-loop.js';

/** Default pause between two sweeps: retention is counted in days, an hour is plenty. */
export const DEFAULT_RETENTION_SWEEP_INTERVAL_MS = 3_600_000;
/** Default instances per batch (one transaction each). */
export const DEFAULT_RETENTION_BATCH_SIZE = 100;

const DAY_MS = 86_400_000;

/** What one sweep deleted. */
export interface RetentionReport {
  /** Finished instances whose history was deleted. */
  instances: number;
  /** History records deleted (moved to the archive with `archive`). */
  records: number;
  /** Transactions (batches) it took. */
  batches: number;
}

/** Options of {@link HistoryRetentionSweeper}. */
export interface HistoryRetentionOptions {
  store: Store;
  /** Days a finished instance keeps its history (> 0). */
  retentionDays: number;
  /** The time the cutoff is counted from (default: the system clock). */
  now?: () => Date;
  /** Pause between two sweeps in ms (default {@link DEFAULT_RETENTION_SWEEP_INTERVAL_MS}). */
  intervalMs?: number;
  /** Instances per batch (default {@link DEFAULT_RETENTION_BATCH_SIZE}). */
  batchSize?: number;
  /**
   * Move the records into `machine_events_archive` instead of only deleting them (default
   * false; `MACHINE_HISTORY_RETENTION_ARCHIVE`).
   */
  archive?: boolean;
  /** A failed sweep; the loop goes on (the batches committed before it stay deleted). */
  onError: (error: unknown) => void;
  /** Told what each sweep deleted (tools, tests). */
  onSweep?: (report: RetentionReport) => void;
}

/** A background loop deleting old history of finished instances; `start` once, `stop` to end it. */
export class HistoryRetentionSweeper {
  readonly #options: HistoryRetentionOptions;
  readonly #loop: SweepLoop<RetentionReport>;
  #stopping = false;

  constructor(options: HistoryRetentionOptions) {
    if (!(options.retentionDays > 0)) throw new RangeError('retentionDays must be > 0');
    this.#options = options;
    this.#loop = new SweepLoop({
      sweep: () => this.sweepOnce(),
      intervalMs: options.intervalMs ?? DEFAULT_RETENTION_SWEEP_INTERVAL_MS,
      ...(options.onSweep ? { onResult: options.onSweep } : {}),
      onError: options.onError,
    });
  }

  /** Sweeps now, then every `intervalMs` after the previous sweep ends. */
  start(): void {
    this.#stopping = false;
    this.#loop.start();
  }

  /** Stops the loop; a sweep in progress ends after its current batch. */
  stop(): Promise<void> {
    this.#stopping = true;
    return this.#loop.stop();
  }

  /** Deletes, batch after batch, the history of every instance finished before the cutoff. */
  async sweepOnce(): Promise<RetentionReport> {
    const { store, retentionDays, batchSize = DEFAULT_RETENTION_BATCH_SIZE } = this.#options;
    const archive = this.#options.archive === true;
    const now = this.#options.now?.() ?? new Date();
    const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
    const report: RetentionReport = { instances: 0, records: 0, batches: 0 };
    for (;;) {
      const batch = await store.historyRetention.deleteFinishedBefore(cutoff, batchSize, {
        archive,
      });
      report.batches += 1;
      report.instances += batch.instances;
      report.records += batch.records;
      if (batch.instances < batchSize || this.#stopping) return report;
      // Other work of the process (requests, jobs) runs between two batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}
