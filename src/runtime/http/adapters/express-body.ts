/**
 * The Express adapter's request body reader: the layer's own JSON parser with a byte limit
 * (400/413/415 as on Fastify, `__proto__` keys dropped), the raw bytes kept for webhooks.
 */
import type { Request, RequestHandler } from 'express';
import { HttpError } from '../response-bodies.js';
import {
  isJsonContentType,
  parseJsonBody,
  UnreadableBody,
  unsupportedEncoding,
  unsupportedMediaType,
} from '../request-parsing.js';
import { keepRawBody } from './shared.js';

/**
 * Reads and parses a JSON body with a byte limit: 413 over the limit (checked against
 * Content-Length first, then while streaming) is passed to `next` at once. A body that cannot be
 * read as JSON (malformed 400, another media type or a `Content-Encoding` 415) is received within
 * the limit too, then set as an {@link UnreadableBody}: reading `EndpointRequest.body` throws its
 * error, after the route middleware. A request without a body passes with `body` undefined.
 */
export function jsonBody(limit: number): RequestHandler {
  return (request, _response, next) => readJsonBody(request, limit, next);
}

/** {@link jsonBody}'s work: `done()` with `request.body` set, or `done(error)` for a 413. */
export function readJsonBody(
  request: Request,
  limit: number,
  done: (error?: unknown) => void,
): void {
  const length = request.headers['content-length'];
  const hasBody =
    (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
  (request as { body?: unknown }).body = undefined;
  // A GET or HEAD body means nothing (RFC 9110; a read takes its data from the query) and is
  // not read, as on Fastify: no 413 or 415 that no read documents. Node discards it.
  if (!hasBody || request.method === 'GET' || request.method === 'HEAD') return done();
  if (length !== undefined && Number(length) > limit) {
    request.resume();
    return done(new HttpError(413, 'Request body is too large.'));
  }
  // Known before reading: such a body is counted against the limit, not kept.
  const refusal = isJsonContentType(request.headers['content-type'])
    ? unsupportedEncoding(request.headers['content-encoding'])
    : unsupportedMediaType();
  const chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  request.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > limit) {
      failed = true;
      done(new HttpError(413, 'Request body is too large.'));
      return;
    }
    if (refusal === undefined) chunks.push(chunk);
  });
  request.on('end', () => {
    if (failed) return;
    if (refusal !== undefined) {
      (request as { body?: unknown }).body = new UnreadableBody(refusal);
      return done();
    }
    let body: unknown;
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    // A webhook checks its signature over the body as sent.
    keepRawBody(request, raw);
    try {
      body = parseJsonBody(raw.toString('utf8'));
    } catch (error) {
      body = new UnreadableBody(error as HttpError);
    }
    (request as { body?: unknown }).body = body;
    done();
  });
  request.on('error', (error) => {
    if (!failed) {
      failed = true;
      done(new HttpError(400, `Request body could not be read: ${error.message}`));
    }
  });
}
