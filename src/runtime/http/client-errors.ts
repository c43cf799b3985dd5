/**
 * Requests Node's HTTP parser refuses before any framework sees them: a request line or header
 * that is not HTTP/1.1 (400), headers over the server's `maxHeaderSize` (431) and a request that
 * did not arrive within the request timeout (408). Node answers them with an empty body and
 * Fastify with its own `{ error, message, statusCode }`; the generated servers answer the
 * documented error body `{ message }` instead, the same on both frameworks.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

/** Status and message by the parser's error code; any other code is a 400. */
const REFUSALS: Readonly<Record<string, readonly [number, string]>> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout: the request was not received in time.'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large: send smaller headers.'],
};
const NOT_HTTP = [400, 'Bad Request: the request is not valid HTTP/1.1.'] as const;

/**
 * A `clientError` listener of a Node HTTP server (Fastify's `clientErrorHandler` option):
 * answers the refused request with its status and `{ message }` as JSON, then closes the
 * connection, as Node's own listener does.
 *
 * @example
 * const app = Fastify({ clientErrorHandler: answerClientError });
 * createServer(withFallback(expressApp)).on('clientError', answerClientError);
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // An answer already under way on this socket must not be corrupted by a second one.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && inFlight?.headersSent !== true) {
    const [status, message] = REFUSALS[error.code ?? ''] ?? NOT_HTTP;
    const body = JSON.stringify({ message });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}
