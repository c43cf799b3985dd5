/**
 * The error answers of the OpenAPI document (split from openapi.ts): the statuses a route
 * answers besides its success and their bodies, the answers shared by routes
 * (`components.responses`), the Idempotency-Key header and answers, and the per-route 400,
 * 404 and 409 with examples naming the route's own machine.
 */
import type { JsonSchema, ManifestRoute } from '../manifest.js';
import { errorExample, sharedErrorExample, type MachinesById } from './openapi-examples.js';
import { FLOW_LIMITED_SCHEMA } from './openapi-flow.js';
import { PRECONDITION_FAILED_SCHEMA } from './openapi-http-surface.js';
import {
  ERROR_SCHEMA,
  ref,
  responseSchemaName,
  usesQuery,
  VALIDATION_ERROR_SCHEMA,
  type SharedStatus,
} from './openapi-names.js';
import { badRequestDescription } from './openapi-text.js';

/** A route's answer besides its success. */
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
export const UNPROCESSABLE_SCHEMA: JsonSchema = {
  anyOf: [ref(VALIDATION_ERROR_SCHEMA), ref(ERROR_SCHEMA)],
};

/** The answers shared by routes: `components.responses`, by status. */
export const SHARED_RESPONSES: Readonly<
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
export const RETRY_AFTER_HEADER: JsonSchema = {
  description: 'Seconds to wait before sending the request again.',
  schema: { type: 'string', pattern: '^[0-9]+$' },
};

/**
 * The `default` answer of an operation whose endpoint action may answer a status of its own
 * (`abort(status)` in a hook, a response of `onException`) that its `statuses` do not list:
 * the document cannot know it, so it says where it comes from.
 */
export const ACTION_DEFAULT_RESPONSE: JsonSchema = {
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
      if (status === 429 && route.flow !== undefined)
        return { status, schema: ref(FLOW_LIMITED_SCHEMA), component: null };
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
export function sharedResponses(used: ReadonlySet<string>): Record<string, JsonSchema> {
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

/** The `Idempotency-Key` request header of a route with `idempotency` (docs/http.md). */
export function idempotencyKeyParameter(route: ManifestRoute): JsonSchema {
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
export function addIdempotencyResponses(route: ManifestRoute, responses: JsonSchema): void {
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
export function badRequestResponse(route: ManifestRoute): JsonSchema {
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
export function routeErrorResponse(
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
