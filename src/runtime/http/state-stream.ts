/**
 * The body of a state stream: a `Readable` that writes a state only when its consumer asks for
 * more, and otherwise keeps the latest one. A client that stops reading holds up one message in
 * the stream's buffer and one in its socket's; every state committed meanwhile replaces the one
 * waiting, so the client gets the latest when it reads again (about 1 MB queued for a 500 KB
 * context, where pushing each state queued every one: 50.5 MB for 100 commits).
 */
import { Readable } from 'node:stream';
import type { InstanceRead } from '../persistence/types.js';

/** What a {@link StateStream} needs from its route. */
export interface StateStreamOptions {
  /** The SSE message of a state (`id:`, `event:`, `data:`), read envelope included. */
  format(read: InstanceRead): Promise<string>;
  /** Called once when no more states are needed: a final one is known, or the stream is destroyed. */
  stop(): void;
  /** A state that could not be formatted; the stream goes on with the next one. */
  onError(error: unknown): void;
}

/** Server-Sent Events of one instance's states, latest first when the client falls behind. */
export class StateStream extends Readable {
  readonly #options: StateStreamOptions;
  /** The newest state not written yet: a newer one replaces it. */
  #pending: InstanceRead | null = null;
  /** The consumer asked for more, and nothing was written since. */
  #wanted = false;
  /** A state is being formatted: the next one waits for it, keeping commit order. */
  #writing = false;
  #stopped = false;
  /** The end was pushed: nothing may follow it. */
  #ended = false;

  constructor(options: StateStreamOptions) {
    super();
    this.#options = options;
  }

  /** Offers a committed state; an older one than what is waiting is dropped. */
  offer(read: InstanceRead): void {
    if (this.#pending !== null && this.#pending.snapshot.sequence >= read.snapshot.sequence) return;
    this.#pending = read;
    // A final state is the last: nothing needs watching once it is known.
    if (read.snapshot.status === 'done') this.#stop();
    void this.#flush();
  }

  /** A comment line (a retry hint, a keep-alive), written only when nothing else is queued. */
  comment(line: string): void {
    if (this.readableLength === 0 && !this.#ended) this.push(`${line}\n\n`);
  }

  /** Ends the stream without another message (the client already has the final state). */
  finish(): void {
    this.#stop();
    this.#end();
  }

  override _read(): void {
    this.#wanted = true;
    void this.#flush();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop();
    callback(error);
  }

  async #flush(): Promise<void> {
    while (
      this.#wanted &&
      !this.#writing &&
      this.#pending !== null &&
      !this.#ended &&
      !this.destroyed
    ) {
      const read = this.#pending;
      this.#pending = null;
      this.#writing = true;
      let message: string | null = null;
      try {
        message = await this.#options.format(read);
      } catch (error) {
        this.#options.onError(error);
      } finally {
        this.#writing = false;
      }
      if (message === null || this.destroyed) continue;
      this.#wanted = this.push(message);
      if (read.snapshot.status === 'done') this.#end();
    }
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.push(null);
  }

  #stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#options.stop();
  }
}
