/**
 * The output part of a forwarded endpoint's response, from the delegation module's pure
 * functions: `data.child` and the result of the forward's output behavior (which sees the
 * child, see `defineChildOutput`).
 */
import { isMachineDefinition } from '../definition/invocation.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import { forwardedChildData, resolveForwardOutput } from '../interpreter/forward-output.js';
import type { MachineSnapshot } from '../interpreter/types.js';

/**
 * `output` (the behavior's result, `undefined` without a behavior) and `child` (`null` when no
 * child is known) of a forwarded response. Throws MachineOutputInjectionException when the
 * behavior requires a child output the child does not define.
 */
export function forwardedOutput(
  definition: MachineDefinition,
  parent: MachineSnapshot,
  forward: ForwardDefinition,
  childSnapshot: MachineSnapshot | null,
  event: EventObject,
): { output: unknown; child: { state: readonly string[]; output: unknown } | null } {
  const child = definition.idMap.get(forward.stateId)?.invocation?.machine;
  if (!isMachineDefinition(child)) return { output: undefined, child: null };
  const usable =
    childSnapshot !== null && childSnapshot.machineId === child.id ? childSnapshot : null;
  return {
    output: resolveForwardOutput({
      definition,
      snapshot: parent,
      forward,
      child,
      childSnapshot: usable,
      event,
    }),
    child: usable === null ? null : forwardedChildData(forward, child, usable),
  };
}
