/**
 * The Idempotency-Key protocol of command routes (IETF draft `Idempotency-Key`), around the
 * create and event handlers: a key is claimed per route and instance in the store's
 * `machine_idempotency_keys` (persistence/idempotency.ts) before the request runs; a retry
 * answers the stored first response; a key reused with another request is 422, one still in
 * flight 409. The event handler hands the runtime a `respond` callback so the response is
 * stored in the event's own commit (docs/http.md "Idempotency-Key").
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdempotencyKeyInFlightException, IdempotencyKeyReusedException } from '../errors.js';
import type { MachineDefinitionBase } from '../definition/types.js';
import { newUlid } from '../ids.js';
import type { StoredResponse } from '../persistence/idempotency.js';
import type { HttpServices } from './http-services.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import { isRead } from './request-data.js';
import { errorToResponse } from './responses.js';
import { consoleLogger, requestLogFields } from './http-logger.js';
import { errorResponse } from './response-bodies.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';
import { pathParam } from './plan-route-fields.js';

/**
 * The state of one request holding an Idempotency-Key claim. Its route middleware already ran
 * (before the claim): the handler does not run it again.
 */
export interface IdempotentRequest {
  scope: string;
  key: string;
  ownerId: string;
  /** Something was committed (an instance created, an event sent): keep the response. */
  committed: boolean;
  /** The response was already stored with the commit. */
  stored: boolean;
  /**
   * `true` for a one-time use that is never replayed (a callback URL: a second use is 409). Such
   * a record needs no answer built for it, so it is committed with the event even behind an
   * endpoint after() hook; and a validation guard's refusal does not use it up.
   */
  oneTimeUse?: true;
}

/** How long a claim blocks retries while its request runs (the lock TTL's default). */
const IDEMPOTENCY_LEASE_MS = 60_000;
/** The polls of a request waiting for the same key in flight: 25, 50, 100, then every 200 ms. */
const FIRST_POLL_MS = 25;
const LAST_POLL_MS = 200;
/** The draft's key is a string; longer ones are refused rather than stored. */
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * Wraps a handler with the Idempotency-Key protocol when the route has `idempotency` and the
 * request a key (IETF draft `Idempotency-Key`): claim the key for this route and instance,
 * replay a stored response, refuse a reused key (422) or one in flight (409, or wait for its
 * answer up to the route's `inFlightWaitMs`), run the request,
 * then keep its response when it committed something, or free the key when not (a 4xx before
 * the send, contention): a retry then runs again. The route's `middleware` runs before all of
 * this (spec "Request handling order"): a request it refuses claims, replays and learns nothing
 * of a key; `handle` runs it itself when given no claim.
 */
export function withIdempotency<D extends MachineDefinitionBase>(
  route: PlannedRoute,
  services: HttpServices<D>,
  handle: (
    request: EndpointRequest,
    idempotent: IdempotentRequest | null,
  ) => Promise<EndpointResponse>,
  middleware: readonly ResolvedMiddleware[],
): RouteHandler {
  const settings = route.idempotency;
  if (settings === undefined) return (request) => handle(request, null);
  const store = services.idempotencyKeys;
  const param = pathParam(route.binding);
  return async (request) => {
    const header = request.headers['idempotency-key'];
    if (header === undefined || isRead(request)) return handle(request, null);
    const logger = services.logger ?? request.log ?? consoleLogger;
    let fingerprint: string;
    try {
      if (middleware.length > 0) {
        const shortCircuit = await runMiddleware(middleware, request);
        if (shortCircuit) return shortCircuit;
      }
      // Reads the body: a body that cannot be read answers its 400/415 here.
      fingerprint = fingerprintOf(request);
    } catch (error) {
      return errorToResponse(error, logger, route.name, request);
    }
    // The draft's value is a structured-field string ("..."); a bare token is accepted too.
    const key =
      header.length >= 2 && header.startsWith('"') && header.endsWith('"')
        ? header.slice(1, -1)
        : header;
    if (key === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key)) {
      return errorResponse(
        400,
        `The Idempotency-Key header must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters.`,
      );
    }
    const scope = `${route.name} ${param === null ? '' : (request.params[param] ?? '')}`;
    const ownerId = newUlid();
    const claim = {
      scope,
      key,
      fingerprint,
      ownerId,
      // A route that waits for a busy instance holds its claim for that long too.
      leaseMs: IDEMPOTENCY_LEASE_MS + (route.contention?.waitMs ?? 0),
      ttlMs: settings.ttl * 1000,
    };
    let claimed;
    try {
      claimed = await store.claim(claim);
      // `inFlightWaitMs`: the same request still in flight is waited for, polling the record,
      // so its answer is replayed; a first request that commits nothing frees the key, and the
      // next poll claims it and runs this one.
      const deadline = Date.now() + (settings.inFlightWaitMs ?? 0);
      let pause = FIRST_POLL_MS;
      while (
        claimed.kind === 'existing' &&
        claimed.record.fingerprint === fingerprint &&
        (claimed.record.status === 'pending' || claimed.record.response === null) &&
        Date.now() < deadline
      ) {
        await sleep(Math.min(pause, Math.max(1, deadline - Date.now())));
        pause = Math.min(pause * 2, LAST_POLL_MS);
        claimed = await store.claim(claim);
      }
    } catch (error) {
      return errorToResponse(error, logger, route.name, request);
    }
    if (claimed.kind === 'existing') {
      const { record } = claimed;
      if (record.fingerprint !== fingerprint) {
        const error = new IdempotencyKeyReusedException(
          `The Idempotency-Key '${key}' was already used with a different request on route ${route.name}: send a new key for a new request.`,
          { key, route: route.name },
        );
        return errorResponse(error.statusCode, error.message);
      }
      if (record.status === 'pending' || record.response === null) {
        const error = new IdempotencyKeyInFlightException(
          `A request with the Idempotency-Key '${key}' is still being processed on route ${route.name}: retry once it has answered.`,
          { key, route: route.name },
        );
        return errorResponse(error.statusCode, error.message);
      }
      // The first answer's ETag too: a client chaining If-Match from the answer sees the same
      // version whether it got the first answer or its replay.
      const { etag } = record.response;
      return {
        status: record.response.status,
        body: record.response.body,
        headers:
          etag === undefined
            ? { 'idempotency-replayed': 'true' }
            : { 'idempotency-replayed': 'true', etag },
      };
    }
    const idempotent: IdempotentRequest = { scope, key, ownerId, committed: false, stored: false };
    const response = await handle(request, idempotent);
    try {
      if (idempotent.stored) return response;
      if (idempotent.committed)
        await store.complete({ scope, key, ownerId, response: storedResponse(response) });
      else await store.release(scope, key, ownerId);
    } catch (error) {
      // The answer stands: a record left pending frees itself after its lease.
      (services.logger ?? consoleLogger).error(
        `Could not store the Idempotency-Key response of route ${route.name}`,
        { error, route: route.name, ...requestLogFields(request) },
      );
    }
    return response;
  };
}

/** What a retry replays of a response: its status, body and `ETag`. */
export function storedResponse(response: EndpointResponse): StoredResponse {
  const etag = response.headers?.['etag'];
  return etag === undefined
    ? { status: response.status, body: response.body ?? null }
    : { status: response.status, body: response.body ?? null, etag };
}

/**
 * The request a key names: the body (write methods) and the query, as canonical JSON (object
 * keys sorted), hashed. The route and instance are the key's scope, not part of this.
 */
function fingerprintOf(request: EndpointRequest): string {
  return createHash('sha256')
    .update(canonicalJson({ body: request.body ?? null, query: request.query }))
    .digest('base64url');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      );
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
