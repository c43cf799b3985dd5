/**
 * The response bodies the HTTP layer writes: the machine envelope and, through one builder,
 * every error body (`{ message }`, plus `errors` for 422); `HttpError`, an error meant for the client.
 */
import type { FieldErrors, MachineRoutesError } from '../errors.js';
import type { ScenarioSummary } from '../interpreter/scenarios.js';
import type { AvailableEvent } from '../interpreter/types.js';
import type { ScenarioFields } from './scenario-fields.js';
import type { EndpointResponse } from './types.js';
import { validationErrorBody } from './validation-errors.js';

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
