/**
 * Time as the runtime reads it. Everything that depends on "now" (history times, state entry
 * times, which timers are due) asks a `Clock`, so tests move time forward instead of sleeping.
 */

/** A source of the current time. */
export interface Clock {
  now(): Date;
}

/** The system clock. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock that moves only when told: tests create instances, `advance` past a deadline and run
 * a sweep, with no wall-clock wait.
 */
export class ManualClock implements Clock {
  #time: number;

  /** @param start the initial time (default: the system time when created). */
  constructor(start: Date | string | number = Date.now()) {
    this.#time = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#time);
  }

  /** Moves the clock forward by `ms` milliseconds (negative values are refused). */
  advance(ms: number): Date {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance: ms must be >= 0, got ${ms}.`);
    this.#time += ms;
    return this.now();
  }

  /** Sets the clock to `time` (it may not move backwards). */
  set(time: Date | string | number): Date {
    const next = new Date(time).getTime();
    if (next < this.#time) throw new RangeError('ManualClock.set: time may not move backwards.');
    this.#time = next;
    return this.now();
  }
}
