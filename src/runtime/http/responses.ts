/**
 * The answer to an error that escaped a route's handling: its typed response when the error is
 * meant for the client, else a logged 500 without internals; and `guarded`, the wrapper that
 * makes a route's handling answer instead of throwing. The bodies themselves are built in
 * response-bodies.ts.
 */
import {
  CallbackExpiredException,
  CallbackInvalidException,
  CallbackUsedException,
  FlowLimitedException,
  ForwardTargetUnavailableException,
  IdempotencyKeyInFlightException,
  IdempotencyKeyReusedException,
  MachineFailureResolutionException,
  MachineInputValidationException,
  MachineOutputResolutionException,
  MachineNotFoundException,
  MachineValidationException,
  NoTransitionDefinitionFoundException,
  RuntimeClosedException,
  ScenarioFailedException,
  ScenarioNotFoundException,
  StateNotInDefinitionException,
  VersionFenceException,
  PinnedVersionRouteException,
  InstanceMigrationFailedException,
  InstancePausedException,
  InvalidOperationQueryException,
  MachineAlreadyRunningException,
  PreconditionFailedException,
  WebhookSignatureException,
} from '../errors.js';
import { preconditionFailedResponse } from './conditional.js';
import { flowLimitedResponse } from './flow-control.js';
import { defaultHttpLogger, requestLogFields } from './http-logger.js';
import {
  errorResponse,
  HttpError,
  refusal,
  SHUTDOWN_RETRY_AFTER,
  STATUS_MESSAGES,
} from './response-bodies.js';
import type { EndpointRequest, EndpointResponse, HttpLogger, PlannedRoute } from './types.js';
import { validationErrorBody } from './validation-errors.js';

/**
 * Turns an error that escaped the lifecycle into a response. Known client-facing errors keep
 * their message; anything else is logged and answered 500 without internals.
 *
 * - `HttpError` (abort, bad input): its status and message.
 * - `MachineValidationException`: 422 `{ message, errors }`.
 * - `MachineNotFoundException`: 404 `{ message: 'Machine not found.' }`.
 * - `ScenarioNotFoundException` 404, `ScenarioFailedException` 422: `{ message }`.
 * - `NoTransitionDefinitionFoundException`, `ForwardTargetUnavailableException`: 409. The
 *   event conflicts with the instance's current state; the original's 500 is a defect.
 * - Every other error with a `statusCode` other than 500 (a paused instance's 409, ...): that
 *   status and `{ message }`; test/runtime/http/error-statuses.test.ts keeps the list complete.
 */
export function errorToResponse(
  error: unknown,
  logger: HttpLogger,
  route?: string,
  request?: EndpointRequest,
): EndpointResponse {
  if (error instanceof HttpError) {
    return errorResponse(
      error.status,
      error.message || (STATUS_MESSAGES[error.status] ?? 'Error.'),
      {
        ...(error.headers ? { headers: error.headers } : {}),
      },
    );
  }
  if (error instanceof MachineValidationException) {
    const body = validationErrorBody(error.errors);
    return errorResponse(422, error.message || body.message, { errors: error.errors });
  }
  if (error instanceof MachineNotFoundException) return errorResponse(404, 'Machine not found.');
  // If-Match named a version the instance moved on from: 412 with its current ETag.
  if (error instanceof PreconditionFailedException) return preconditionFailedResponse(error);
  if (error instanceof FlowLimitedException) return flowLimitedResponse(error);
  // The refusals of callback URLs and webhook signatures, as their routes answer them.
  if (
    error instanceof CallbackInvalidException ||
    error instanceof CallbackExpiredException ||
    error instanceof CallbackUsedException
  )
    return refusal(error);
  if (error instanceof WebhookSignatureException) {
    // Thrown from code that built it without details, the body still has its required shape.
    const reason: unknown = (error.details as Record<string, unknown> | null)?.['reason'];
    return refusal(error, { reason: typeof reason === 'string' ? reason : 'mismatch' });
  }
  if (
    error instanceof IdempotencyKeyInFlightException ||
    error instanceof IdempotencyKeyReusedException ||
    error instanceof StateNotInDefinitionException ||
    error instanceof VersionFenceException ||
    error instanceof InstanceMigrationFailedException ||
    error instanceof PinnedVersionRouteException ||
    error instanceof InstancePausedException ||
    error instanceof InvalidOperationQueryException ||
    error instanceof MachineAlreadyRunningException
  )
    return errorResponse(error.statusCode, error.message);
  // Typed contracts broken by the values requests put in the context (docs/delegation.md).
  if (
    error instanceof MachineInputValidationException ||
    error instanceof MachineOutputResolutionException ||
    error instanceof MachineFailureResolutionException
  )
    return errorResponse(422, error.message);
  // Unknown slug 404, source state or event mismatch 422: `{ message }` (docs/scenarios.md).
  if (error instanceof ScenarioNotFoundException || error instanceof ScenarioFailedException)
    return errorResponse(error.statusCode, error.message);
  // A request that arrives while the server shuts down: try again (elsewhere, or once it is back).
  if (error instanceof RuntimeClosedException)
    return errorResponse(503, error.message, { headers: { 'retry-after': SHUTDOWN_RETRY_AFTER } });
  if (
    error instanceof NoTransitionDefinitionFoundException ||
    error instanceof ForwardTargetUnavailableException
  ) {
    return errorResponse(409, error.message);
  }
  logger.error(`Unhandled error${route === undefined ? '' : ` in route ${route}`}`, {
    error,
    ...(route === undefined ? {} : { route }),
    ...(request === undefined ? {} : requestLogFields(request)),
  });
  return errorResponse(500, STATUS_MESSAGES[500]!);
}

/**
 * Wraps a route's handling so that it never throws: an escaped error becomes its response.
 * Unexpected errors go to `logger` (the router's own), else to the request's framework logger,
 * else to stderr as one JSON line. `extra` is handed through (the event handler's
 * Idempotency-Key claim), so the wrapper is made once per route, not once per request.
 */
export function guarded<Extra = never>(
  route: Pick<PlannedRoute, 'name'>,
  logger: HttpLogger | undefined,
  handle: (request: EndpointRequest, extra?: Extra) => Promise<EndpointResponse>,
): (request: EndpointRequest, extra?: Extra) => Promise<EndpointResponse> {
  return async (request, extra) => {
    try {
      return await handle(request, extra);
    } catch (error) {
      return errorToResponse(
        error,
        logger ?? request.log ?? defaultHttpLogger,
        route.name,
        request,
      );
    }
  };
}
