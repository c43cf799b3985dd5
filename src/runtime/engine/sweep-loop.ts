/**
 * A background loop of one periodic sweep: the sweep, then a pause, then the next, never two at
 * once in a process. The timer sweep and the expired-lock sweep both run on it.
 */

/** Options of {@link SweepLoop}. */
export interface SweepLoopOptions<R> {
  /** One sweep; its result goes to `onResult`, its failure to `onError`. */
  sweep: () => Promise<R>;
  /** Pause between the end of one sweep and the start of the next, in ms. */
  intervalMs: number;
  /** Whether the pause timer keeps the process alive (default false). */
  keepAlive?: boolean;
  onResult?: (result: R) => void;
  /** A failed sweep; the loop goes on. */
  onError: (error: unknown) => void;
}

/** The loop; `start` once, `stop` to end it. */
export class SweepLoop<R> {
  readonly #options: SweepLoopOptions<R>;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;

  constructor(options: SweepLoopOptions<R>) {
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

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#tick().finally(() => {
        this.#running = null;
        this.#schedule(this.#options.intervalMs);
      });
    }, delayMs);
    if (this.#options.keepAlive !== true) this.#timer.unref();
  }

  async #tick(): Promise<void> {
    try {
      const result = await this.#options.sweep();
      this.#options.onResult?.(result);
    } catch (error) {
      this.#options.onError(error);
    }
  }
}
