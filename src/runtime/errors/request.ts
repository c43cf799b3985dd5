/**
 * Errors of a request or a step at run time: what the endpoint layer answers with the class's
 * `statusCode` (docs/errors.md), and the engine's own refusals (lock, depth, timers).
 */
import { MachineRoutesError, type ErrorDetails } from './base.js';

/**
 * A request carries an `Idempotency-Key` whose first request, with the same key on the same
 * route and instance, is still being processed (HTTP 409). Retry once it has answered.
 */
export class IdempotencyKeyInFlightException extends MachineRoutesError {
  readonly code = 'MR_IDEMPOTENCY_KEY_IN_FLIGHT';
  override readonly statusCode = 409;
}

/**
 * An `Idempotency-Key` was reused with a different request body (or query) on the same route
 * and instance (HTTP 422): a key names one request; use a new key for a new request.
 */
export class IdempotencyKeyReusedException extends MachineRoutesError {
  readonly code = 'MR_IDEMPOTENCY_KEY_REUSED';
  override readonly statusCode = 422;
}

/**
 * A typed child input cannot be resolved from the parent context: the parent's `input` names a
 * key its context lacks, or the mapped input fails the child's input schema. At run time the
 * values come from the requests that built the parent's context: 422 when it escapes one
 * (docs/delegation.md, "Typed contracts").
 */
export class MachineInputValidationException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_INPUT_VALIDATION';
  override readonly statusCode = 422;
}

/** A typed output cannot be built from the context (422 when it escapes a request). */
export class MachineOutputResolutionException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_OUTPUT_RESOLUTION';
  override readonly statusCode = 422;
}

/** A typed failure cannot be built from a failed child's error (422 when it escapes a request). */
export class MachineFailureResolutionException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_FAILURE_RESOLUTION';
  override readonly statusCode = 422;
}

/** Field errors keyed by field path (`payload.amount`), each with one or more messages. */
export type FieldErrors = Record<string, string[]>;

/** Request or validation-guard validation failed: answered with 422 `{ message, errors }`. */
export class MachineValidationException extends MachineRoutesError {
  readonly code = 'MR_VALIDATION_FAILED';
  override readonly statusCode = 422;
  readonly errors: FieldErrors;

  constructor(message: string, errors: FieldErrors, details: ErrorDetails = {}) {
    super(message, details);
    this.errors = errors;
  }
}

/**
 * The instance lock is held by someone else. The endpoint layer answers 423 (GET: 200) with
 * the last committed state carried here; 409 is the status of the exception-table entry and of
 * callers outside the endpoint layer.
 */
export class MachineAlreadyRunningException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_ALREADY_RUNNING';
  override readonly statusCode = 409;
  /** Last committed snapshot of the instance, when it could be read. */
  readonly snapshot: unknown;

  constructor(message: string, snapshot: unknown, details: ErrorDetails = {}) {
    super(message, details);
    this.snapshot = snapshot;
  }
}

/** No transition of the current state (or its ancestors) accepts the event. */
export class NoTransitionDefinitionFoundException extends MachineRoutesError {
  readonly code = 'MR_NO_TRANSITION';
  override readonly statusCode = 409;
}

/** Processing one event exceeded `max_transition_depth` (an `@always` or raise loop). */
export class MaxTransitionDepthExceededException extends MachineRoutesError {
  readonly code = 'MR_MAX_TRANSITION_DEPTH_EXCEEDED';
}

/**
 * A timer fire's event made a behavior throw (`cause`): the fire is tried again after
 * `MACHINE_TIMER_BACKOFF`, or, its `MACHINE_TIMER_TRIES` used up (`details.givenUp`), given up
 * with a TRANSITION_FAIL record. Reported to the timer sweep's error handler (the log), never to
 * a request.
 */
export class TimerFireFailedException extends MachineRoutesError {
  readonly code = 'MR_TIMER_FIRE_FAILED';

  constructor(message: string, details: ErrorDetails, cause: unknown) {
    super(message, details);
    this.cause = cause;
  }
}

/** An instance id is unknown, or belongs to another machine definition. */
export class MachineNotFoundException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_NOT_FOUND';
  override readonly statusCode = 404;
}

/**
 * An operator's query (docs/operations.md) names something the machine does not have, or a
 * cursor that is not one of this list's: the message names the machine, the key and what to
 * send instead.
 */
export class InvalidOperationQueryException extends MachineRoutesError {
  readonly code = 'MR_INVALID_OPERATION_QUERY';
  override readonly statusCode = 400;
}

/**
 * An operator paused the instance (docs/operations.md "Pause and resume"): it refuses events
 * until resumed. 409, not the lock's 423: waiting does not help, an operator must resume it.
 */
export class InstancePausedException extends MachineRoutesError {
  readonly code = 'MR_INSTANCE_PAUSED';
  override readonly statusCode = 409;
}

/**
 * A send's precondition refused the instance as it is now (HTTP `If-Match` naming a version the
 * instance has moved on from): HTTP 412, nothing written. `snapshot` is the last committed state
 * the precondition saw, so the answer can name the current version.
 */
export class PreconditionFailedException extends MachineRoutesError {
  readonly code = 'MR_PRECONDITION_FAILED';
  override readonly statusCode = 412;
  /** The instance's last committed snapshot, as the precondition saw it. */
  readonly snapshot: unknown;

  constructor(message: string, snapshot: unknown, details: ErrorDetails = {}) {
    super(message, details);
    this.snapshot = snapshot;
  }
}

/** The runtime was closed (shutting down): it serves no more requests. */
export class RuntimeClosedException extends MachineRoutesError {
  readonly code = 'MR_RUNTIME_CLOSED';
  override readonly statusCode = 503;
}

/** A forwarded event found no running child, or the child does not accept it. */
export class ForwardTargetUnavailableException extends MachineRoutesError {
  readonly code = 'MR_FORWARD_TARGET_UNAVAILABLE';
  override readonly statusCode = 409;
}

/** A request names a scenario slug the machine does not define: 404 `{ message }`. */
export class ScenarioNotFoundException extends MachineRoutesError {
  readonly code = 'MR_SCENARIO_NOT_FOUND';
  override readonly statusCode = 404;
}

/**
 * A scenario cannot play here: the machine is not in its source state, the request sends
 * another event, or its `scenarioParams` are invalid. 422 `{ message }`; nothing is written.
 */
export class ScenarioFailedException extends MachineRoutesError {
  readonly code = 'MR_SCENARIO_FAILED';
  override readonly statusCode = 422;
}

/** Which limit of a route's flow control refused a request. */
export type FlowLimit = 'concurrency' | 'rate' | 'debounce' | 'instances';

/**
 * A request over its route's flow control (HTTP 429, docs/http.md "Flow control"): too many of
 * its key in flight, its key's rate spent, too many instances in a state, or a later request of its key within the debounce
 * window. Nothing was sent. Answered with `Retry-After` (not for `debounce`: the later request
 * is the one that counts) and `{ message, code, limit, retryAfter }`.
 */
export class FlowLimitedException extends MachineRoutesError {
  readonly code = 'MR_FLOW_LIMITED';
  override readonly statusCode = 429;
  readonly limit: FlowLimit;
  /** Seconds to wait before sending again; `null` for a debounced request (do not resend it). */
  readonly retryAfter: number | null;

  constructor(
    message: string,
    limit: FlowLimit,
    retryAfter: number | null,
    details: ErrorDetails = {},
  ) {
    super(message, details);
    this.limit = limit;
    this.retryAfter = retryAfter;
  }
}

/**
 * A callback URL's token (docs/callbacks.md) was not signed with the callback secret for this
 * instance and event: tampered, minted for another instance or event, or not a token (HTTP
 * 403). Body `{ message, code }`; nothing was sent.
 */
export class CallbackInvalidException extends MachineRoutesError {
  readonly code = 'MR_CALLBACK_INVALID';
  override readonly statusCode = 403;
}

/** A genuine callback URL past its expiry (HTTP 410). Body `{ message, code }`; nothing was sent. */
export class CallbackExpiredException extends MachineRoutesError {
  readonly code = 'MR_CALLBACK_EXPIRED';
  override readonly statusCode = 410;
}

/**
 * A callback URL already used (its event committed), or being used by a request still running
 * (HTTP 409). A URL whose first request sent nothing (a 4xx) stays usable. Body
 * `{ message, code }`; nothing was sent.
 */
export class CallbackUsedException extends MachineRoutesError {
  readonly code = 'MR_CALLBACK_USED';
  override readonly statusCode = 409;
}

/**
 * An inbound webhook's delivery (docs/callbacks.md) whose signature header is missing or does
 * not match the body under the webhook's secret, or whose signed timestamp is outside the
 * tolerance (HTTP 401). Body `{ message, code, reason }` (`reason`: `missing`, `mismatch`,
 * `timestamp`); nothing was sent.
 */
export class WebhookSignatureException extends MachineRoutesError {
  readonly code = 'MR_WEBHOOK_SIGNATURE';
  override readonly statusCode = 401;
}
