/**
 * `initialize`: computes the initial macrostep of a new instance.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { byDocumentOrder, type StateNode } from '../definition/state-node.js';
import type { EventObject } from '../definition/types.js';
import { addWithDefaults } from '../definition/transitions.js';
import { nextRecordId } from './history.js';
import { Macrostep } from './macrostep-context.js';
import { finishMacrostep, processEvent, settle } from './macrostep.js';
import { enterStates } from './microstep.js';
import { childInput } from './typed-contracts.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from './types.js';

const initialEntrySets = new WeakMap<MachineDefinition, readonly StateNode[]>();

/** The states entered at start: the root's initial descendants, in document order. */
function initialEntrySet(definition: MachineDefinition): readonly StateNode[] {
  let states = initialEntrySets.get(definition);
  if (states === undefined) {
    const set = new Set<StateNode>();
    addWithDefaults(definition.root, set);
    set.delete(definition.root);
    states = [...set].sort(byDocumentOrder);
    initialEntrySets.set(definition, states);
  }
  return states;
}

/**
 * What the start of a machine whose initial step runs no behavior always produces: the value
 * of the entered leaves, and how many records the step writes. `null` when the step may run
 * anything (entry actions of the root or an entered state, listeners, `@always`, a final or
 * delegating state, whose completion or child would be settled): only then does the result
 * depend on something besides the definition, the clock (ids) and `createContext`.
 */
interface InertStart {
  readonly leaves: readonly StateNode[];
  readonly value: readonly string[];
  readonly records: number;
}

const inertStarts = new WeakMap<MachineDefinition, InertStart | null>();

function inertStart(definition: MachineDefinition): InertStart | null {
  let start = inertStarts.get(definition);
  if (start === undefined) {
    start = computeInertStart(definition);
    inertStarts.set(definition, start);
  }
  return start;
}

function computeInertStart(definition: MachineDefinition): InertStart | null {
  const { root, listeners } = definition;
  if (root.entry.length > 0 || listeners.entry.length > 0 || listeners.transition.length > 0)
    return null;
  const entrySet = initialEntrySet(definition);
  // `<m>.start`, then per state its `region.enter` (in a parallel state) and `enter` records.
  let records = 1;
  for (const state of entrySet) {
    if (state.entry.length > 0 || state.type === 'final' || state.invocation !== null) return null;
    records += state.parent !== null && state.parent.type === 'parallel' ? 2 : 1;
  }
  const leaves = entrySet.filter((state) => state.type === 'atomic');
  if (leaves.some((leaf) => leaf.hasAlways)) return null;
  // Not frozen: the macrostep reads these leaves where it reads ordinary arrays, and a frozen
  // array's other elements kind would make those reads polymorphic. Only `readonly` guards them.
  return Object.freeze({
    leaves,
    value: leaves.map((leaf) => leaf.id),
    records,
  });
}

/** The snapshot of an inert start: its leaves' value (a copy: the caller's), its record count. */
function inertSnapshot(
  definition: MachineDefinition,
  inert: InertStart,
  id: string,
  context: MachineSnapshot['context'],
): MachineSnapshot {
  const snapshot: MachineSnapshot = {
    machineId: definition.id,
    id,
    value: inert.value.slice(),
    context,
    status: 'active',
    sequence: inert.records,
  };
  if (definition.version !== undefined) snapshot.version = definition.version;
  return snapshot;
}

/**
 * Starts a new instance: `<m>.start` (its record id is the instance id), root entry behaviors,
 * the initial states' entry actions, then `@done`, `@always` and raised events. Behaviors see the
 * event `{ type: '<m>.start' }`. Unlike the original, `@always` of region leaves of an initial
 * parallel state is honoured at start as it is on any later entry.
 *
 * @example const { snapshot, history } = initialize(orderMachine)
 */
export function initialize(
  definition: MachineDefinition,
  options: MacrostepOptions = {},
): MacrostepResult {
  const time = options.now === undefined ? Date.now() : options.now().getTime();
  const id = options.id ?? nextRecordId(time);
  const context = definition.createContext();
  // Without records to build (stateless sends) and nothing that could run, the step's outcome
  // is known from the definition: no macrostep to run. Parallel dispatch only changes how entry
  // actions run, and an inert start has none.
  if (options.history === false && options.parent === undefined && options.context === undefined) {
    const inert = inertStart(definition);
    if (inert !== null) {
      const snapshot = inertSnapshot(definition, inert, id, context);
      return { snapshot, history: [], validationFailure: null, effects: [] };
    }
  }
  if (options.context !== undefined)
    Object.assign(
      context,
      options.parent === undefined
        ? options.context
        : childInput(definition, options.context, options.parent.machineId),
    );
  const event: EventObject = { type: definition.records.start, actor: options.actor ?? null };
  const macrostep = new Macrostep(
    definition,
    id,
    {
      value: [],
      leaves: [],
      context,
      sequence: 0,
      time,
      parent: options.parent,
      machines: options.machines,
      // A child started under its parent's scenario plays it from its first step (isolation).
      scenario: options.scenario,
      maxTransitionDepth: options.maxTransitionDepth,
      parallelDispatch: options.parallelDispatch,
      history: options.history,
      traceBehaviors: options.traceBehaviors,
    },
    event,
  );
  macrostep.owned = true;
  macrostep.history.push(definition.records.start, 'internal', null, macrostep.value, event, id);
  if (definition.root.entry.length > 0) {
    macrostep.record(definition.records.entryStart);
    macrostep.runActions(definition.root.entry);
    macrostep.record(definition.records.entryFinish);
  }
  const entrySet = initialEntrySet(definition);
  macrostep.setLeaves(
    entrySet.filter((state) => state.type === 'atomic' || state.type === 'final'),
  );
  enterStates(macrostep, entrySet);
  settle(macrostep);
  return finishMacrostep(macrostep, null);
}

/** Whether {@link startAndTransition} takes this send as one macrostep (else it returns `null`). */
export function startsAndTransitions(
  definition: MachineDefinition,
  event: EventObject,
  options: MacrostepOptions,
): boolean {
  return (
    options.history === false &&
    options.parent === undefined &&
    options.context === undefined &&
    options.scenario === undefined &&
    // `transition` refuses '@always' with its own error.
    event.type !== '@always' &&
    inertStart(definition) !== null
  );
}

/**
 * `initialize` then `transition` of `event` without history (a stateless send), in one
 * macrostep when the start runs no behavior: the initial snapshot, its result and the leaves
 * lookup of the event's step are not built. The outcome is that of the two calls, the event's
 * step adopting the initial context (`adoptContext`). `null` when the start is not inert or
 * `options` ask for history, a context, a parent or a scenario: call the two functions then.
 */
export function startAndTransition(
  definition: MachineDefinition,
  event: EventObject,
  options: MacrostepOptions,
): MacrostepResult | null {
  if (!startsAndTransitions(definition, event, options)) return null;
  const inert = inertStart(definition)!;
  const time = options.now === undefined ? Date.now() : options.now().getTime();
  const id = options.id ?? nextRecordId(time);
  const context = definition.createContext();
  const macrostep = new Macrostep(
    definition,
    id,
    {
      // A copy: the snapshot is the caller's. The leaves are only read, never written.
      value: inert.value.slice(),
      leaves: inert.leaves as StateNode[],
      context,
      sequence: inert.records,
      // The event's step reads the clock again, as `transition` would.
      time: options.now === undefined ? Date.now() : options.now().getTime(),
      machines: options.machines,
      maxTransitionDepth: options.maxTransitionDepth,
      parallelDispatch: options.parallelDispatch,
      history: false,
      traceBehaviors: options.traceBehaviors,
    },
    event,
  );
  macrostep.owned = true;
  macrostep.history.push(event.type, 'external', event.payload ?? null, macrostep.value, event);
  processEvent(macrostep, event);
  settle(macrostep);
  // A refused event leaves the instance as it started: the input of the rollback.
  const input: MachineSnapshot | null =
    macrostep.validationFailure === null ? null : inertSnapshot(definition, inert, id, context);
  return finishMacrostep(macrostep, input);
}
