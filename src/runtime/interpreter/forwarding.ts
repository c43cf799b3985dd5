/**
 * Forwarding (spec "Forwarding"), the pure parts: which running child a parent-facing event goes
 * to, the parent's record of a forwarded event, and the forwarded entries of `availableEvents`.
 * Reading the running child (the `machine_children` row and the child's snapshot) is I/O and
 * belongs to the shell, which hands the child snapshots in.
 */
import { isMachineDefinition } from '../definition/invocation.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { StateNode } from '../definition/state-node.js';
import type { EventObject, ForwardDefinition } from '../definition/types.js';
import { availableEvents, type ForwardingState } from './available-events.js';
import { HistoryWriter } from './history.js';
import { leavesOf } from './macrostep-context.js';
import type {
  AvailableEvent,
  MacrostepOptions,
  MacrostepResult,
  MachineSnapshot,
} from './types.js';

/** Where a forwarded event goes. */
export interface ForwardTarget {
  /** The forward entry (route options, child event definition). */
  forward: ForwardDefinition;
  /** Full id of the active delegating state whose child receives it. */
  parentStateId: string;
  /** The child machine. */
  child: MachineDefinition;
  childMachineId: string;
  /** Type sent to the child. */
  childEventType: string;
  /** Key of the parallel region the delegating state sits in, if any. */
  region: string | undefined;
}

/** An active delegating state that forwards events, as the shell needs it to find its child. */
export interface ActiveForwardingState {
  parentStateId: string;
  childMachineId: string;
  child: MachineDefinition;
  region: string | undefined;
}

/**
 * The child that handles parent event `parentEventType` now: the forward entry declared by an
 * active delegating state (in a parallel state, the region whose state declares it). `null` when
 * no active state forwards that type, or when the parent handles the type itself (the parent's
 * own transitions win, as in the original).
 *
 * @example resolveForward(parent, snapshot, 'PROVIDE_CARD') // { parentStateId: 'parent.processing', childEventType: 'PROVIDE_CARD', ... }
 */
export function resolveForward(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  parentEventType: string,
): ForwardTarget | null {
  if (snapshot.status === 'done') return null;
  const leaves = leavesOf(definition, snapshot.value);
  if (leaves.some((leaf) => leaf.handlers.has(parentEventType))) return null;
  for (const forward of definition.forwards) {
    if (forward.parentEventType !== parentEventType) continue;
    const state = definition.idMap.get(forward.stateId);
    if (state === undefined || !leaves.includes(state)) continue;
    const child = state.invocation?.machine;
    if (!isMachineDefinition(child)) continue;
    return {
      forward,
      parentStateId: state.id,
      child,
      childMachineId: child.id,
      childEventType: forward.childEventType,
      region: regionKeyOf(state),
    };
  }
  return null;
}

/**
 * Active delegating states with forward entries: the children whose snapshots the shell loads
 * for `availableEventsWithForwards`.
 */
export function activeForwardingStates(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
): ActiveForwardingState[] {
  if (snapshot.status === 'done' || definition.forwards.length === 0) return [];
  const result: ActiveForwardingState[] = [];
  for (const leaf of leavesOf(definition, snapshot.value)) {
    const child = leaf.invocation?.machine;
    if (!isMachineDefinition(child)) continue;
    if (!definition.forwards.some((forward) => forward.stateId === leaf.id)) continue;
    result.push({
      parentStateId: leaf.id,
      childMachineId: child.id,
      child,
      region: regionKeyOf(leaf),
    });
  }
  return result;
}

/** True when the child in `snapshot` has a transition for `eventType` (guards not evaluated). */
export function childAccepts(
  child: MachineDefinition,
  snapshot: MachineSnapshot,
  eventType: string,
): boolean {
  if (snapshot.status === 'done' || snapshot.machineId !== child.id) return false;
  return leavesOf(child, snapshot.value).some((leaf) => leaf.handlers.has(eventType));
}

/**
 * The `forwardedEvents` hook of `availableEvents`: for a delegating state, the parent-facing
 * types whose child type the running child accepts now. `children` gives the running child's
 * snapshot by delegating state id (`null`/`undefined`: no running child, nothing forwarded).
 */
export function forwardedEventsResolver(
  definition: MachineDefinition,
  children: (parentStateId: string) => MachineSnapshot | null | undefined,
): (state: ForwardingState) => string[] {
  return ({ stateId }) => {
    const node = definition.idMap.get(stateId);
    const child = node?.invocation?.machine;
    if (!isMachineDefinition(child)) return [];
    const snapshot = children(stateId);
    if (snapshot === null || snapshot === undefined) return [];
    const types: string[] = [];
    for (const forward of definition.forwards) {
      if (forward.stateId === stateId && childAccepts(child, snapshot, forward.childEventType))
        types.push(forward.parentEventType);
    }
    return types;
  };
}

/**
 * `availableEvents` with the forwarded entries (`{ type, source: 'forward', region? }`) of the
 * running children given in `children` (by delegating state id), after the parent's own ones.
 *
 * @example availableEventsWithForwards(parent, snapshot, new Map([['parent.processing', childSnapshot]]))
 */
export function availableEventsWithForwards(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  children: ReadonlyMap<string, MachineSnapshot | null>,
): AvailableEvent[] {
  if (children.size === 0) return availableEvents(definition, snapshot);
  return availableEvents(definition, snapshot, {
    forwardedEvents: forwardedEventsResolver(definition, (stateId) => children.get(stateId)),
  });
}

/**
 * The parent's side of a forwarded event: one external history record of the parent-facing
 * event (spec "Events" 8: the parent receives its type; its state does not change). The child's
 * side is an ordinary `transition` of the child with `childEventType`.
 */
export function recordForwardedEvent(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  event: EventObject,
  options: Pick<MacrostepOptions, 'now'> = {},
): MacrostepResult {
  const time = options.now === undefined ? Date.now() : options.now().getTime();
  const history = new HistoryWriter(definition.id, snapshot.id, snapshot.sequence, time);
  history.push(event.type, 'external', event.payload ?? null, snapshot.value, event);
  history.seal(snapshot.context);
  return {
    snapshot: {
      ...snapshot,
      sequence: history.lastSequence,
      ...(definition.version === undefined ? {} : { version: definition.version }),
    },
    history: history.records,
    validationFailure: null,
    effects: [],
  };
}

/** The key of the region (child of the nearest parallel ancestor) a state sits in. */
function regionKeyOf(state: StateNode): string | undefined {
  for (let depth = state.depth - 1; depth >= 0; depth--) {
    if (state.ancestors[depth]?.type === 'parallel') return state.ancestors[depth + 1]?.key;
  }
  return undefined;
}
