/**
 * Examples of the OpenAPI document that are true of the machine: a create answers the state a
 * new instance is in, an event answers a state that event really reaches (the manifest's
 * examples, computed from the reachable-state graph), a 423 shows a state in which the event is
 * accepted, and each error status shows the message the runtime writes. The outputs are those
 * of the route's example run (example-runs.ts: the machine run in memory with example payloads,
 * so an action's changes show); without a run, the initial output. Pure.
 */
import type { JsonValue, ManifestMachine, ManifestRoute } from '../manifest.js';
import type { SharedStatus } from './openapi-names.js';

/** Machines of the manifest by id. */
export type MachinesById = ReadonlyMap<string, ManifestMachine>;

type JsonObject = { [key: string]: JsonValue };

/** An instance id as the runtime makes them (a ULID); the example runs use it too. */
export const EXAMPLE_ID = '01JCZ8Q4M7X9V2K5N3P6R8T0WY';

function pick(output: JsonObject, keys: readonly string[]): JsonObject {
  return Object.fromEntries(keys.filter((key) => key in output).map((key) => [key, output[key]!]));
}

/**
 * `data.output` of the route's own machine: the example run's, before or after the event; without
 * a run, the initial output, filtered as the route says.
 */
function outputExample(
  route: ManifestRoute,
  machine: ManifestMachine,
  moment: 'before' | 'after' = 'after',
): JsonValue {
  const run = route.example;
  if (run !== null) {
    const output = moment === 'before' ? run.outputBefore : run.outputAfter;
    if (output !== null) return output;
  }
  if (route.output.kind === 'behavior') return {};
  return route.output.kind === 'keys'
    ? pick(machine.initialOutput, route.output.keys)
    : machine.initialOutput;
}

function eventExample(route: ManifestRoute, machine: ManifestMachine) {
  return route.eventType === null ? null : (machine.events[route.eventType]?.example ?? null);
}

/**
 * The example's availableEvents: the listing in that state, explained (`explainAvailableEvents`)
 * as a state whose guards pass: the reachable-state graph says the state accepts each listed
 * event in some context, not whether the example's context is one of them.
 */
function availableEventsExample(route: ManifestRoute, events: JsonValue[]): JsonValue[] {
  if (route.explainAvailableEvents !== true) return events;
  return events.map((event) => ({ ...(event as JsonObject), enabled: true }));
}

/** The envelope of an event route in `state`, as the runtime writes it. */
function envelope(
  route: ManifestRoute,
  machines: MachinesById,
  moment: 'before' | 'after',
  isProcessing: boolean,
): JsonObject {
  const machine = machines.get(route.machineId)!;
  const data: JsonObject = { id: EXAMPLE_ID };
  if (route.childMachineId === null) {
    const example = eventExample(route, machine);
    data['state'] =
      (moment === 'before' ? example?.before : example?.after) ?? machine.initialState;
    if (route.availableEvents)
      data['availableEvents'] = availableEventsExample(
        route,
        (moment === 'before' ? example?.availableEventsBefore : example?.availableEventsAfter) ??
          machine.initialAvailableEvents,
      );
    // The run's before/after belong to its states: without a run example, the graph's states
    // and the initial output.
    data['output'] = outputExample(
      route,
      machine,
      example === null || route.example === null ? 'after' : moment,
    );
  } else {
    const child = machines.get(route.childMachineId)!;
    data['state'] = machine.forwardStates[route.eventType ?? ''] ?? machine.initialState;
    if (route.availableEvents)
      data['availableEvents'] = availableEventsExample(route, machine.initialAvailableEvents);
    if (route.output.kind === 'behavior') data['output'] = {};
    const childExample =
      route.childEventType === null ? null : (child.events[route.childEventType]?.example ?? null);
    data['child'] = isProcessing
      ? null
      : {
          state: childExample?.after ?? child.initialState,
          output:
            route.output.kind === 'keys'
              ? pick(child.initialOutput, route.output.keys)
              : child.initialOutput,
        };
  }
  data['isProcessing'] = isProcessing;
  return { data };
}

/** The success body of a route. */
export function successExample(route: ManifestRoute, machines: MachinesById): JsonObject {
  const machine = machines.get(route.machineId)!;
  if (route.handler === 'create') {
    return {
      data: {
        id: EXAMPLE_ID,
        state: machine.initialState,
        output: outputExample(route, machine),
      },
    };
  }
  return envelope(route, machines, 'after', false);
}

/** The 423 body: the last committed state (one that accepts the event), `isProcessing: true`. */
export function lockedExample(route: ManifestRoute, machines: MachinesById): JsonObject {
  return envelope(route, machines, 'before', true);
}

const SHARED_MESSAGES: Readonly<Record<SharedStatus, JsonObject>> = {
  400: { message: 'Bad Request.' },
  401: { message: 'Unauthenticated.' },
  404: { message: 'Machine not found.' },
  409: { message: 'Conflict.' },
  413: { message: 'Payload Too Large.' },
  415: { message: 'Unsupported Media Type.' },
  // What zod and the runtime write for `{ amount: z.number().min(1) }` sent with 0.
  422: {
    message: 'Too small: expected number to be >=1',
    errors: { 'payload.amount': ['Too small: expected number to be >=1'] },
  },
  500: { message: 'Internal Server Error' },
  503: { message: 'The runtime is closed: no instance can be watched.' },
};

/** The body of a shared error answer (`components.responses`). */
export function sharedErrorExample(status: SharedStatus): JsonObject {
  return SHARED_MESSAGES[status];
}

/** A 404 or 409 body naming the route's own model, machine and event. */
export function errorExample(
  route: ManifestRoute,
  status: 404 | 409,
  machines: MachinesById,
): JsonObject {
  if (status === 404) {
    return {
      message:
        route.binding.kind === 'model' ? `${route.binding.model} not found.` : 'Machine not found.',
    };
  }
  const eventType = route.eventType ?? '';
  const refused = machines.get(route.machineId)!.events[eventType]?.refusedIn ?? null;
  // Every reachable state accepts the event: the runtime's generic answer.
  if (refused === null) return SHARED_MESSAGES[409];
  const state = refused.state.join(', ');
  return {
    message: refused.done
      ? `Machine '${route.machineId}' instance '${EXAMPLE_ID}' is done (in '${state}'); it accepts no event ('${eventType}').`
      : `Machine '${route.machineId}' cannot accept event '${eventType}' in its current state ('${state}'). ` +
        (refused.accepts.length === 0
          ? 'It accepts no event now.'
          : `Events it accepts now: ${refused.accepts.join(', ')} (its availableEvents).`),
  };
}
