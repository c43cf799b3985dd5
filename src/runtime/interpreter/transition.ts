/**
 * `transition`: computes the macrostep of one external event. Pure: the input snapshot is not
 * touched and nothing is applied; the caller persists the result.
 */
import { MachineNotFoundException, NoTransitionDefinitionFoundException } from '../errors.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { macrostepFromSnapshot } from './macrostep-context.js';
import { finishMacrostep, processEvent, settle } from './macrostep.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from './types.js';

/**
 * Sends `event` to the instance in `snapshot` and returns the new snapshot, the history records
 * written (continuing `snapshot.sequence`) and deferred effects.
 *
 * - An ordinary guard failure is not an error: the state stays, a `...transition.<route>.<EVENT>.fail`
 *   record is written.
 * - A failed validation guard is returned as `validationFailure` (snapshot value and context
 *   unchanged, `sequence` advanced past the recorded history).
 * - Throws NoTransitionDefinitionFoundException when no active state (nor an ancestor) handles the
 *   event, and MaxTransitionDepthExceededException on an `@always` / raise loop.
 *
 * @example const { snapshot } = transition(orderMachine, current, { type: 'SUBMIT', payload: { amount: 100 } })
 */
export function transition(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  event: EventObject | string,
  options: MacrostepOptions = {},
): MacrostepResult {
  const external: EventObject = typeof event === 'string' ? { type: event } : event;
  if (snapshot.machineId !== definition.id) {
    throw new MachineNotFoundException(
      `Snapshot of machine '${snapshot.machineId}' (instance '${snapshot.id}') cannot be run by machine '${definition.id}'.`,
      { machine: definition.id, key: snapshot.machineId },
    );
  }
  if (snapshot.status === 'done' || external.type === '@always') {
    throw new NoTransitionDefinitionFoundException(
      snapshot.status === 'done'
        ? `Machine '${definition.id}' instance '${snapshot.id}' is done (in '${snapshot.value.join(', ')}'); it accepts no event ('${external.type}').`
        : `Machine '${definition.id}': '@always' is internal and cannot be sent.`,
      { machine: definition.id, path: snapshot.value.join(','), key: external.type },
    );
  }
  const macrostep = macrostepFromSnapshot(definition, snapshot, external, options);
  macrostep.history.push(
    external.type,
    'external',
    external.payload ?? null,
    macrostep.value,
    external,
  );
  processEvent(macrostep, external);
  settle(macrostep);
  return finishMacrostep(macrostep, snapshot);
}
