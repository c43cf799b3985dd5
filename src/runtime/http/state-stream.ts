/**
 * The body of a state stream: Server-Sent Events written straight to the HTTP response, with no
 * `Readable` between (bench/scale/subscribers-heap.ts: a `Readable` piped by the framework cost
 * an idle subscriber about 4 KB of stream state and `finished` watchers). A state is written
 * only while the socket takes more (`write()`'s answer, then `drain`); every state committed
 * meanwhile replaces the one waiting, so a client that stops reading holds up one message here
 * and one in its socket's buffer, and gets the latest when it reads again (about 1 MB queued for
 * a 500 KB context, where writing each state queued every one: 50.5 MB for 100 commits).
 *
 * Messages arrive formatted (live-followers.ts formats a commit once for all the streams of an
 * instance). One interval for every open stream sends the keep-alive comments, rather than a
 * timer each.
 */
import type { ServerResponse } from 'node:http';

/** Milliseconds between keep-alive comments. */
const HEARTBEAT_MS = 15_000;

/** What a stream tells when it stops (a final state was written, or it was destroyed). */
export interface StateStreamOwner {
  leave(stream: StateStream): void;
}

/** Streams attached to a response and still open: the keep-alive and shutdown walk them. */
const open = new Set<StateStream>();
let heartbeat: NodeJS.Timeout | undefined;

function keepAlive(): void {
  for (const stream of open) stream.comment(': keep-alive');
}

/** Server-Sent Events of one instance's states, the latest only when the client falls behind. */
export class StateStream {
  /** The response, once the adapter has attached it. */
  #response: ServerResponse | null = null;
  /** Comment lines written before the response was attached (the retry hint). */
  #early = '';
  /** The newest message not written yet: a newer one replaces it. */
  #pending: string | null = null;
  /** The sequence of the newest message taken (written or pending); older ones are dropped. */
  #sequence = -1;
  /** `write()` answered false: nothing more is written until `drain`. */
  #blocked = false;
  /** The final message was taken: the response ends once it is written. */
  #final = false;
  #closed = false;
  #owner: StateStreamOwner | null = null;

  /** The HTTP server the response belongs to (shutdown ends its streams), once attached. */
  get server(): unknown {
    return (this.#response?.socket as { server?: unknown } | null | undefined)?.server;
  }

  /** Whether the stream has stopped (its final state written, or destroyed). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Tells `owner` when the stream stops; a stream already stopped tells it at once. */
  setOwner(owner: StateStreamOwner): void {
    this.#owner = owner;
    if (this.#closed) owner.leave(this);
  }

  /**
   * Offers the message of committed state `sequence`; one not newer than the newest taken is
   * dropped, so messages may arrive out of order. `final`: the instance's last state.
   */
  offer(sequence: number, message: string, final: boolean): void {
    if (this.#closed || this.#final || sequence <= this.#sequence) return;
    this.#sequence = sequence;
    this.#pending = message;
    if (final) {
      this.#final = true;
      // Nothing needs watching once the final state is known.
      this.#leave();
    }
    this.#flush();
  }

  /** The client has state `sequence` already: only newer ones are written. */
  skip(sequence: number): void {
    if (sequence > this.#sequence) this.#sequence = sequence;
  }

  /** A comment line (a retry hint, a keep-alive), written only when nothing else is waiting. */
  comment(line: string): void {
    if (this.#closed || this.#final) return;
    if (this.#response === null) this.#early += `${line}\n\n`;
    else if (!this.#blocked && this.#pending === null) this.#write(`${line}\n\n`);
  }

  /** Ends the stream without another message (the client already has the final state). */
  finish(): void {
    if (this.#closed || this.#final) return;
    this.#final = true;
    this.#pending = null;
    this.#leave();
    this.#flush();
  }

  /**
   * Starts writing to `response`, whose status and headers are set: what was offered meanwhile
   * goes out now. A stream destroyed before takes the response's connection with it.
   */
  attach(response: ServerResponse): void {
    if (this.#response !== null) return;
    this.#response = response;
    if (this.#closed) {
      response.destroy();
      return;
    }
    // One listener: the stream stops with its connection, whoever ends it.
    response.on('close', () => this.destroy());
    open.add(this);
    if (heartbeat === undefined) {
      heartbeat = setInterval(keepAlive, HEARTBEAT_MS);
      heartbeat.unref();
    }
    const early = this.#early;
    this.#early = '';
    // The headers go out with the first bytes: a client learns the stream is open at once.
    if (early !== '') this.#write(early);
    else if (this.#pending === null) response.flushHeaders();
    this.#flush();
  }

  /**
   * Stops the stream: its connection is destroyed unless the final state was written (the
   * client reconnects, with `Last-Event-ID`).
   */
  destroy(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending = null;
    this.#leave();
    if (open.delete(this) && open.size === 0) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
    const response = this.#response;
    if (response !== null && !response.writableEnded) response.destroy();
  }

  #flush(): void {
    const response = this.#response;
    if (response === null || this.#closed) return;
    const message = this.#pending;
    if (message !== null && !this.#blocked) {
      this.#pending = null;
      this.#write(message);
    }
    // `end` writes what the socket has not taken yet.
    if (this.#final && this.#pending === null) {
      response.end();
      this.destroy();
    }
  }

  #write(text: string): void {
    const response = this.#response!;
    // A write after the end would be an 'error' event nobody listens to.
    if (response.destroyed || response.writableEnded) return;
    if (!response.write(text)) {
      this.#blocked = true;
      response.once('drain', () => {
        this.#blocked = false;
        this.#flush();
      });
    }
  }

  #leave(): void {
    const owner = this.#owner;
    this.#owner = null;
    owner?.leave(this);
  }
}

/** Ends the open state streams of `server` (its clients reconnect, with `Last-Event-ID`, elsewhere). */
export function endStateStreams(server: object): void {
  for (const stream of [...open]) if (stream.server === server) stream.destroy();
}
