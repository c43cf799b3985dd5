/**
 * Reads of a parent's children for responses: the child a forwarded endpoint reached, and the
 * forwarded events running children accept now (`availableEvents` with `source: 'forward'`).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ForwardDefinition } from '../definition/types.js';
import { availableEvents } from '../interpreter/available-events.js';
import { explainAvailableEvents } from '../interpreter/explain-events.js';
import { activeForwardingStates, availableEventsWithForwards } from '../interpreter/forwarding.js';
import type { AvailableEvent, MachineSnapshot } from '../interpreter/types.js';
import type { Store } from '../persistence/store.js';
import type { AvailableEventsReadOptions } from '../persistence/types.js';

/** The child a forward reaches (running, else the latest one of its state), for `data.child`. */
export async function forwardedChild(
  store: Store,
  parent: MachineSnapshot,
  forward: ForwardDefinition,
): Promise<MachineSnapshot | null> {
  const rows = await store.findChildren({
    parentRootEventId: parent.id,
    parentStateId: forward.stateId,
    childMachineId: forward.childMachineId,
  });
  const row = rows.find((candidate) => candidate.status === 'running') ?? rows[rows.length - 1];
  if (row === undefined) return null;
  return store.load(row.childRootEventId ?? row.id);
}

/**
 * `availableEvents` with the forwarded events the running children accept now; with `explain`,
 * each entry says whether its guards pass (forwarded ones against the child's snapshot).
 */
export async function availableEventsWithChildren(
  store: Store,
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  options: AvailableEventsReadOptions = {},
): Promise<AvailableEvent[]> {
  const states = activeForwardingStates(definition, snapshot);
  if (states.length === 0) {
    const events = availableEvents(definition, snapshot);
    return options.explain === true ? explainAvailableEvents(definition, snapshot, events) : events;
  }
  const children = new Map<string, MachineSnapshot | null>();
  for (const state of states) {
    const [row] = await store.findChildren({
      parentRootEventId: snapshot.id,
      parentStateId: state.parentStateId,
      childMachineId: state.childMachineId,
      statuses: ['running'],
    });
    children.set(
      state.parentStateId,
      row ? await store.load(row.childRootEventId ?? row.id) : null,
    );
  }
  const events = availableEventsWithForwards(definition, snapshot, children);
  return options.explain === true
    ? explainAvailableEvents(definition, snapshot, events, children)
    : events;
}
