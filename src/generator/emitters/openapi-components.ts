/**
 * The component schemas of the OpenAPI document: error bodies, per machine its state ids and
 * availableEvents entries, per route its payload and success envelope. The client emitter
 * prints its types from the same components.
 */
import type { JsonSchema, ManifestMachine, ManifestRoute, RouteManifest } from '../manifest.js';
import { compareCodeUnits, sortBy } from '../naming.js';
import { FLOW_LIMITED_BODY, FLOW_LIMITED_SCHEMA } from './openapi-flow.js';
import {
  CALLBACK_REFUSED_BODY,
  CALLBACK_REFUSED_SCHEMA,
  WEBHOOK_REFUSED_BODY,
  WEBHOOK_REFUSED_SCHEMA,
} from './openapi-callbacks.js';
import { PRECONDITION_FAILED_BODY, PRECONDITION_FAILED_SCHEMA } from './openapi-http-surface.js';
import { stateEventSchema, stateEventSchemaName } from './openapi-live-state.js';
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
  VALIDATION_ERROR_SCHEMA,
} from './openapi-names.js';

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
  // Only a document with flow control has 429 answers (an unused component is a lint warning).
  if (routes.some((route) => route.flow !== undefined))
    schemas[FLOW_LIMITED_SCHEMA] = FLOW_LIMITED_BODY;
  // Only a document with callback URLs or webhooks has their refusals.
  if (routes.some((route) => route.handler === 'callback'))
    schemas[CALLBACK_REFUSED_SCHEMA] = CALLBACK_REFUSED_BODY;
  if (routes.some((route) => route.handler === 'webhook'))
    schemas[WEBHOOK_REFUSED_SCHEMA] = WEBHOOK_REFUSED_BODY;
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
