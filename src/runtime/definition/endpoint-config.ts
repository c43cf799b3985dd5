/**
 * The endpoint side of what users write: endpoint and forward options in their four formats,
 * contention policies, and the endpoint action hooks with what they receive and answer.
 */
import type { Context, EventObject, EventReference, HttpMethod, OutputConfig } from './types.js';

/** Options of one endpoint (the spec's "Endpoint definition" table). */
export interface EndpointOptions {
  uri?: string;
  method?: HttpMethod | Lowercase<HttpMethod>;
  action?: EndpointActionReference | null;
  output?: OutputConfig | null;
  middleware?: readonly string[];
  status?: number;
  available_events?: boolean;
  /**
   * What a request does while another holds the instance's lock (docs/http.md "Contention
   * policy"): `'reject'` answers 423 (GET 200) with the last committed state at once; `{ wait:
   * ms }` waits for the lock up to `ms` (1 to 60 000), in order of arrival within a process, then
   * answers normally or with the same contention response. Default: the registration's
   * `contention`, else `'reject'`.
   */
  contention?: ContentionConfig;
}

/** An endpoint's contention policy (`EndpointOptions.contention`). */
export type ContentionConfig = 'reject' | { readonly wait: number };

/**
 * One entry of `endpoints`; the four formats stay mixable:
 * - list: `'SUBMIT'` or `SubmitEvent`
 * - string: `{ SUBMIT: '/submit-order' }`
 * - options: `{ APPROVE: { method: 'PATCH', middleware: ['auth:admin'] } }`
 * - event-definition key: `[SubmitEvent, '/submit-order']` or `[SubmitEvent, { ...options }]`
 */
export type EndpointConfig =
  | EventReference
  | Record<string, string | EndpointOptions>
  | readonly [EventReference, string | EndpointOptions];

/** Options of a forwarded endpoint (the spec's "Forwarded endpoint definition" table). */
export interface ForwardOptions extends Omit<EndpointOptions, 'available_events'> {
  child_event?: EventReference;
  available_events?: boolean | null;
}

/** A delegating state's `forward`: list, rename map, or options map. */
export type ForwardConfig = readonly (
  EventReference | Record<string, EventReference | ForwardOptions>
)[];

// ---------------------------------------------------------------------------------------------
// Endpoint actions (lifecycle hooks)

/** A JSON response an endpoint action returns instead of the default one. */
export interface EndpointResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** What hooks of an endpoint action receive; `TEvent` is the machine's events (typed-events.ts). */
export interface EndpointActionArgs<TEvent = EventObject> {
  /** Definition id. */
  machineId: string;
  /** Instance id, when there is an instance. */
  id: string | null;
  /** Pre-transition state in `before`, post-transition state in `after`. */
  state: { value: readonly string[]; context: Context };
  event: TEvent;
  /** Request headers, lower-cased. */
  headers: Record<string, string | undefined>;
  /** Stop the request with this status and message (answered as `{ message }`). */
  abort(status: number, message?: string): never;
}

/** Lifecycle hooks around one endpoint (`before`, `after`, `onException`). */
export interface EndpointActionDefinition<TEvent = EventObject> {
  readonly kind: 'endpointAction';
  readonly name: string;
  /**
   * The error statuses the action may answer (`abort(status)` in `before`, a response of
   * `onException`), with what each means: they are listed in the route's OpenAPI operation and
   * the client's result type. Empty when the action answers none of its own.
   */
  readonly statuses: Readonly<Record<number, string>>;
  before?(args: EndpointActionArgs<TEvent>): void | Promise<void>;
  after?(args: EndpointActionArgs<TEvent>): void | Promise<void>;
  /** `null`/`undefined` re-throws; a response is sent as it is. */
  onException?(
    error: unknown,
    args: EndpointActionArgs<TEvent>,
  ): EndpointResponse | null | undefined | Promise<EndpointResponse | null | undefined>;
}

export type EndpointActionReference<TEvent = EventObject> =
  string | EndpointActionDefinition<TEvent>;
