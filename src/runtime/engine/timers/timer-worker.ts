/**
 * The timer sweep run in the background: one sweep, then a pause of `intervalMs`, then the next
 * (never two at once in a process). Every worker process runs one; on a shared store they split
 * the work through the instance locks and the fire claims, so a fire is delivered once whatever
 * the number of workers.
 */
import { systemClock, type Clock } from '../../clock.js';
import type { TimerRegistration } from '../../definition/timer-registration.js';
import type { EngineContext } from '../context.js';
import { SweepLoop } from '../sweep-loop.js';
import type { ScheduleMemo } from './schedule-sweep.js';
import { sweepTimers, type SweepReport } from './timer-sweep.js';

/** Options of {@link TimerWorker}. */
export interface TimerWorkerOptions {
  /** The runtime's context (`MachineRuntime.context`). */
  context: EngineContext;
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
  /** Failed deliveries and sweeps (default: the context's logger). */
  onError?: (error: unknown, where: string) => void;
  /** Told after every sweep (tools, tests). */
  onSweep?: (report: SweepReport) => void;
}

/** A background sweep loop; `start` once, `stop` to end it. */
export class TimerWorker {
  readonly #options: TimerWorkerOptions;
  readonly #loop: SweepLoop<SweepReport>;
  // Schedules' ticks this process has swept (schedule-sweep.ts).
  readonly #schedules: ScheduleMemo = new Map();

  constructor(options: TimerWorkerOptions) {
    this.#options = options;
    const onError = this.#onError;
    this.#loop = new SweepLoop({
      sweep: () => this.sweepOnce(),
      intervalMs: options.intervalMs ?? 500,
      keepAlive: options.keepAlive === true,
      ...(options.onSweep ? { onResult: options.onSweep } : {}),
      onError: (error) => onError(error, 'timer sweep'),
    });
  }

  /** Starts sweeping now, then every `intervalMs` after the previous sweep ends. */
  start(): void {
    this.#loop.start();
  }

  /** Stops the loop and waits for a sweep in progress to end. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  readonly #onError = (error: unknown, where: string): void => {
    if (this.#options.onError !== undefined) this.#options.onError(error, where);
    else this.#options.context.logger.error({ err: error }, `machine-routes: ${where} failed`);
  };

  /** Runs one sweep now (outside the loop). */
  sweepOnce(): Promise<SweepReport> {
    const { context, registrations, clock = systemClock } = this.#options;
    const onError = this.#onError;
    return sweepTimers({
      context,
      registrations,
      clock,
      schedules: this.#schedules,
      onError: (error, where) => onError(error, `timer of ${where.machine} ${where.id}`),
    });
  }
}
