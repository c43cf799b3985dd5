/**
 * Plain-data types of the HTTP layer: registration options, the planned route table, and the
 * framework-neutral request and response every handler speaks. The webhook and flow-control
 * options are in webhook-types.ts and flow-types.ts.
 */
import type { EventReference, HttpMethod } from '../definition/types.js';
import type { ContentionConfig, EndpointResponse } from '../definition/endpoint-config.js';
import type { TransactionHook } from '../persistence/transaction.js';
import type { FlowControlOptions, RouteFlow } from './flow-types.js';
import type { RouteWebhook, WebhookOptions } from './webhook-types.js';

export type { EndpointResponse, HttpMethod };

/** Options of one `MachineRouter.register` call (the spec's "Router registration options"). */
export interface RegistrationOptions {
  /** URL prefix of every route of the registration (`'orders'`, `'/api/orders'`). Required. */
  prefix: string;
  /**
   * Name of the model the `modelFor` routes bind: the route parameter is its camelCase form
   * (`'Order'` -> `{order}`), and at run time the router's `models` registry provides its
   * {@link ModelBinder binder}. Required when `modelFor` is set.
   */
  model?: string | null;
  /** Field of the model record holding the machine id. Required when `modelFor` is set. */
  attribute?: string | null;
  /** Adds `POST {prefix}/create`. Independent of `only`/`except`. */
  create?: boolean;
  /** Events routed by machine id: `{prefix}/{machineId}{uri}`. */
  machineIdFor?: readonly EventReference[];
  /** Events routed by model binding: `{prefix}/{<model_param>}{uri}`. */
  modelFor?: readonly EventReference[];
  /** Middleware of every route of the registration, before each endpoint's own. */
  middleware?: readonly string[];
  /** Route-name prefix; defaults to the machine id. Give repeated registrations distinct names. */
  name?: string;
  /** Registers only these events (forwarded ones by their parent-facing type). */
  only?: readonly EventReference[] | null;
  /** Registers all events but these. Mutually exclusive with `only`. */
  except?: readonly EventReference[] | null;
  /**
   * Zero-write GET projections of an instance's last committed state (see {@link ReadsConfig}):
   * `GET {prefix}/{machineId}{uri}`, or `{prefix}/{<model_param>}{uri}` when the registration
   * has `model` and `attribute`. Independent of `only`/`except`.
   */
  reads?: ReadsConfig | null;
  /**
   * Adds `GET {prefix}/{machineId}/events` (or the model-bound form): the instance's committed
   * states as Server-Sent Events, each message the read envelope (docs/http.md "Live state").
   */
  stream?: boolean;
  /**
   * Idempotency-Key on the registration's command routes (IETF draft `Idempotency-Key`
   * header, docs/http.md "Idempotency-Key"): `true` for every POST/PUT/PATCH/DELETE route
   * (create included), or {@link IdempotencyOptions}. A retried request with the same key on
   * the same route and instance answers the stored first response and sends no second event.
   */
  idempotency?: boolean | IdempotencyOptions | null;
  /**
   * Guard-aware `availableEvents` on every route of the registration that lists them (event
   * routes, reads, the state stream): each entry also says whether its guards pass now,
   * `enabled: true | false | null` (`null`: the guards read the event's payload), and `reason`,
   * the message of a validation guard that refuses the event (docs/http.md "Explained
   * availableEvents"). Default `false`: entries are the spec's `{ type, source, region? }`.
   */
  explainAvailableEvents?: boolean;
  /**
   * The contention policy of the registration's event routes whose endpoint sets none
   * (docs/http.md "Contention policy"): `'reject'` (the default) or `{ wait: ms }`.
   */
  contention?: ContentionConfig | null;
  /**
   * Flow control of event routes, by event type (forwards by their parent-facing type):
   * in-flight sends, rate and debounce per key (docs/http.md "Flow control"). A request over a
   * limit is answered 429 with `Retry-After` and `{ message, code, limit, retryAfter }`.
   *
   * @example flow: { PAY: { key: { header: 'x-tenant-id' }, concurrency: 4, rate: { limit: 100, interval: 1000 } } }
   */
  flow?: Readonly<Record<string, FlowControlOptions>> | null;
  /**
   * Create-or-send on a business key (docs/http.md "Create-or-send"): these events are sent to
   * the instance bound to the payload's `key` field, which is created with the event applied
   * when no instance has the key yet; one instance per key, also under concurrent requests.
   */
  createOrSend?: CreateOrSendOptions | null;
  /**
   * Callback URLs (docs/callbacks.md): for each listed event, `POST
   * {prefix}/{machineId}/callbacks/{event}/{token}` sends that one event to the instance the
   * token was minted for (`mintCallbackUrl` in an action), once, before the token expires.
   * Needs `MACHINE_CALLBACK_SECRET`.
   *
   * @example callbacks: ['APPROVED']
   */
  callbacks?: readonly EventReference[] | null;
  /**
   * Inbound webhooks by name (docs/callbacks.md): `POST {prefix}/webhooks/{name}` checks the
   * provider's HMAC signature over the raw body, maps the body to an instance and an event, and
   * sends it; a redelivery of the same delivery id answers as the first delivery did.
   */
  webhooks?: Readonly<Record<string, WebhookOptions>> | null;
}

/**
 * The `createOrSend` registration option: each event in `events` is routed at
 * `POST {prefix}{uri}` (its endpoint's method and URI) and sent to the instance whose business
 * key is the payload's `key` field; a request naming a key no instance has yet creates the
 * instance with the event applied, atomically (one instance per key, whatever the concurrency).
 *
 * @example createOrSend: { key: 'orderNumber', events: ['PAYMENT_RECEIVED'] }
 */
export interface CreateOrSendOptions {
  /** A required top-level string or number field of each listed event's payload schema. */
  key: string;
  /** The endpoints routed by key. Not in `machineIdFor` or `modelFor`; not GET. */
  events: readonly EventReference[];
}

/** The object form of the `idempotency` registration option. */
export interface IdempotencyOptions {
  /** Only these events' routes (create is then left out); default every command route. */
  events?: readonly EventReference[];
  /** Seconds a key is remembered after its first request (default 86400, one day). */
  ttl?: number;
}

/** A route that waits for a busy instance's lock (`contention: { wait }`), as planned. */
export interface RouteContention {
  /** Longest wait for the lock, in ms; then the contention response (423, GET 200). */
  waitMs: number;
}

/** A route's Idempotency-Key settings, as planned. */
export interface RouteIdempotency {
  /** Seconds a key is remembered. */
  ttl: number;
  /**
   * How long a request whose key is still in flight waits for the first request's answer, then
   * replays it (ms); past it, or when absent, the draft's 409 (a webhook's redeliveries wait).
   */
  inFlightWaitMs?: number;
}

/** Options of one read (the original's `reads` entry). */
export interface ReadOptions {
  /** Path after the instance parameter; default `/<read name>`. One leading slash, no `{params}`. */
  uri?: string;
  /**
   * `null` (default): the state's output, else the context plus computed values; a list of
   * context keys; or the name of an output behavior in `behavior.outputs`.
   */
  output?: readonly string[] | string | null;
  /** Middleware of this read, after the registration's. */
  middleware?: readonly string[];
  /** Success status (200-299, default 200). */
  status?: number;
  /** Whether the answer lists `availableEvents` (default true). */
  available_events?: boolean;
}

/**
 * The `reads` registration option: `true` (one read, `status`, at `/status`), or reads by name,
 * each `null` (URI `/<name>`), a URI string, or {@link ReadOptions}.
 *
 * @example reads: { status: null, summary: { uri: '/summary', output: ['total'] } }
 */
export type ReadsConfig = true | Readonly<Record<string, ReadOptions | string | null>>;

/** Which controller serves a route (the spec's "Route shapes" table). */
export type RouteHandlerKind =
  | 'create'
  | 'machineIdBound'
  /** Create-or-send: the instance bound to a business key of the payload, created when absent. */
  | 'keyBound'
  | 'modelBound'
  | 'stateless'
  | 'forwardedMachineIdBound'
  | 'forwardedModelBound'
  /** A zero-write projection of the last committed state (`reads`), machineId- or model-bound. */
  | 'read'
  /** The committed states of an instance as Server-Sent Events (`stream: true`). */
  | 'events'
  /** A route of the admin group (docs/operations.md "Admin routes"): its own handler. */
  | 'admin'
  /** A callback URL's route (`callbacks`): one event to the instance its signed token names. */
  | 'callback'
  /** An inbound webhook (`webhooks`): a provider's signed delivery mapped to an event. */
  | 'webhook';

/** How a route finds its machine instance. */
export type RouteBinding =
  | { kind: 'none' }
  | { kind: 'machineId'; param: 'machineId' }
  | { kind: 'model'; param: string; model: string; attribute: string }
  /**
   * Create-or-send (`createOrSend`): the instance whose business key is the payload's `field`,
   * created with the event when there is none. The path has no parameter.
   */
  | { kind: 'key'; field: string };

/**
 * The endpoint's own `output`, as far as plain data can say it. A behavior is named, not
 * carried: the handler resolves it from the definition (`endpointIndex`).
 */
export type RouteOutput =
  { kind: 'default' } | { kind: 'keys'; keys: string[] } | { kind: 'behavior'; name: string };

/**
 * One route of a registration, as plain JSON-serializable data. `MachineRouter.register`
 * mounts exactly this table; the generator emits code from it.
 */
export interface PlannedRoute {
  /** `<name>.<event_snake_lowercase>`, `<name>.create`, `<name>.read.<read name>` or `<name>.events`. */
  name: string;
  /** Route-name prefix of the registration (`name` option, default machine id). */
  registration: string;
  method: HttpMethod;
  /** Full path with OpenAPI-style parameters: `/orders/{machineId}/submit`. */
  path: string;
  handler: RouteHandlerKind;
  /** Definition id of the registered machine. */
  machineId: string;
  /** Event sent to the machine (the parent-facing type for forwards); `null` for create and reads. */
  eventType: string | null;
  /** Reads: the read's name (the key under `reads`); `null` for every other route. */
  read: string | null;
  /** Forwards: the type the child receives. */
  childEventType: string | null;
  /** Forwards: definition id of the child machine. */
  childMachineId: string | null;
  /**
   * Where the endpoint sits in the definition: `definition.endpoints[index]`, or
   * `definition.forwards[index]` for forwards; `null` for create. This is how a handler finds
   * the zod schema, the action and the output behavior that the plan leaves out. `null` for
   * create and reads (a read's output behavior is named in `output`, from `behavior.outputs`).
   */
  endpointIndex: number | null;
  binding: RouteBinding;
  /** Effective middleware: the registration's, then the endpoint's. */
  middleware: string[];
  output: RouteOutput;
  /** Name of the endpoint action, when there is one. */
  action: string | null;
  /** Success status (201 for create). */
  status: number;
  /** Whether responses list `availableEvents` (create never does). */
  availableEvents: boolean;
  /**
   * Set when the listed `availableEvents` are explained (`enabled`, `reason`): the
   * registration's `explainAvailableEvents`, on routes that list them.
   */
  explainAvailableEvents?: true;
  /**
   * Where the request's data comes from: the query string (GET routes) or a JSON body (every
   * other method; create parses its body but reads nothing from it).
   */
  payloadSource: 'query' | 'body';
  /**
   * The guards of the route's `auth` middleware, as the middleware receives them
   * (`auth:admin,editor` → `['admin', 'editor']`, plain `auth` → `[]`); `null` when no `auth`
   * middleware protects the route.
   */
  authGuards: string[] | null;
  /**
   * Every error status the route can answer, ascending: the runtime's (docs/http.md "Errors")
   * and those the endpoint action declares (`actionStatuses`).
   */
  errorStatuses: number[];
  /** Statuses the endpoint action declares, with their descriptions, by status. */
  actionStatuses: Record<string, string>;
  /** Set when the route honours `Idempotency-Key` (the registration's `idempotency`). */
  idempotency?: RouteIdempotency;
  /**
   * Set when the route waits for a busy instance (its endpoint's `contention`, else the
   * registration's); absent: a busy instance is answered at once (`'reject'`).
   */
  contention?: RouteContention;
  /** Set when the registration's `flow` limits the route (429 answers, docs/http.md). */
  flow?: RouteFlow;
  /** Webhook routes: the checked `webhooks` entry. */
  webhook?: RouteWebhook;
}

/**
 * A request as every handler sees it, whatever the framework. Adapters build it; tests can
 * build it by hand.
 */
export interface EndpointRequest {
  /** Upper-case HTTP method. */
  method: string;
  /** Path parameters by name (`machineId`, the model parameter). */
  params: Record<string, string>;
  /** Parsed query string (`a[b]=c` nests, repeated keys become lists), see `parseQueryString`. */
  query: Record<string, unknown>;
  /**
   * Parsed JSON body, `undefined` when there is none. On an adapter's request, reading it throws
   * the 400 or 415 `HttpError` of a body the adapter could not read (malformed JSON, not JSON, a
   * `Content-Encoding`): handlers read it after the route middleware, so middleware that does
   * not read it answers first (docs/http.md "Request lifecycle").
   */
  body: unknown;
  /** Request headers, lower-cased names. */
  headers: Record<string, string | undefined>;
  /**
   * One request header by lower-cased name, without copying them all (`headers` makes a copy
   * on first read). Optional: a hand-built request may leave it out (`headers` is read then).
   */
  header?(name: string): string | undefined;
  /**
   * The framework's logger of this request (Fastify's `request.log`, pino-http's `req.log`):
   * unexpected errors are logged there when the router was given no `logger` of its own.
   */
  log?: HttpLogger;
  /**
   * The request's id, for log lines: the framework's (Fastify's `request.id`, pino-http's
   * `req.id`), else the `x-request-id` header, else one made on first read.
   */
  readonly id?: string;
  /**
   * The body's bytes as received, for signatures over them (webhooks); `undefined` without a
   * body or on a hand-built request that kept none.
   */
  rawBody?(): Buffer | undefined;
}

/** A framework-neutral route handler. Never throws: every failure becomes a JSON response. */
export type RouteHandler = (request: EndpointRequest) => Promise<EndpointResponse>;

/** Where unexpected errors are reported (the response never carries them). */
export interface HttpLogger {
  error(message: string, meta: HttpLogMeta): void;
}

/** What a log line of the HTTP layer carries besides its message. */
export interface HttpLogMeta {
  error: unknown;
  route?: string;
  /** The request's id ({@link EndpointRequest.id}). */
  requestId?: string;
  /** The id of the request's trace: the active span's, else its `traceparent` header's. */
  traceId?: string;
}

/**
 * Finds the record a model-bound route names and reads/writes the field holding its machine
 * id (the spec's Eloquent model + `attribute` + route model binding).
 */
export interface ModelBinder<TRecord = unknown> {
  /** The record named by the route parameter, or `null` (answered with 404). */
  find(param: string): TRecord | null | undefined | Promise<TRecord | null | undefined>;
  /** The machine id stored on the record, `null` when it has none yet. */
  readMachineId(record: TRecord, attribute: string): string | null | undefined;
  /** Stores a freshly created machine id on the record. */
  writeMachineId(record: TRecord, attribute: string, id: string): void | Promise<void>;
  /**
   * Optional, for atomic first use: a hook run inside the transaction creating machine `id`
   * that stores it on the record only if the record still has none, and otherwise throws
   * `RecordAlreadyBoundError` (the machine's commit then rolls back). With it, concurrent first
   * requests on one record create exactly one machine; without it, `writeMachineId` runs after
   * the commit and concurrent first requests may each create one (the last write wins).
   */
  claimMachineId?(record: TRecord, attribute: string, id: string): TransactionHook;
}
