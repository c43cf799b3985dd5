/**
 * The answer of an event route (spec "Request handling order" 9): the machine envelope, or on a
 * forwarded route the forwarded envelope with the child the event reached.
 */
import { MachineOutputInjectionException } from '../errors.js';
import type { EventObject, MachineDefinitionBase, OutputDefinition } from '../definition/types.js';
import type { AvailableEvent, MachineSnapshot, StoredScenario } from '../interpreter/types.js';
import type { HttpServices } from './http-services.js';
import { forwardedEnvelope, machineEnvelope } from './response-bodies.js';
import type { RouteTarget } from './route-target.js';
import { scenarioFields, type ScenarioServices } from './scenario-fields.js';
import type { EndpointResponse, PlannedRoute } from './types.js';

/** What one answer is made of. */
export interface EventAnswer {
  snapshot: MachineSnapshot;
  status: number;
  isProcessing: boolean;
  event: EventObject;
  kept?: StoredScenario | null;
  /** The child a forwarded send reached, as its step left it (not read again). */
  reached?: MachineSnapshot | undefined;
}

/**
 * Builds the answers of one event route. A machine answer whose available events need no I/O
 * (no forwards) is built synchronously: no promise round trip on the hot path.
 */
export function createEventResponder<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  target: RouteTarget,
  services: HttpServices<D>,
  /** Present when the route answers scenario fields. */
  scenarios: ScenarioServices<D> | undefined,
): (answer: EventAnswer) => EndpointResponse | Promise<EndpointResponse> {
  const machineAnswer = (
    { snapshot, status, isProcessing, event, kept = null }: EventAnswer,
    available: AvailableEvent[] | undefined,
  ): EndpointResponse => ({
    status,
    body: machineEnvelope({
      id: snapshot.id,
      state: snapshot.value,
      availableEvents: available,
      output: services.resolveOutput(definition, snapshot, target.output, event),
      isProcessing,
      scenarios: scenarios && scenarioFields(scenarios, definition, snapshot, kept),
    }),
  });
  const forward = target.forward;
  if (forward === null) {
    return (answer) => {
      const available = route.availableEvents
        ? services.availableEvents(definition, answer.snapshot, route.explainAvailableEvents)
        : undefined;
      return available instanceof Promise
        ? available.then((events) => machineAnswer(answer, events))
        : machineAnswer(answer, available);
    };
  }
  return async ({ snapshot, status, isProcessing, event, reached }) => {
    let available = route.availableEvents
      ? services.availableEvents(definition, snapshot, route.explainAvailableEvents)
      : undefined;
    if (available instanceof Promise) available = await available;
    const child = reached ?? (await services.forwardedChild(definition, snapshot, forward));
    if (services.forwardedOutput) {
      let resolved: ReturnType<NonNullable<typeof services.forwardedOutput>>;
      try {
        resolved = services.forwardedOutput(definition, snapshot, forward, child, event);
      } catch (error) {
        // Contention answers the last committed state (spec "Errors": the standard envelope,
        // isProcessing true): the event was not processed, so an output behavior that reads
        // the child's final output may find the child in a state without one. The parent's own
        // output (state output, else context) stands in; on the normal path this stays an error.
        if (!isProcessing || !(error instanceof MachineOutputInjectionException)) throw error;
        resolved = {
          output: services.resolveOutput(definition, snapshot, null, event),
          child: child && { state: child.value, output: childOutput(child, null) },
        };
      }
      return {
        status,
        body: forwardedEnvelope({
          id: snapshot.id,
          state: snapshot.value,
          availableEvents: available,
          output: resolved.output,
          child: resolved.child,
          isProcessing,
        }),
      };
    }
    return {
      status,
      body: forwardedEnvelope({
        id: snapshot.id,
        state: snapshot.value,
        availableEvents: available,
        // An output behavior describes the parent (reference notes §4.7); key lists filter the child.
        output:
          target.output?.kind === 'behavior'
            ? services.resolveOutput(definition, snapshot, target.output, event)
            : undefined,
        child: child && { state: child.value, output: childOutput(child, target.output) },
        isProcessing,
      }),
    };
  };
}

/** The child's context, filtered when the forward's `output` is a list of keys. */
function childOutput(
  child: MachineSnapshot,
  output: OutputDefinition | null,
): Record<string, unknown> {
  if (output?.kind !== 'keys') return { ...child.context };
  const filtered: Record<string, unknown> = {};
  for (const key of output.keys)
    if (Object.hasOwn(child.context, key)) filtered[key] = child.context[key];
  return filtered;
}
