/**
 * Every response body the HTTP layer writes: the machine envelope and, through one builder,
 * every error body (`{ message }`, plus `errors` for 422).
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
  type FieldErrors,
  type MachineRoutesError,
} from '../errors.js';
import { preconditionFailedResponse } from './conditional.js';
import { flowLimitedResponse } from './flow-control.js';
import type { ScenarioSummary } from '../interpreter/scenarios.js';
import type { AvailableEvent } from '../interpreter/types.js';
import type { ScenarioFields } from './scenario-fields.js';
import type {
  EndpointRequest,
  EndpointResponse,
  HttpLogger,
  HttpLogMeta,
  PlannedRoute,
  RouteHandler,
} from './types.js';
import { traceIdOf } from '../telemetry/tracing.js';
import { validationErrorBody } from './validation-errors.js';
import { stderrLogger, type Logger } from '../logger.js';

/** The `data` object of an event endpoint's response, in the spec's field order. */
export interface MachineEnvelopeData {
  id: string;
  state: string[];
  /** Omitted when the endpoint sets `available_events: false`. */
  availableEvents?: AvailableEvent[];
  output: unknown;
  isProcessing: boolean;
  /** Scenarios enabled only: scenarios of the current state by event. */
  availableScenarios?: Record<string, ScenarioSummary[]>;
  /** Scenarios enabled only, while a continuation is active. */
  activeScenario?: ScenarioSummary;
}

/** Fields of {@link machineEnvelope}. */
export interface MachineEnvelopeInput {
  id: string;
  state: readonly string[];
  /** `undefined` leaves the key out. */
  availableEvents: readonly AvailableEvent[] | undefined;
  output: unknown;
  isProcessing: boolean;
  /** Scenarios enabled only (`undefined` leaves both keys out). */
  scenarios?: ScenarioFields | undefined;
}

/**
 * `{ data: { id, state, availableEvents, output, isProcessing } }`, plus `availableScenarios`
 * and `activeScenario` when scenarios are enabled. Keys are written in this order on purpose:
 * clients and snapshots see a stable body.
 */
export function machineEnvelope(input: MachineEnvelopeInput): { data: MachineEnvelopeData } {
  // Assigned one by one rather than spread from conditional literals: every request builds one,
  // and spreading allocates and copies throwaway objects.
  const data = { id: input.id, state: [...input.state] } as MachineEnvelopeData;
  if (input.availableEvents !== undefined) data.availableEvents = [...input.availableEvents];
  data.output = input.output;
  data.isProcessing = input.isProcessing;
  const scenarios = input.scenarios;
  if (scenarios !== undefined) {
    data.availableScenarios = scenarios.availableScenarios;
    if (scenarios.activeScenario !== undefined) data.activeScenario = scenarios.activeScenario;
  }
  return { data };
}

/** Fields of {@link forwardedEnvelope}. */
export interface ForwardedEnvelopeInput extends Omit<MachineEnvelopeInput, 'output' | 'scenarios'> {
  /** The parent-level output behavior's result; `undefined` leaves the key out. */
  output: unknown;
  /** The child the event reached: its state and (filtered) context; `null` when unknown. */
  child: { state: readonly string[]; output: unknown } | null;
}

/**
 * A forwarded endpoint's body (spec "Forwarded endpoint response"):
 * `{ data: { id, state, availableEvents, output?, child: { state, output }, isProcessing } }`,
 * the parent's id and state beside the child's state and context.
 */
export function forwardedEnvelope(input: ForwardedEnvelopeInput): {
  data: Record<string, unknown>;
} {
  return {
    data: {
      id: input.id,
      state: [...input.state],
      ...(input.availableEvents === undefined
        ? {}
        : { availableEvents: [...input.availableEvents] }),
      ...(input.output === undefined ? {} : { output: input.output }),
      child: input.child && { state: [...input.child.state], output: input.child.output },
      isProcessing: input.isProcessing,
    },
  };
}

/** The create endpoint's body: `data.id`, `data.state` and `data.output` only. */
export function createdEnvelope(input: { id: string; state: readonly string[]; output: unknown }): {
  data: { id: string; state: string[]; output: unknown };
} {
  return { data: { id: input.id, state: [...input.state], output: input.output } };
}

/** The one builder of error responses: `{ message }`, or `{ message, errors }` when given. */
export function errorResponse(
  status: number,
  message: string,
  options: { errors?: FieldErrors; headers?: Record<string, string> } = {},
): EndpointResponse {
  return {
    status,
    body: options.errors === undefined ? { message } : { message, errors: options.errors },
    ...(options.headers === undefined ? {} : { headers: options.headers }),
  };
}

/**
 * The 422 response for field errors; `hint` (a sentence, e.g. `payloadPlacementHint`'s) follows
 * the summary message.
 */
export function validationResponse(errors: FieldErrors, hint?: string): EndpointResponse {
  const body = validationErrorBody(errors);
  const message = hint === undefined ? body.message : `${body.message}. ${hint}`;
  return errorResponse(422, message, { errors: body.errors });
}

/**
 * An error whose status and message are meant for the client: `abort(status, message)` in
 * endpoint actions and the adapters' request-parsing failures (400, 413, 415).
 */
export class HttpError extends Error {
  readonly status: number;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, message: string, headers?: Record<string, string>) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.headers = headers;
  }
}

/** `Retry-After` (seconds) of the 503 answered while the runtime closes: a restart's order. */
export const SHUTDOWN_RETRY_AFTER = '1';

/** Default messages of the statuses the layer produces itself. */
export const STATUS_MESSAGES: Readonly<Record<number, string>> = {
  400: 'Bad Request.',
  401: 'Unauthenticated.',
  403: 'Forbidden.',
  404: 'Not Found.',
  405: 'Method Not Allowed.',
  409: 'Conflict.',
  412: 'Precondition Failed.',
  413: 'Payload Too Large.',
  415: 'Unsupported Media Type.',
  422: 'The given data was invalid.',
  500: 'Internal Server Error',
};

/** The typed body of a refused callback or webhook request: `{ message, code }` (and more). */
export function refusal(
  error: MachineRoutesError,
  extra: Record<string, unknown> = {},
): EndpointResponse {
  return { status: error.statusCode, body: { message: error.message, code: error.code, ...extra } };
}

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

/** The request id and trace id a log line of `request` carries. */
export function requestLogFields(
  request: EndpointRequest,
): Pick<HttpLogMeta, 'requestId' | 'traceId'> {
  const traceId = traceIdOf(request.headers);
  return {
    ...(request.id === undefined ? {} : { requestId: request.id }),
    ...(traceId === undefined ? {} : { traceId }),
  };
}

/** A route's answer: the response when nothing in the request's handling awaited, else a promise. */
export type ImmediateAnswer = EndpointResponse | Promise<EndpointResponse>;

const IMMEDIATE = Symbol('machine-routes.immediate-answer');

/**
 * A route handler that also carries `answer`, the same handling without the promise a
 * `RouteHandler` wraps around a response known at once. The adapters call that form
 * ({@link immediateAnswerOf}) and send such a response in the same turn: the promise, its
 * `then` and the microtask hop were a measurable share of a stateless request. The handler is
 * `answer` with its result wrapped in a promise, so both answer alike.
 */
export function withImmediateAnswer(
  answer: (request: EndpointRequest) => ImmediateAnswer,
): RouteHandler {
  const handler: RouteHandler = (request) => {
    const response = answer(request);
    return response instanceof Promise ? response : Promise.resolve(response);
  };
  return Object.assign(handler, { [IMMEDIATE]: answer });
}

/** The immediate form of a handler made by {@link withImmediateAnswer}, else the handler. */
export function immediateAnswerOf(
  handler: RouteHandler,
): (request: EndpointRequest) => ImmediateAnswer {
  return (
    (handler as { [IMMEDIATE]?: (request: EndpointRequest) => ImmediateAnswer })[IMMEDIATE] ??
    handler
  );
}

/** Node's request headers as adapters receive them: lower-cased names, repeats as arrays. */
export type RawRequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** An answer a route can give from the request's method and headers alone, or `null` to handle it. */
export type EarlyAnswer = (method: string, headers: RawRequestHeaders) => EndpointResponse | null;

const EARLY = Symbol('machine-routes.early-answer');

/**
 * `handler` carrying `early`, which adapters call before they read the request's body (Fastify's
 * `onRequest`, before Express's body reader): an answer it gives is sent as it is, without the
 * body being read, the route's middleware or its handler. Flow control's refusals of a header
 * key already known refused (flow-control.ts) use it, so that a flooding key costs its server
 * little more than its headers.
 */
export function withEarlyAnswer(handler: RouteHandler, early: EarlyAnswer): RouteHandler {
  return Object.assign(handler, { [EARLY]: early });
}

/** The early answer of a handler made by {@link withEarlyAnswer}, else `undefined`. */
export function earlyAnswerOf(handler: RouteHandler): EarlyAnswer | undefined {
  return (handler as { [EARLY]?: EarlyAnswer })[EARLY];
}

/** An `HttpLogger` writing to a pino-style logger: `log.error({ err, route }, message)`. */
export function httpLoggerOf(log: Logger): HttpLogger {
  return {
    error(message, meta) {
      // pino's and OpenTelemetry's log-correlation names: `reqId` (Fastify), `trace_id`.
      log.error(
        {
          err: meta.error,
          ...(meta.route === undefined ? {} : { route: meta.route }),
          ...(meta.requestId === undefined ? {} : { reqId: meta.requestId }),
          ...(meta.traceId === undefined ? {} : { trace_id: meta.traceId }),
        },
        message,
      );
    },
  };
}

/** The HTTP layer's logger when neither the application nor the framework gives one. */
export const defaultHttpLogger: HttpLogger = httpLoggerOf(stderrLogger);

/**
 * @deprecated Use `defaultHttpLogger`, or better the framework's logger (`httpLoggerOf(app.log)`).
 * Kept for code written against earlier versions; it writes JSON lines to stderr now.
 */
export const consoleLogger: HttpLogger = defaultHttpLogger;
