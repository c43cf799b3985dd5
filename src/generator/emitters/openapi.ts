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
import { compareCodeUnits, sortBy } from '../naming.js';
import { GENERATED_HEADER } from '../templates.js';
import { lockedExample, successExample, type MachinesById } from './openapi-examples.js';
import {
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
import {
  availableEventSchemaName,
  ERROR_SCHEMA,
  explainedAvailableEventSchemaName,
  objectSchema,
  outputSchemaName,
  payloadSchemaName,
  ref,
  responseSchemaName,
  routeOutputSchema,
  scenarioSchemaName,
  scenarioSlugSchemaName,
  stateSchemaName,
  usesQuery,
  VALIDATION_ERROR_SCHEMA,
} from './openapi-names.js';
import {
  ACTION_DEFAULT_RESPONSE,
  addIdempotencyResponses,
  badRequestResponse,
  errorResponses,
  idempotencyKeyParameter,
  routeErrorResponse,
  SHARED_RESPONSES,
  sharedResponses,
} from './openapi-responses.js';
import type { EmitOptions } from './types.js';

// The names and the error answers moved to modules of their own; their importers keep this one.
export * from './openapi-names.js';
export { errorResponses, type ErrorResponse } from './openapi-responses.js';

const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

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
