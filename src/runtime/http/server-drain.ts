/**
 * The HTTP half of a graceful shutdown, on a `node:http` server of either framework
 * (docs/operating.md "Shutdown"):
 *
 * 1. Every new request is answered 503 `{ message }` with `Retry-After` and `Connection:
 *    close`, the answer every OpenAPI operation documents (`ServiceUnavailable`); the health
 *    routes still answer (readiness then fails: "shutting down"). Open state streams end at
 *    once (their clients reconnect, with `Last-Event-ID`, elsewhere).
 * 2. Requests in flight finish: each connection is closed as soon as its answer is sent.
 * 3. Once none is left, the listening socket closes: a new connection is refused from then on.
 * 4. At the deadline, the connections still open are destroyed (their requests are cut, never
 *    answered: nothing acknowledged is lost), and the socket closes.
 *
 * Costs nothing before the drain: the 503 gate replaces the server's request listeners only when
 * the drain starts.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { endStreams } from './adapters/shared.js';
import { SHUTDOWN_RETRY_AFTER } from './response-bodies.js';

/** How the drain ended. */
export interface DrainResult {
  /** Requests still in flight at the deadline, cut (0 when every request finished). */
  cut: number;
  /** Milliseconds the drain took. */
  elapsedMs: number;
}

/** How often idle connections are looked for while requests finish. */
const POLL_MS = 20;

/**
 * A connection that has sent nothing for this long is not a request in flight: fetch() (undici)
 * opens one when a stream of its is aborted and never uses it. It is destroyed rather than
 * waited for until the bound (a client about to send on a newer one gets its 503).
 */
const SILENT_MS = 1000;

const DRAINING_BODY = JSON.stringify({
  message: 'The server is shutting down: send the request again (Retry-After seconds).',
});

/** The drain of one server; `drain` may be called more than once and returns the first drain. */
export class ServerDrain {
  readonly #server: Server;
  readonly #passThrough: (request: IncomingMessage) => boolean;
  /** Open connections and when each was accepted. */
  readonly #connections = new Map<Socket, number>();
  #draining: Promise<DrainResult> | null = null;

  /**
   * @param passThrough requests still served by the application while it drains (the health
   *   routes), by URL.
   */
  constructor(server: Server, passThrough: (request: IncomingMessage) => boolean = () => false) {
    this.#server = server;
    this.#passThrough = passThrough;
    server.on('connection', (socket: Socket) => {
      this.#connections.set(socket, Date.now());
      socket.once('close', () => this.#connections.delete(socket));
    });
  }

  /** True once `drain` was called. */
  get draining(): boolean {
    return this.#draining !== null;
  }

  /** Stops accepting and waits for requests in flight, up to `timeoutMs` (see the module). */
  drain(timeoutMs: number): Promise<DrainResult> {
    this.#draining ??= this.#drain(timeoutMs);
    return this.#draining;
  }

  async #drain(timeoutMs: number): Promise<DrainResult> {
    const started = Date.now();
    const server = this.#server;
    this.#gate();
    endStreams(server);
    if (!server.listening) return { cut: 0, elapsedMs: Date.now() - started };
    const deadline = started + timeoutMs;
    // Until the requests in flight are done the port stays open: a new request is answered 503
    // (and its connection closed) rather than refused, which a client may take for a crash.
    let busy = await this.#openConnections();
    while (busy > 0 && Date.now() < deadline) {
      // A connection whose answer was sent is idle: closed now rather than kept alive.
      server.closeIdleConnections();
      this.#closeSilentConnections();
      busy = await this.#openConnections();
      if (busy === 0) break;
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
    }
    // From here a new connection is refused. Node 19+: close() also closes the idle ones.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const cut = busy > 0 ? busy : 0;
    if (cut > 0) server.closeAllConnections();
    else {
      // Connections of 503 answers made meanwhile end with their answer.
      const grace = setTimeout(() => server.closeAllConnections(), POLL_MS * 5);
      await closed;
      clearTimeout(grace);
    }
    await closed;
    return { cut, elapsedMs: Date.now() - started };
  }

  /** Answers 503 to every request but the pass-through ones, from now on. */
  #gate(): void {
    const server = this.#server;
    const listeners = server.listeners('request') as ((
      request: IncomingMessage,
      response: ServerResponse,
    ) => void)[];
    server.removeAllListeners('request');
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (this.#passThrough(request)) {
        response.shouldKeepAlive = false;
        for (const listener of listeners) listener.call(server, request, response);
        return;
      }
      request.resume();
      response.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        'retry-after': SHUTDOWN_RETRY_AFTER,
        connection: 'close',
        'content-length': Buffer.byteLength(DRAINING_BODY),
      });
      response.end(DRAINING_BODY);
    });
  }

  #closeSilentConnections(): void {
    const before = Date.now() - SILENT_MS;
    for (const [socket, accepted] of this.#connections)
      if (socket.bytesRead === 0 && accepted <= before) socket.destroy();
  }

  /** Connections still open: each is a request in flight once idle ones are closed. */
  #openConnections(): Promise<number> {
    return new Promise((resolve) =>
      this.#server.getConnections((error, connections) => resolve(error ? 0 : connections)),
    );
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
