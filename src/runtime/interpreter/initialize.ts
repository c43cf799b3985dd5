/**
 * `initialize`: computes the initial macrostep of a new instance.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { byDocumentOrder, type StateNode } from '../definition/state-node.js';
import type { EventObject } from '../definition/types.js';
import { addWithDefaults } from '../definition/transitions.js';
import { nextRecordId } from './history.js';
import { Macrostep } from './macrostep-context.js';
import { finishMacrostep, settle } from './macrostep.js';
import { enterStates } from './microstep.js';
import { childInput } from './typed-contracts.js';
import type { MacrostepOptions, MacrostepResult } from './types.js';

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
      maxTransitionDepth: options.maxTransitionDepth,
      parallelDispatch: options.parallelDispatch,
      history: options.history,
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
