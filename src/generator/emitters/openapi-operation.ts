/**
 * One operation of the OpenAPI document: a route's parameters, request body, security
 * requirement and every answer it documents.
 */
import type { JsonSchema, ManifestRoute } from '../manifest.js';
import { pathParamsOf } from '../../runtime/definition/uri.js';
import { compareCodeUnits } from '../naming.js';
import { lockedExample, successExample, type MachinesById } from './openapi-examples.js';
import {
  operationDescription,
  operationSummary,
  pathParameterDescription,
} from './openapi-text.js';
import {
  addSurfaceHeaders,
  conditionalParameters,
  surfaceResponse,
} from './openapi-http-surface.js';
import { flowResponse } from './openapi-flow.js';
import {
  CALLBACK_TOKEN_DESCRIPTION,
  callbackRequestBody,
  callbackResponse,
  callbackText,
} from './openapi-callbacks.js';
import { streamResponse } from './openapi-live-state.js';
import {
  objectSchema,
  payloadSchemaName,
  ref,
  responseSchemaName,
  scenarioSlugSchemaName,
  usesQuery,
} from './openapi-names.js';
import {
  ACTION_DEFAULT_RESPONSE,
  addIdempotencyResponses,
  badRequestResponse,
  errorResponses,
  idempotencyKeyParameter,
  routeErrorResponse,
} from './openapi-responses.js';

/** Name of the security scheme of routes behind an `auth` middleware. */
export const BEARER_AUTH_SCHEME = 'bearerAuth';

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

/** The operation of one route. */
export function operation(route: ManifestRoute, machines: MachinesById): JsonSchema {
  const parameters: JsonSchema[] = pathParamsOf(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    description:
      route.handler === 'callback' && name === 'token'
        ? CALLBACK_TOKEN_DESCRIPTION
        : pathParameterDescription(route, name),
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
  if (route.handler === 'callback') {
    const text = callbackText(route);
    op['summary'] = text.summary;
    op['description'] = `${text.lead}\n\n${op['description'] as string}`;
  }
  // Create-or-send: the payload field naming the instance, for tools reading the document.
  if (route.binding.kind === 'key')
    op['x-machine-routes-create-or-send'] = { key: route.binding.field };
  if (parameters.length > 0) op['parameters'] = parameters;
  if (isProtected(route)) op['security'] = securityRequirement(route);
  if (route.handler === 'callback') {
    op['requestBody'] = callbackRequestBody(route);
  } else if (route.handler !== 'create' && !usesQuery(route)) {
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
    const surface =
      callbackResponse(route, error.status) ??
      surfaceResponse(error.status) ??
      flowResponse(route, error.status);
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
