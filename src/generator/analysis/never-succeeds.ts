/**
 * What `check` warns about although every definition and registration is valid: parts of an
 * application that can never do anything, found on the state graph (state-graph.ts).
 *
 * - a stateless route (an event not in `machineIdFor` / `modelFor`) whose event no initial
 *   configuration accepts: each request starts a new instance, so it fails every time;
 * - an event some state handles that nothing sends: no route of any registration of the
 *   machine, no timer (`after`, `every`, `then`), no schedule, no forward from a parent;
 * - a state no transition path from the initial state enters.
 *
 * Events raised or sent by behaviors (`raise`, `sendTo`, `sendToParent`) cannot be seen without
 * running them, so the second warning names them as the exception. Pure: reads definitions and
 * planned routes only.
 */
import {
  EventNeverSentException,
  RouteNeverSucceedsException,
  UnreachableStateException,
  type MachineRoutesError,
} from '../../runtime/errors.js';
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import { scheduledTransitions } from '../../runtime/definition/schedules.js';
import type { StateNode } from '../../runtime/definition/state-node.js';
import { timedTransitions } from '../../runtime/definition/timed-transitions.js';
import type { TimerRegistration } from '../../runtime/definition/timer-registration.js';
import type { PlannedRoute } from '../../runtime/http/types.js';
import { buildStateGraph, type StateGraph } from './state-graph.js';

/** One registration as the analysis reads it: its name, machine and planned routes. */
export interface AnalysedRegistration {
  name: string;
  machine: MachineDefinition;
  routes: readonly PlannedRoute[];
}

/** The warnings of an application's registrations, in registration and document order. */
export function neverSucceeding(
  registrations: readonly AnalysedRegistration[],
  timers: readonly TimerRegistration[] = [],
): MachineRoutesError[] {
  const graphs = new Map<string, StateGraph>();
  const machines = new Map<string, MachineDefinition>();
  for (const { machine } of registrations) {
    if (machines.has(machine.id)) continue;
    machines.set(machine.id, machine);
    graphs.set(machine.id, buildStateGraph(machine));
  }
  const warnings: MachineRoutesError[] = [];
  for (const registration of registrations) {
    const graph = graphs.get(registration.machine.id)!;
    warnings.push(...statelessRoutes(registration, graph));
  }
  for (const machine of machines.values()) {
    warnings.push(...unsentEvents(machine, registrations, timers));
    warnings.push(...unreachableStates(machine, graphs.get(machine.id)!));
  }
  return warnings;
}

function statelessRoutes(
  registration: AnalysedRegistration,
  graph: StateGraph,
): MachineRoutesError[] {
  // A truncated graph may lack edges out of the initial configurations: no verdict then.
  if (graph.truncated) return [];
  const initial = new Set(graph.initial.map((node) => node.key));
  const accepted = new Set(
    graph.edges.filter((edge) => initial.has(edge.from)).map((edge) => edge.event),
  );
  const states = graph.initial.map((node) => node.value.join(' + ')).join("' or '");
  const machineId = registration.machine.id;
  return registration.routes
    .filter((route) => route.handler === 'stateless' && route.eventType !== null)
    .filter((route) => !accepted.has(route.eventType!))
    .map((route) => {
      const type = route.eventType!;
      return new RouteNeverSucceedsException(
        `Route '${route.name}' (${route.method} ${route.path}) of registration '${registration.name}' ` +
          `is stateless: each request starts a new '${machineId}' instance, and its initial state ` +
          `'${states}' does not accept '${type}', so the route can never succeed. ` +
          `Bind it to an instance: add '${type}' to the registration's machineIdFor (or modelFor), ` +
          `or handle '${type}' in the initial state.`,
        { registration: registration.name, machine: machineId, key: 'machineIdFor', event: type },
      );
    });
}

function unsentEvents(
  machine: MachineDefinition,
  registrations: readonly AnalysedRegistration[],
  timers: readonly TimerRegistration[],
): MachineRoutesError[] {
  const sent = new Set<string>();
  const names: string[] = [];
  for (const registration of registrations) {
    for (const route of registration.routes) {
      if (route.childMachineId === machine.id && route.childEventType !== null)
        sent.add(route.childEventType);
      if (registration.machine.id !== machine.id || route.childMachineId !== null) continue;
      if (route.eventType !== null) sent.add(route.eventType);
    }
    if (registration.machine.id === machine.id) names.push(registration.name);
  }
  for (const timed of timedTransitions(machine)) {
    sent.add(timed.eventType);
    if (timed.timer.kind === 'every' && timed.timer.then !== undefined) sent.add(timed.timer.then);
  }
  for (const registration of timers) {
    if (registration.machine.id !== machine.id) continue;
    for (const scheduled of scheduledTransitions(machine, registration.schedules))
      sent.add(scheduled.eventType);
  }
  const warnings: MachineRoutesError[] = [];
  for (const type of machine.eventTypes) {
    if (sent.has(type)) continue;
    const handlers = statesHandling(machine, type);
    warnings.push(
      new EventNeverSentException(
        `Machine '${machine.id}': event '${type}' is handled by '${handlers.map((state) => state.id).join("', '")}' ` +
          `but nothing sends it: no route of registration${names.length === 1 ? '' : 's'} '${names.join("', '")}', ` +
          `no timer, schedule or forward. List it in the machine's endpoints (and keep it out of the ` +
          `registration's except), or remove its transitions; ignore this if a behavior raises or ` +
          `sends it (raise, sendTo, sendToParent).`,
        { machine: machine.id, path: handlers[0]?.route ?? '', key: type },
      ),
    );
  }
  return warnings;
}

function statesHandling(machine: MachineDefinition, type: string): StateNode[] {
  return [...machine.idMap.values()].filter((state) => state.on.has(type));
}

function unreachableStates(machine: MachineDefinition, graph: StateGraph): MachineRoutesError[] {
  if (graph.truncated) return [];
  const reached = new Set<string>();
  for (const node of graph.nodes) {
    for (const id of node.value)
      for (let state = machine.idMap.get(id) ?? null; state !== null; state = state.parent)
        reached.add(state.id);
  }
  const warnings: MachineRoutesError[] = [];
  for (const state of machine.idMap.values()) {
    // One warning for an unreachable subtree: its top state.
    if (reached.has(state.id) || state.parent === null || !reached.has(state.parent.id)) continue;
    warnings.push(
      new UnreachableStateException(
        `Machine '${machine.id}': state '${state.id}' is never entered: no path of transitions ` +
          `from the initial state leads to it. Add a transition that targets it, or remove it.`,
        { machine: machine.id, path: state.route, key: state.key },
      ),
    );
  }
  return warnings;
}
