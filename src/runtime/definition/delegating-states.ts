/**
 * The delegating states of a machine as the endpoint normalizer reads them, and the check of
 * forwards whose output needs a child machine that defines outputs.
 */
import { MachineOutputInjectionException } from '../errors.js';
import type { StateTree } from './build-state-tree.js';
import { requiresChildOutput } from './child-output.js';
import type { DelegatingStateInput } from './endpoints.js';
import { isMachineDefinition } from './invocation.js';
import type { IssueCollector } from './issues.js';
import type { MachineDefinition } from './machine-definition.js';
import type { StateNode } from './state-node.js';
import type { ForwardDefinition } from './types.js';

export function collectDelegatingStates(tree: StateTree): DelegatingStateInput[] {
  const states: DelegatingStateInput[] = [];
  for (const node of tree.nodes) {
    if (node.delegation === null) continue;
    states.push({
      stateId: node.id,
      path: node.route,
      forward: node.delegation.forward,
      child: childSummary(node),
    });
  }
  return states;
}

/** The child's events when `machine` is a definition already; delegation resolves the rest later. */
function childSummary(node: StateNode): DelegatingStateInput['child'] {
  const child = node.delegation?.machine;
  if (
    typeof child !== 'object' ||
    child === null ||
    (child as { kind?: unknown }).kind !== 'machine'
  )
    return null;
  const definition = child as MachineDefinition;
  return { id: definition.id, events: definition.events, eventTypes: definition.eventTypes };
}

/**
 * A forward whose output behavior requires the child's output (defineChildOutput) needs a child
 * that defines outputs. Knowable here when the child is a definition; otherwise the endpoint
 * checks when it answers.
 */
export function checkForwardOutputs(
  forwards: readonly ForwardDefinition[],
  tree: StateTree,
  issues: IssueCollector,
): void {
  for (const forward of forwards) {
    // Mocked or partial forwards (tests of normalizeEndpoints) carry no output.
    if (forward.output?.kind !== 'behavior' || !requiresChildOutput(forward.output.run)) continue;
    const state = tree.idMap.get(forward.stateId);
    const child = state?.invocation?.machine;
    if (state === undefined || !isMachineDefinition(child) || child.invalid) continue;
    if (child.idMap.size > 0 && [...child.idMap.values()].some((node) => node.output !== null))
      continue;
    issues.add(
      MachineOutputInjectionException,
      { path: state.route, key: forward.parentEventType },
      `forward '${forward.parentEventType}' uses output '${forward.output.name}', which reads the child's output, ` +
        `but child machine '${child.id}' defines no output on any state.`,
      `Add output: [...keys] (or an output behavior) to the child's final states, or use a plain output behavior.`,
    );
  }
}
