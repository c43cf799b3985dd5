/**
 * The route of a callback URL (docs/callbacks.md): the token is checked (403 not signed for
 * this instance and event, 410 expired), then claimed in `machine_idempotency_keys` under the
 * route and instance with the token's signature as key, and the event sent through the event
 * handler with that claim: the claim becomes `done` in the event's own commit (as an
 * Idempotency-Key response does), so two requests, in one process or several, cannot both
 * commit the event, and a request that committed nothing frees the URL again. A used or busy
 * token is 409. Nothing is written for a refused token.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import {
  CallbackExpiredException,
  CallbackInvalidException,
  CallbackUsedException,
} from '../errors.js';
import { newUlid } from '../ids.js';
import {
  CALLBACK_SECRET_ENV,
  callbackSecrets,
  requireSecrets,
  verifyCallbackToken,
} from './callback-token.js';
import type { HttpServices } from './http-services.js';
import { storedResponse, type IdempotentRequest } from './idempotency.js';
import { errorToResponse } from './responses.js';
import { consoleLogger, requestLogFields } from './http-logger.js';
import { refusal } from './response-bodies.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute, RouteHandler } from './types.js';

/** How long a claim blocks a second use while its request runs (as Idempotency-Key's). */
const CALLBACK_LEASE_MS = 60_000;
/** A used token's record outlives its expiry by this much: clocks of processes differ. */
const CALLBACK_RECORD_MARGIN_MS = 10 * 60_000;

/**
 * A copy of `request` with another body (the event route reads `{ payload }`) and headers
 * (`extraHeaders` added). Everything else reads through to the original.
 */
export function withBody(
  request: EndpointRequest,
  body: unknown,
  params: Record<string, string> = request.params,
  extraHeaders: Record<string, string | undefined> = {},
): EndpointRequest {
  const headers: Record<string, string | undefined> = { ...request.headers, ...extraHeaders };
  return {
    method: request.method,
    params,
    query: {},
    body,
    headers,
    header: (name) => headers[name],
    ...(request.log === undefined ? {} : { log: request.log }),
    ...(request.id === undefined ? {} : { id: request.id }),
  };
}

/**
 * Wraps the event handler `handle` of a callback route: the token in the path is verified and
 * claimed before the event is sent; the body is the event's payload as it is.
 */
export function withCallbackToken<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  services: HttpServices<D>,
  handle: (
    request: EndpointRequest,
    idempotent: IdempotentRequest | null,
  ) => Promise<EndpointResponse>,
): RouteHandler {
  // Checked when the route is mounted: the app does not start without a secret.
  const secrets = requireSecrets(CALLBACK_SECRET_ENV, route.name, callbackSecrets());
  const event = route.eventType as string;
  const store = services.idempotencyKeys;
  return async (request) => {
    const logger = services.logger ?? request.log ?? consoleLogger;
    const id = request.params['machineId'] ?? '';
    const now = Date.now();
    const verdict = verifyCallbackToken(
      request.params['token'] ?? '',
      { machineId: definition.id, id, event },
      secrets,
      now,
    );
    if (verdict.kind === 'invalid') {
      return refusal(
        new CallbackInvalidException(
          `Route ${route.name}: the callback URL is not signed for event '${event}' of this instance of '${definition.id}' (changed, or minted for another instance or event). Use the URL as minted.`,
          { machine: definition.id, route: route.name },
        ),
      );
    }
    if (verdict.kind === 'expired') {
      return refusal(
        new CallbackExpiredException(
          `Route ${route.name}: the callback URL expired. Mint a new one with a later expiresAt.`,
          { machine: definition.id, route: route.name },
        ),
      );
    }
    let payload: unknown;
    try {
      payload = request.body;
    } catch (error) {
      return errorToResponse(error, logger, route.name, request);
    }
    const scope = `${route.name} ${id}`;
    const ownerId = newUlid();
    let claimed;
    try {
      claimed = await store.claim({
        scope,
        key: verdict.key,
        fingerprint: 'callback',
        ownerId,
        leaseMs: CALLBACK_LEASE_MS + (route.contention?.waitMs ?? 0),
        ttlMs: verdict.expiresAt - now + CALLBACK_RECORD_MARGIN_MS,
      });
    } catch (error) {
      return errorToResponse(error, logger, route.name, request);
    }
    if (claimed.kind === 'existing') {
      return refusal(
        new CallbackUsedException(
          claimed.record.status === 'done'
            ? `Route ${route.name}: the callback URL was already used: its event '${event}' was sent. A callback URL sends its event once.`
            : `Route ${route.name}: the callback URL is being used by another request. A callback URL sends its event once.`,
          { machine: definition.id, route: route.name },
        ),
      );
    }
    const idempotent: IdempotentRequest = {
      scope,
      key: verdict.key,
      ownerId,
      committed: false,
      stored: false,
      oneTimeUse: true,
    };
    const response = await handle(
      withBody(request, payload === undefined ? {} : { payload }),
      idempotent,
    );
    try {
      if (idempotent.stored) return response;
      if (idempotent.committed)
        await store.complete({
          scope,
          key: verdict.key,
          ownerId,
          response: storedResponse(response),
        });
      else await store.release(scope, verdict.key, ownerId);
    } catch (error) {
      // The answer stands: a claim left pending blocks the URL until its lease runs out.
      logger.error(`Could not record the use of a callback URL of route ${route.name}`, {
        error,
        route: route.name,
        ...requestLogFields(request),
      });
    }
    return response;
  };
}
