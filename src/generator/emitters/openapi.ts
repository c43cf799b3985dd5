/**
 * Emits `openapi.json`, an OpenAPI 3.1 document of every route of the manifest.
 *
 * Every named schema (error bodies, state ids, availableEvents entries, each route's payload
 * and success body) is a component built once by `buildComponentSchemas`; the client emitter
 * prints its types from the same components, so the document and the client cannot disagree.
 */
import type {
  GeneratedFile,
  JsonSchema,
  ManifestMachine,
  ManifestRoute,
  RouteManifest,
} from '../manifest.js';
import { pathParamsOf } from '../../runtime/definition/uri.js';
import { verbatimPlaceholder } from '../manifest.js';
import { compareCodeUnits, pascalCase, sortBy } from '../naming.js';
import { GENERATED_HEADER } from '../templates.js';
import {
  errorExample,
  lockedExample,
  sharedErrorExample,
  successExample,
  type MachinesById,
} from './openapi-examples.js';
import {
  badRequestDescription,
  machineTagDescription,
  operationDescription,
  operationSummary,
  pathParameterDescription,
} from './openapi-text.js';
import { withAdminGroup } from './openapi-admin.js';
import {
  addSurfaceHeaders,
  conditionalParameters,
  optionsOperations,
  PRECONDITION_FAILED_BODY,
  PRECONDITION_FAILED_SCHEMA,
  surfaceResponse,
} from './openapi-http-surface.js';
import { stateEventSchema, stateEventSchemaName, streamResponse } from './openapi-live-state.js';
import type { EmitOptions } from './types.js';

const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** Statuses every route may answer with, besides its success status. */
/** The error statuses of the runtime itself; endpoint actions may declare others. */
export type SharedStatus = 400 | 401 | 404 | 409 | 413 | 415 | 422 | 500 | 503;

/** Names of the shared component schemas. */
export const ERROR_SCHEMA = 'ErrorResponse';
export const VALIDATION_ERROR_SCHEMA = 'ValidationErrorResponse';

/** Component name of a machine's state-id enum. */
export function stateSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}State`;
}

/** Component name of a machine's default output. */
export function outputSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}Output`;
}

/** The output schema of a route: the machine's shared component unless the route has its own. */
function routeOutputSchema(route: ManifestRoute): JsonSchema {
  return route.output.kind === 'default' && route.childMachineId === null
    ? ref(outputSchemaName(route.machineId))
    : route.outputSchema;
}

/** Component name of a machine's scenario slugs (an enum of them). */
export function scenarioSlugSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}ScenarioSlug`;
}

/** Component name of an entry of `availableScenarios` (and of `activeScenario`). */
export function scenarioSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}Scenario`;
}

/** Component name of a machine's availableEvents entry. */
export function availableEventSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}AvailableEvent`;
}

/**
 * Component name of a machine's explained availableEvents entry (`enabled`, `reason`), used by
 * the routes of registrations with `explainAvailableEvents`.
 */
export function explainedAvailableEventSchemaName(machineId: string): string {
  return `${pascalCase(machineId)}ExplainedAvailableEvent`;
}

/** Type-name stem of a route: `ticket_staff.assign` -> `TicketStaffAssign`. */
export function routeTypeName(route: ManifestRoute): string {
  return pascalCase(route.name);
}

/**
 * Component name of a route's success body (also its 423 body). Routes answering with the
 * machine's standard envelope share one (`OrderResponse`, `OrderExplainedResponse` with
 * explained availableEvents, and `OrderCreatedResponse` for create); a route with its own
 * output, forwarded child or no availableEvents has its own (`OrderCancelResponse`).
 */
export function responseSchemaName(route: ManifestRoute): string {
  const standard = route.output.kind === 'default' && route.childMachineId === null;
  if (standard && route.handler === 'create')
    return `${pascalCase(route.machineId)}CreatedResponse`;
  if (standard && route.availableEvents)
    return `${pascalCase(route.machineId)}${route.explainAvailableEvents ? 'Explained' : ''}Response`;
  return `${routeTypeName(route)}Response`;
}

/** Component name of a route's payload. */
export function payloadSchemaName(route: ManifestRoute): string {
  return `${routeTypeName(route)}Payload`;
}

/** A reference to a component schema. */
export function ref(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

function objectSchema(properties: Record<string, JsonSchema>, required: string[]): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

/** The document's server when the config names none: the origin serving it. */
const DEFAULT_SERVER = { url: '/', description: 'The server that serves this document' };

/** Name of the security scheme of routes behind an `auth` middleware. */
export const BEARER_AUTH_SCHEME = 'bearerAuth';

const DEFAULT_BEARER_AUTH_DESCRIPTION =
  'Send `Authorization: Bearer <token>`. The roles of a requirement name the guards of the route (`auth:<guard>`) the token must be valid for.';

/** Whether the route sits behind an authentication middleware (and so may answer 401). */
export function isProtected(route: ManifestRoute): boolean {
  return route.authGuards !== null;
}

/**
 * The security requirement of a protected route: the bearer scheme, with the guards of its
 * `auth` middleware as roles (OpenAPI 3.1 lets non-OAuth schemes list roles), as the runtime
 * passes them to the middleware (`auth:admin,editor` is two guards).
 */
function securityRequirement(route: ManifestRoute): JsonSchema[] {
  return [{ [BEARER_AUTH_SCHEME]: [...(route.authGuards ?? [])].sort(compareCodeUnits) }];
}

/** Whether the route reads its payload from the query string instead of a body. */
export function usesQuery(route: ManifestRoute): boolean {
  return route.payloadSource === 'query';
}

/** The success envelope of a route, `{ data: ... }`, as the runtime's response builder writes it. */
function successSchema(route: ManifestRoute): JsonSchema {
  const machineId = route.machineId;
  if (route.handler === 'create') {
    return objectSchema(
      {
        data: objectSchema(
          {
            id: { type: 'string' },
            state: { type: 'array', items: ref(stateSchemaName(machineId)) },
            output: routeOutputSchema(route),
          },
          ['id', 'state', 'output'],
        ),
      },
      ['data'],
    );
  }
  return envelopeSchema(route);
}

/** The machine envelope of an event route; 423 answers with the same shape. */
function envelopeSchema(route: ManifestRoute): JsonSchema {
  const machineId = route.machineId;
  const properties: Record<string, JsonSchema> = {
    id: { type: 'string' },
    state: { type: 'array', items: ref(stateSchemaName(machineId)) },
  };
  const required = ['id', 'state'];
  if (route.availableEvents) {
    properties['availableEvents'] = {
      type: 'array',
      items: ref(
        route.explainAvailableEvents
          ? explainedAvailableEventSchemaName(machineId)
          : availableEventSchemaName(machineId),
      ),
    };
    required.push('availableEvents');
  }
  if (route.childMachineId === null) {
    properties['output'] = routeOutputSchema(route);
    required.push('output');
  } else {
    if (route.output.kind === 'behavior') {
      // A parent-level output behavior answers beside the child's state.
      properties['output'] = { type: 'object' };
      required.push('output');
    }
    // `child` is null when no child was reached (lock contention: nothing was forwarded).
    properties['child'] = {
      anyOf: [
        objectSchema(
          {
            state: { type: 'array', items: ref(stateSchemaName(route.childMachineId)) },
            output: route.outputSchema,
          },
          ['state', 'output'],
        ),
        { type: 'null' },
      ],
    };
    required.push('child');
  }
  properties['isProcessing'] = { type: 'boolean' };
  required.push('isProcessing');
  if (route.scenarios) {
    // Present when the server runs with MACHINE_SCENARIOS_ENABLED (docs/scenarios.md).
    properties['availableScenarios'] = {
      type: 'object',
      additionalProperties: { type: 'array', items: ref(scenarioSchemaName(machineId)) },
    };
    properties['activeScenario'] = ref(scenarioSchemaName(machineId));
  }
  return objectSchema({ data: objectSchema(properties, required) }, ['data']);
}

/** One documented error answer of a route. */
export interface ErrorResponse {
  status: number;
  /** Body schema (a component reference). */
  schema: JsonSchema;
  /** Name under `components.responses` when the answer is shared by routes; 423 is per route. */
  component: string | null;
  /** What an answer of the route's own means (statuses an endpoint action declares). */
  description?: string;
}

/**
 * A 422 body: `{ message, errors }` when fields are at fault (payload, validation guard,
 * `scenarioParams`, a read's `waitFor`), `{ message }` when nothing is a field's fault: a
 * scenario sent with another event or to an instance in another state, a typed child input or
 * output the context cannot satisfy (docs/scenarios.md, docs/delegation.md).
 */
const UNPROCESSABLE_SCHEMA: JsonSchema = {
  anyOf: [ref(VALIDATION_ERROR_SCHEMA), ref(ERROR_SCHEMA)],
};

/** The answers shared by routes: `components.responses`, by status. */
const SHARED_RESPONSES: Readonly<
  Record<SharedStatus, { name: string; description: string; schema: JsonSchema }>
> = {
  400: {
    name: 'BadRequest',
    description:
      'Malformed query string (bad percent-encoding, nested over 32 levels, over 1000 pairs); on routes with a body, malformed JSON or a body that is not a JSON object.',
    schema: ref(ERROR_SCHEMA),
  },
  401: {
    name: 'Unauthorized',
    description: 'Missing or invalid credentials.',
    schema: ref(ERROR_SCHEMA),
  },
  404: {
    name: 'NotFound',
    description: 'Unknown machine instance or model.',
    schema: ref(ERROR_SCHEMA),
  },
  409: {
    name: 'Conflict',
    description:
      'No transition accepts the event in the current state, or an operator paused the instance (code MR_INSTANCE_PAUSED: it accepts no events until resumed; docs/operations.md), ' +
      "or the instance is pinned to an older version of its machine that has no endpoint for the route's event (code MR_PINNED_VERSION_ROUTE; docs/versioning.md).",
    schema: ref(ERROR_SCHEMA),
  },
  413: { name: 'PayloadTooLarge', description: 'Body too large.', schema: ref(ERROR_SCHEMA) },
  415: {
    name: 'UnsupportedMediaType',
    description: 'Body is not JSON.',
    schema: ref(ERROR_SCHEMA),
  },
  422: {
    name: 'ValidationFailed',
    description:
      'Payload or validation guard rejected the event; on a read, an invalid waitFor or timeout: `{ message, errors }`, the fields at fault. ' +
      'Without `errors` when no field is at fault: a scenario that does not apply to the instance (another event or state), or a typed child input or output the context cannot satisfy.',
    schema: UNPROCESSABLE_SCHEMA,
  },
  500: { name: 'ServerError', description: 'Unexpected error.', schema: ref(ERROR_SCHEMA) },
  503: {
    name: 'ServiceUnavailable',
    description:
      'The server is shutting down: send the request again after Retry-After seconds (another instance, or this one once it is back). Nothing was done.',
    schema: ref(ERROR_SCHEMA),
  },
};

/** The `Retry-After` header of a shutdown 503 (`RuntimeClosedException`, http/responses.ts). */
const RETRY_AFTER_HEADER: JsonSchema = {
  description: 'Seconds to wait before sending the request again.',
  schema: { type: 'string', pattern: '^[0-9]+$' },
};

/**
 * The `default` answer of an operation whose endpoint action may answer a status of its own
 * (`abort(status)` in a hook, a response of `onException`) that its `statuses` do not list:
 * the document cannot know it, so it says where it comes from.
 */
const ACTION_DEFAULT_RESPONSE: JsonSchema = {
  description:
    "Another status answered by the endpoint action (abort() in a hook, or a response of onException) that the action's `statuses` do not declare; its body is the action's.",
  content: { 'application/json': { schema: {} } },
};

function shared(status: SharedStatus): ErrorResponse {
  const response = SHARED_RESPONSES[status];
  return { status, schema: response.schema, component: response.name };
}

/** Error answers of a route, in ascending status order: the planned route's statuses. */
export function errorResponses(route: ManifestRoute): ErrorResponse[] {
  const statuses = new Set(route.errorStatuses);
  // An unknown scenario slug is a 404 on any route reading the scenario fields (a documented
  // config, so not part of the runtime's plan).
  if (route.scenarios) statuses.add(404);
  // Any route of a server that is shutting down (its runtime closed): 503 with Retry-After.
  statuses.add(503);
  // A read asked with the If-None-Match of the version it holds: 304, no body (no error, but
  // like the errors not `ok`: the client's result union lists it beside them).
  if (route.handler === 'read') statuses.add(304);
  return [...statuses]
    .sort((a, b) => a - b)
    .map((status): ErrorResponse => {
      if (status === 423) {
        return { status, schema: ref(responseSchemaName(route)), component: null };
      }
      if (status === 304) return { status, schema: { type: 'null' }, component: null };
      if (status === 412) {
        return { status, schema: ref(PRECONDITION_FAILED_SCHEMA), component: null };
      }
      if (isSharedStatus(status)) return shared(status);
      // Declared by the endpoint action: `{ message }`, described by the action.
      return {
        status,
        schema: ref(ERROR_SCHEMA),
        component: null,
        description: route.actionStatuses[String(status)] ?? 'Answered by the endpoint action.',
      };
    });
}

function isSharedStatus(status: number): status is SharedStatus {
  return Object.hasOwn(SHARED_RESPONSES, status);
}

/** The shared answers some operation refers to (an unused component is a lint warning). */
function sharedResponses(used: ReadonlySet<string>): Record<string, JsonSchema> {
  return Object.fromEntries(
    Object.entries(SHARED_RESPONSES)
      .filter(([, { name }]) => used.has(name))
      .map(([status, { name, description, schema }]) => [
        name,
        {
          description,
          ...(status === '503' ? { headers: { 'Retry-After': RETRY_AFTER_HEADER } } : {}),
          content: {
            'application/json': {
              schema,
              example: sharedErrorExample(Number(status) as SharedStatus),
            },
          },
        },
      ]),
  );
}

/**
 * Every component schema: error bodies, per machine its state ids and availableEvents entry,
 * per route its payload and success body. Sorted by name.
 */
export function buildComponentSchemas(manifest: RouteManifest): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {
    [ERROR_SCHEMA]: objectSchema({ message: { type: 'string' } }, ['message']),
    [PRECONDITION_FAILED_SCHEMA]: PRECONDITION_FAILED_BODY,
    [VALIDATION_ERROR_SCHEMA]: objectSchema(
      {
        message: { type: 'string' },
        errors: {
          type: 'object',
          additionalProperties: { type: 'array', items: { type: 'string' } },
        },
      },
      ['message', 'errors'],
    ),
  };
  const routes = manifest.registrations.flatMap((registration) => registration.routes);
  // A child reached only through forwards answers in `child`: its state ids, not its envelope.
  const registered = new Set(routes.map((route) => route.machineId));
  for (const machine of manifest.machines) {
    schemas[stateSchemaName(machine.id)] = { type: 'string', enum: machine.stateIds };
    if (!registered.has(machine.id)) continue;
    schemas[availableEventSchemaName(machine.id)] = availableEventSchema(machine);
    if (routes.some((route) => route.explainAvailableEvents && route.machineId === machine.id))
      schemas[explainedAvailableEventSchemaName(machine.id)] =
        explainedAvailableEventSchema(machine);
    schemas[outputSchemaName(machine.id)] = machine.outputSchema;
  }
  for (const machine of manifest.machines) {
    if (!routes.some((route) => route.scenarios && route.machineId === machine.id)) continue;
    schemas[scenarioSlugSchemaName(machine.id)] =
      machine.scenarioSlugs.length > 0
        ? { type: 'string', enum: machine.scenarioSlugs }
        : { type: 'string' };
    schemas[scenarioSchemaName(machine.id)] = objectSchema(
      {
        slug: ref(scenarioSlugSchemaName(machine.id)),
        description: { type: 'string' },
        hasContinuation: { type: 'boolean' },
      },
      ['slug', 'description', 'hasContinuation'],
    );
  }
  for (const route of routes) {
    // A shared body (`OrderResponse`) is described with the scenario fields when one of its
    // routes answers them; they are optional, so the others' answers still match.
    const name = responseSchemaName(route);
    if (!(name in schemas) || route.scenarios) schemas[name] = successSchema(route);
    if (route.payloadSchema !== null) schemas[payloadSchemaName(route)] = route.payloadSchema;
    // A state stream's messages, typed by the envelope its data carries.
    if (route.handler === 'events') schemas[stateEventSchemaName(name)] = stateEventSchema(name);
  }
  return Object.fromEntries(sortBy(Object.entries(schemas), ([name]) => name));
}

function availableEventSchema(machine: ManifestMachine): JsonSchema {
  const types = [...new Set([...machine.eventTypes, ...machine.forwardedEventTypes])].sort(
    compareCodeUnits,
  );
  const properties: Record<string, JsonSchema> = {
    type: { type: 'string', enum: types },
    source: {
      type: 'string',
      enum: machine.forwardedEventTypes.length > 0 ? ['parent', 'forward'] : ['parent'],
    },
  };
  if (machine.hasRegions) properties['region'] = { type: 'string' };
  return objectSchema(properties, ['type', 'source']);
}

/** The entry of a registration with `explainAvailableEvents`: the spec's, plus `enabled` and `reason`. */
function explainedAvailableEventSchema(machine: ManifestMachine): JsonSchema {
  const entry = availableEventSchema(machine);
  const properties = {
    ...(entry['properties'] as Record<string, JsonSchema>),
    enabled: {
      type: ['boolean', 'null'],
      description:
        'Whether the guards of a transition of this event pass now. false: an ordinary guard fails (sending it changes nothing) or a validation guard refuses it (see reason). null: the guards read the payload, so only sending it can tell.',
    },
    reason: {
      type: 'string',
      description:
        'The message of the validation guard that refuses the event now (the 422 a send would answer).',
    },
  };
  return objectSchema(properties, ['type', 'source', 'enabled']);
}

/** `waitFor` and `timeout` of a read (docs/http.md "Live state"). */
function waitParameters(machineId: string): JsonSchema[] {
  return [
    {
      name: 'waitFor',
      in: 'query',
      required: false,
      description: `Answer once the instance is in this state (or a final one), e.g. ${machineId}.done; the short form without '${machineId}.' is accepted.`,
      schema: { type: 'string' },
    },
    {
      name: 'timeout',
      in: 'query',
      required: false,
      description:
        'Milliseconds to wait for `waitFor` (default 10000): then the current state is answered.',
      schema: { type: 'integer', minimum: 0, maximum: 60000 },
    },
  ];
}

function operation(route: ManifestRoute, machines: MachinesById): JsonSchema {
  const parameters: JsonSchema[] = pathParamsOf(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    description: pathParameterDescription(route, name),
    schema: { type: 'string' },
  }));
  if (route.handler === 'read') parameters.push(...waitParameters(route.machineId));
  if (route.handler === 'events') {
    parameters.push({
      name: 'Last-Event-ID',
      in: 'header',
      required: false,
      description: 'Sequence number of the last state received: only newer states are sent.',
      schema: { type: 'string', pattern: '^[0-9]+$' },
    });
  }
  if (route.idempotency !== undefined) parameters.push(idempotencyKeyParameter(route));
  parameters.push(...conditionalParameters(route));
  if (usesQuery(route) && route.payloadSchema !== null) {
    const properties = (route.payloadSchema['properties'] ?? {}) as Record<string, JsonSchema>;
    const required = (route.payloadSchema['required'] ?? []) as string[];
    // The values of the example run (the answer's example shows their effect).
    const values = route.example?.payload;
    const example = (name: string): JsonSchema => {
      if (typeof values !== 'object' || values === null || Array.isArray(values)) return {};
      const value = values[name];
      return value === undefined ? {} : { example: value };
    };
    for (const [name, schema] of Object.entries(properties)) {
      parameters.push({
        name,
        in: 'query',
        required: required.includes(name),
        schema,
        ...example(name),
      });
    }
  }
  if (usesQuery(route) && route.scenarios) {
    // A query has no null: an empty `scenario=` deactivates the continuation.
    parameters.push(
      {
        name: 'scenario',
        in: 'query',
        required: false,
        schema: { anyOf: [ref(scenarioSlugSchemaName(route.machineId)), { const: '' }] },
      },
      {
        name: 'scenarioParams',
        in: 'query',
        required: false,
        style: 'deepObject',
        explode: true,
        schema: { type: 'object' },
      },
    );
  }
  const errors = errorResponses(route);
  const machine = machines.get(route.machineId)!;
  const child = route.childMachineId === null ? null : (machines.get(route.childMachineId) ?? null);
  const op: JsonSchema = {
    operationId: route.name,
    tags: [route.machineId],
    summary: operationSummary(route),
    description: operationDescription(
      route,
      machine,
      child,
      errors.map((error) => error.status),
    ),
  };
  if (parameters.length > 0) op['parameters'] = parameters;
  if (isProtected(route)) op['security'] = securityRequirement(route);
  if (route.handler !== 'create' && !usesQuery(route)) {
    const body: Record<string, JsonSchema> = {
      type: { type: 'string', const: route.eventType ?? '' },
    };
    if (route.payloadSchema !== null) body['payload'] = ref(payloadSchemaName(route));
    if (route.scenarios) {
      body['scenario'] = {
        anyOf: [ref(scenarioSlugSchemaName(route.machineId)), { type: 'null' }],
      };
      body['scenarioParams'] = { type: 'object' };
    }
    op['requestBody'] = {
      required: route.payloadSchema !== null,
      content: {
        'application/json': {
          schema: objectSchema(body, route.payloadSchema === null ? [] : ['payload']),
          // The request of the example run, whose answer the success example shows.
          ...(route.example === null
            ? {}
            : {
                example: {
                  type: route.eventType ?? '',
                  ...(route.example.payload === null ? {} : { payload: route.example.payload }),
                },
              }),
        },
      },
    };
  }
  const responses: JsonSchema = {
    [String(route.status)]:
      route.handler === 'events'
        ? streamResponse(route, responseSchemaName(route))
        : {
            description:
              route.handler === 'create'
                ? 'Instance created.'
                : route.handler === 'read'
                  ? 'The last committed state; nothing is written. isProcessing: a lock on the instance is held right now.'
                  : 'Event processed.',
            content: {
              'application/json': {
                schema: ref(responseSchemaName(route)),
                example: successExample(route, machines),
              },
            },
          },
  };
  for (const error of errors) {
    const surface = surfaceResponse(route, error.status);
    if (surface !== undefined) {
      responses[String(error.status)] = surface;
      continue;
    }
    responses[String(error.status)] =
      error.status === 400
        ? badRequestResponse(route)
        : error.description !== undefined
          ? {
              description: error.description,
              content: {
                'application/json': {
                  schema: error.schema,
                  example: { message: error.description },
                },
              },
            }
          : error.component === null
            ? {
                description:
                  'The instance is processing another event: its last committed state, isProcessing true.',
                content: {
                  'application/json': {
                    schema: error.schema,
                    example: lockedExample(route, machines),
                  },
                },
              }
            : route.handler !== 'create' && (error.status === 404 || error.status === 409)
              ? routeErrorResponse(route, error, machines)
              : { $ref: `#/components/responses/${error.component}` };
  }
  if (route.idempotency !== undefined) addIdempotencyResponses(route, responses);
  addSurfaceHeaders(route, responses as Record<string, JsonSchema>);
  if (route.action !== null) responses['default'] = ACTION_DEFAULT_RESPONSE;
  op['responses'] = responses;
  return op;
}

/** The `Idempotency-Key` request header of a route with `idempotency` (docs/http.md). */
function idempotencyKeyParameter(route: ManifestRoute): JsonSchema {
  const ttl = route.idempotency!.ttl;
  return {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      `IETF draft Idempotency-Key: a retry with the same key on this route and instance answers the first response (header Idempotency-Replayed: true) and sends no second event. ` +
      `The same key with a different body is 422; while the first request runs, 409. Keys are kept ${ttl} s.`,
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  };
}

/**
 * A route with `idempotency`: the success answer may be a replay (`Idempotency-Replayed`), 409
 * also means a request with the key is in flight, and 422 also a key reused with another body.
 */
function addIdempotencyResponses(route: ManifestRoute, responses: JsonSchema): void {
  const success = responses[String(route.status)] as JsonSchema;
  success['headers'] = {
    'Idempotency-Replayed': {
      description:
        'Present (`true`) when this is the stored answer of an earlier request with the same Idempotency-Key.',
      schema: { type: 'string', const: 'true' },
    },
  };
  const creates = route.handler === 'create';
  const inFlight = `A request with the Idempotency-Key 'order-42' is still being processed on route ${route.name}: retry once it has answered.`;
  const reused = `The Idempotency-Key 'order-42' was already used with a different request on route ${route.name}: send a new key for a new request.`;
  if (creates) {
    responses['409'] = {
      description: 'A request with the same Idempotency-Key is still being processed.',
      content: {
        'application/json': { schema: ref(ERROR_SCHEMA), example: { message: inFlight } },
      },
    };
    responses['422'] = {
      description: 'The Idempotency-Key was already used with a different request.',
      content: { 'application/json': { schema: ref(ERROR_SCHEMA), example: { message: reused } } },
    };
  } else {
    // The event's own 409 example stays (a state refusing the event); the description adds the key.
    responses['409'] = {
      ...(responses['409'] as JsonSchema),
      description: `${SHARED_RESPONSES[409].description} Or a request with the same Idempotency-Key is still being processed ("${inFlight}").`,
    };
    responses['422'] = {
      description: `${SHARED_RESPONSES[422].description} Or the Idempotency-Key was already used with a different request ("${reused}").`,
      content: {
        'application/json': {
          schema: UNPROCESSABLE_SCHEMA,
          example: sharedErrorExample(422),
        },
      },
    };
  }
  // Statuses stay in ascending order.
  const ordered = Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b));
  for (const [status] of ordered) delete responses[status];
  for (const [status, response] of ordered) responses[status] = response;
}

/** The route's 400: what of this request could not be read, with the runtime's message. */
function badRequestResponse(route: ManifestRoute): JsonSchema {
  const readsBody = route.handler !== 'create' && !usesQuery(route);
  return {
    description: badRequestDescription(route),
    content: {
      'application/json': {
        schema: ref(ERROR_SCHEMA),
        example: {
          message: readsBody ? 'Malformed JSON in request body.' : 'Malformed query string.',
        },
      },
    },
  };
}

/** A shared answer with an example naming the route's own machine, event or model. */
function routeErrorResponse(
  route: ManifestRoute,
  error: ErrorResponse,
  machines: MachinesById,
): JsonSchema {
  const shared = SHARED_RESPONSES[error.status as 404 | 409];
  return {
    description: shared.description,
    content: {
      'application/json': {
        schema: error.schema,
        example: errorExample(route, error.status as 404 | 409, machines),
      },
    },
  };
}

function usedResponses(paths: Record<string, Record<string, JsonSchema>>): Set<string> {
  const used = new Set<string>();
  for (const item of Object.values(paths))
    for (const op of Object.values(item))
      for (const response of Object.values(op['responses'] as Record<string, JsonSchema>)) {
        const target = response['$ref'];
        if (typeof target === 'string') used.add(target.slice(target.lastIndexOf('/') + 1));
      }
  return used;
}

/**
 * The routes in the order a reader follows a machine (Redoc lists a tag's operations in the
 * order of `paths`): by registration, create first, then each event where the machine's flow
 * first sends it (breadth first from the initial state), then reads and streams; path and
 * method settle the rest, so the order is deterministic.
 */
function inFlowOrder(routes: readonly ManifestRoute[], machines: MachinesById): ManifestRoute[] {
  const rank = (route: ManifestRoute): string => {
    const flow = machines.get(route.machineId)?.flow ?? [];
    const step = route.eventType === null ? -1 : flow.indexOf(route.eventType);
    const kind =
      route.handler === 'create' ? 0 : route.read !== null || route.eventType === null ? 2 : 1;
    const position = step === -1 ? flow.length : step;
    return `${route.registration}\u0000${kind}${String(position).padStart(6, '0')}\u0000${route.path} ${route.method}`;
  };
  return sortBy(routes, rank);
}

/** Builds the OpenAPI 3.1 document as a plain object (exported for tests and the client emitter). */
export function buildOpenApiDocument(manifest: RouteManifest, options: EmitOptions): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const routes = manifest.registrations.flatMap((registration) => registration.routes);
  const machines: MachinesById = new Map(manifest.machines.map((machine) => [machine.id, machine]));
  const optionsByPath = optionsOperations(routes, {
    sharedResponse: (status) => ({
      $ref: `#/components/responses/${SHARED_RESPONSES[status].name}`,
    }),
    security: (guards) => [{ [BEARER_AUTH_SCHEME]: [...guards].sort(compareCodeUnits) }],
    pathParameter: (route, name) => pathParameterDescription(route, name),
  });
  for (const route of inFlowOrder(routes, machines)) {
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase()] = operation(route, machines);
  }
  // The OPTIONS operation of each path, after its other operations; instance paths
  // (`{prefix}/{machineId}`) have no other, and come after the registration's routes.
  for (const [path, op] of optionsByPath) (paths[path] ??= {})['options'] = op;
  const info: JsonSchema = { title: options.openapi.title, version: options.openapi.version };
  if (options.openapi.description !== null) info['description'] = options.openapi.description;
  const license = options.openapi.license ?? null;
  if (license !== null) info['license'] = { ...license };
  const components: JsonSchema = {
    schemas: buildComponentSchemas(manifest),
    responses: sharedResponses(usedResponses(paths)),
  };
  // Declared only when some route uses it: operations without `security` are public.
  if (routes.some(isProtected)) {
    components['securitySchemes'] = {
      [BEARER_AUTH_SCHEME]: {
        type: 'http',
        scheme: 'bearer',
        description: options.openapi.bearerAuthDescription ?? DEFAULT_BEARER_AUTH_DESCRIPTION,
      },
    };
  }
  return withAdminGroup(options.admin ?? null, {
    openapi: '3.1.0',
    info,
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    servers: options.openapi.servers ?? [DEFAULT_SERVER],
    // Operations are public unless they say otherwise (routes behind `auth` carry their own).
    security: [],
    tags: [...new Set(routes.map((route) => route.machineId))]
      .sort(compareCodeUnits)
      .map((name) => ({ name, description: machineTagDescription(machines.get(name)!) })),
    paths,
    components,
  });
}

/**
 * Emits `openapi.json` (already in its final layout: JSON.stringify with two spaces) and each
 * machine's state diagram, `diagrams/<machine>.gen.mmd` (the Mermaid source its tag embeds).
 */
export function emitOpenApi(manifest: RouteManifest, options: EmitOptions): GeneratedFile[] {
  const json = `${JSON.stringify(buildOpenApiDocument(manifest, options), null, 2)}\n`;
  // The served reference reads the document from a module: a file beside the app would need
  // `import.meta.url`, which a CommonJS build of the app cannot compile.
  const served =
    (options.docs ?? null) === null
      ? []
      : [
          {
            path: 'openapi.gen.ts',
            contents: `${GENERATED_HEADER}\n// prettier-ignore\n${verbatimPlaceholder(0)}\n`,
            verbatim: [`export const openapiDocument = ${JSON.stringify(json)};`],
          },
        ];
  return [
    { path: 'openapi.json', contents: json },
    ...served,
    ...manifest.machines.map((machine) => ({
      path: `diagrams/${machine.id}.gen.mmd`,
      contents: machine.diagram,
    })),
  ];
}
