/**
 * Events a snapshot accepts, as listed in responses (`availableEvents`).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { StateNode } from '../definition/state-node.js';
import { leafOf, leavesOf } from './macrostep-context.js';
import type { AvailableEvent, MachineSnapshot } from './types.js';

/** An active delegating state, as handed to a `forwardedEvents` resolver. */
export interface ForwardingState {
  /** Full id of the delegating state (the leaf or one of its ancestors). */
  stateId: string;
  /** The region key when the state sits in a parallel state. */
  region: string | undefined;
}

/** Options of `availableEvents`. */
export interface AvailableEventsOptions {
  /**
   * Extension point for delegation: the parent-facing types a running child of `state` accepts
   * now (reading the child needs I/O, so the caller supplies it). Listed with source `forward`
   * after the state's own events.
   */
  forwardedEvents?: (state: ForwardingState) => readonly string[];
}

/**
 * Events the instance accepts now, `{ type, source: 'parent' }` (plus `region`, the region's key,
 * in parallel states). Per active leaf: its own `on` keys in insertion order, then those of its
 * ancestors (unlike the original, events handled by ancestors are included since they would be
 * accepted), de-duplicated per region. `@` events are never listed; guards are not evaluated.
 *
 * @example availableEvents(orderMachine, snapshot) // [{ type: 'APPROVE', source: 'parent' }]
 */
export function availableEvents(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  options: AvailableEventsOptions = {},
): AvailableEvent[] {
  if (snapshot.status === 'done') return [];
  // One leaf without forwards: its types are already unique (build-state-tree), so the
  // de-duplication below, a Map and a Set per call, has nothing to do; nor is a list of leaves
  // needed, and the result is sized at once (pushing onto `[]` allocates room for 17).
  if (snapshot.value.length === 1 && options.forwardedEvents === undefined) {
    const leaf = leafOf(definition, snapshot.value[0] as string);
    const regionKey = regionOf(leaf)?.key;
    const types = leaf.availableTypes;
    const events = new Array<AvailableEvent>(types.length);
    for (let index = 0; index < types.length; index++) {
      const type = types[index] as string;
      events[index] =
        regionKey === undefined
          ? { type, source: 'parent' }
          : { type, source: 'parent', region: regionKey };
    }
    return events;
  }
  const leaves = leavesOf(definition, snapshot.value);
  const result: AvailableEvent[] = [];
  const seen = new Map<string | undefined, Set<string>>();
  for (const leaf of leaves) {
    const region = regionOf(leaf);
    const regionKey = region?.key;
    let types = seen.get(regionKey);
    if (types === undefined) seen.set(regionKey, (types = new Set()));
    for (const type of leaf.availableTypes) {
      if (types.has(type)) continue;
      types.add(type);
      result.push(
        regionKey === undefined
          ? { type, source: 'parent' }
          : { type, source: 'parent', region: regionKey },
      );
    }
    if (options.forwardedEvents === undefined) continue;
    for (const state of leaf.ancestors) {
      if (state.delegation === null) continue;
      for (const type of options.forwardedEvents({ stateId: state.id, region: regionKey })) {
        const key = `forward:${type}`;
        if (types.has(key)) continue;
        types.add(key);
        result.push(
          regionKey === undefined
            ? { type, source: 'forward' }
            : { type, source: 'forward', region: regionKey },
        );
      }
    }
  }
  return result;
}

/** The region (child of the nearest parallel ancestor) a leaf belongs to. */
function regionOf(leaf: StateNode): StateNode | undefined {
  for (let depth = leaf.depth - 1; depth >= 0; depth--) {
    if (leaf.ancestors[depth]?.type === 'parallel') return leaf.ancestors[depth + 1];
  }
  return undefined;
}
