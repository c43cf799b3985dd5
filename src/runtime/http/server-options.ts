/**
 * Limits of the HTTP server a generated app starts: how long a client may take to send its
 * headers and its whole request, and how large a body and an event payload may be. Without
 * them a slow client (one body byte every few seconds) holds a connection forever: Fastify
 * sets no request timeout at all, and Node checks its own only every 30 s.
 */
import { DEFAULT_BODY_LIMIT, DEFAULT_PAYLOAD_LIMIT } from './request-parsing.js';

/** The `server` section of the config, also accepted by the generated `buildApp`. */
export interface ServerOptions {
  /** Largest request body in bytes (default 1 MiB); larger ones get 413. */
  bodyLimit?: number;
  /** Largest event payload in bytes, serialised (default 64 KiB); larger ones get 413. */
  payloadLimit?: number;
  /** Milliseconds a client has to send the request headers (default 10 s; 0: no limit); then 408. */
  headersTimeout?: number;
  /** Milliseconds a client has to send the whole request, body included (default 30 s; 0: no limit). */
  requestTimeout?: number;
}

export const DEFAULT_HEADERS_TIMEOUT = 10_000;
export const DEFAULT_REQUEST_TIMEOUT = 30_000;

/** How often Node looks for requests over their timeout (its default is 30 s). */
const CONNECTIONS_CHECKING_INTERVAL = 1_000;

/** Every limit, defaults filled in; the timeouts in the form `http.createServer` takes. */
export function resolveServerOptions(options: ServerOptions = {}): {
  bodyLimit: number;
  payloadLimit: number;
  headersTimeout: number;
  requestTimeout: number;
  connectionsCheckingInterval: number;
} {
  const requestTimeout = options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT;
  // Node refuses a headers timeout longer than the request timeout (0 turns either off).
  const headers = options.headersTimeout ?? DEFAULT_HEADERS_TIMEOUT;
  const headersTimeout = requestTimeout > 0 ? Math.min(headers, requestTimeout) : headers;
  return {
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    payloadLimit: options.payloadLimit ?? DEFAULT_PAYLOAD_LIMIT,
    headersTimeout,
    requestTimeout,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL,
  };
}
