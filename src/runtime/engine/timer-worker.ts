/**
 * The timer sweep run in the background: one sweep, then a pause of `intervalMs`, then the next
 * (never two at once in a process). Every worker process runs one; on a shared store they split
 * the work through the instance locks and the fire claims, so a fire is delivered once whatever
 * the number of workers.
 */
import { stderrLogger } from '../logger.js';
import { systemClock, type Clock } from '../clock.js';
import type { TimerRegistration } from '../definition/timer-registration.js';
import type { TimerHost } from './timer-delivery.js';
import { sweepTimers, type SweepReport } from './timer-sweep.js';

/** Options of {@link TimerWorker}. */
export interface TimerWorkerOptions {
  host: TimerHost;
  registrations: readonly TimerRegistration[];
  /** Default: the system clock. */
  clock?: Clock;
  /**
   * Pause between two sweeps in ms (default 500): a fire is delivered at most about this long
   * after it is due, plus the sweep's own time.
   */
  intervalMs?: number;
  /** Whether the pause timer keeps the process alive (default false). */
  keepAlive?: boolean;
  /** Failed deliveries and sweeps (default: one line on stderr). */
  onError?: (error: unknown, where: string) => void;
  /** Told after every sweep (tools, tests). */
  onSweep?: (report: SweepReport) => void;
}

/** A background sweep loop; `start` once, `stop` to end it. */
export class TimerWorker {
  readonly #options: TimerWorkerOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;

  constructor(options: TimerWorkerOptions) {
    this.#options = options;
  }

  /** Starts sweeping now, then every `intervalMs` after the previous sweep ends. */
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

  /** Runs one sweep now (outside the loop). */
  sweepOnce(): Promise<SweepReport> {
    const { host, registrations, clock = systemClock } = this.#options;
    const onError = this.#options.onError ?? reportError;
    return sweepTimers({
      host,
      registrations,
      clock,
      onError: (error, where) => onError(error, `timer of ${where.machine} ${where.id}`),
    });
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#tick().finally(() => {
        this.#running = null;
        this.#schedule(this.#options.intervalMs ?? 500);
      });
    }, delayMs);
    if (this.#options.keepAlive !== true) this.#timer.unref();
  }

  async #tick(): Promise<void> {
    try {
      const report = await this.sweepOnce();
      this.#options.onSweep?.(report);
    } catch (error) {
      (this.#options.onError ?? reportError)(error, 'timer sweep');
    }
  }
}

function reportError(error: unknown, where: string): void {
  stderrLogger.error({ err: error }, `machine-routes: ${where} failed`);
}
