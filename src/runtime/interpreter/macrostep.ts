/**
 * The macrostep loop shared by `initialize` and `transition`: after the first microstep, settle
 * completions (`@done`), then child machines of entered delegating states (a synchronous child's
 * outcome is routed right away), then `@always`, then raised events one at a time (rule 4), until
 * nothing is left or the machine finished.
 */
import { NoTransitionDefinitionFoundException } from '../errors.js';
import type { StateNode } from '../definition/state-node.js';
import type { EventObject } from '../definition/types.js';
import type { Macrostep } from './macrostep-context.js';
import { invokeChild } from './invoke-child.js';
import { isInFinalState, runMicrostep } from './microstep.js';
import { regionDispatchEffects } from './plan-region-dispatch.js';
import { selectCompletion, selectTransitions } from './select-transitions.js';
import type { MacrostepResult, MachineSnapshot } from './types.js';

const ALWAYS = '@always';
const DONE = '@done';

/**
 * Selects and runs the transitions of one event. Throws NoTransitionDefinitionFoundException when
 * no active state (nor an ancestor) handles it; a failed ordinary guard is not an error. An
 * unhandled event is where forwarding to a running child (delegation) will be tried first.
 */
export function processEvent(macrostep: Macrostep, event: EventObject): void {
  const selection = selectTransitions(macrostep, event.type);
  if (selection.kind === 'unhandled') throw noTransition(macrostep, event.type);
  if (selection.kind === 'selected' && selection.selected.length > 0)
    runMicrostep(macrostep, selection.selected);
}

/** Runs internal steps until the configuration is stable. */
export function settle(macrostep: Macrostep): void {
  // The event of the current step: the external one, then each raised event in turn.
  let cause = macrostep.trigger;
  while (!macrostep.finished && macrostep.validationFailure === null) {
    const completed = macrostep.completed.shift();
    if (completed !== undefined) {
      const handler = completed.doneHandler;
      if (handler === null || !isStillComplete(macrostep, completed)) continue;
      macrostep.step(DONE);
      macrostep.event = macrostep.trigger;
      const selection = selectCompletion(macrostep, handler);
      if (selection.kind === 'selected' && selection.selected.length > 0)
        runMicrostep(macrostep, selection.selected);
      continue;
    }
    const invoked = macrostep.invocations.shift();
    if (invoked !== undefined) {
      if (macrostep.leaves.includes(invoked)) invokeChild(macrostep, invoked);
      continue;
    }
    if (macrostep.leaves.some((leaf) => leaf.hasAlways)) {
      // @always behaviors see the event of the step that reached the transient state (rule
      // 3): the external event, or the raised event whose transition led here (the original
      // passes the event that triggered that step).
      macrostep.event = cause;
      const selection = selectTransitions(macrostep, ALWAYS);
      if (selection.kind === 'selected' && selection.selected.length > 0) {
        macrostep.step(ALWAYS);
        runMicrostep(macrostep, selection.selected);
        continue;
      }
      if (selection.kind === 'rejected') return;
    }
    const raised = macrostep.raised.shift();
    if (raised === undefined) return;
    macrostep.step(raised.type);
    macrostep.event = raised;
    cause = raised;
    macrostep.history.push(
      raised.type,
      'internal',
      raised.payload ?? null,
      macrostep.value,
      raised,
    );
    processEvent(macrostep, raised);
  }
}

function isStillComplete(macrostep: Macrostep, state: StateNode): boolean {
  return (
    macrostep.leaves.some((leaf) => leaf.ancestors[state.depth] === state) &&
    isInFinalState(state, macrostep.leaves)
  );
}

/** Finishes the macrostep: root exit and `<m>.finish` when done, then the result. */
export function finishMacrostep(
  macrostep: Macrostep,
  input: MachineSnapshot | null,
): MacrostepResult {
  const { definition } = macrostep;
  if (macrostep.validationFailure !== null && input !== null) {
    macrostep.value = input.value;
    macrostep.context = input.context;
  }
  let status: MachineSnapshot['status'] = 'active';
  if (macrostep.finished && macrostep.validationFailure === null) {
    status = 'done';
    if (definition.root.exit.length > 0) {
      macrostep.record(definition.records.exitStart);
      macrostep.runActions(definition.root.exit);
      macrostep.record(definition.records.exitFinish);
    }
    macrostep.record(definition.records.finish);
  }
  if (macrostep.dispatchedRegions.length > 0 && macrostep.validationFailure === null)
    macrostep.effects.push(...regionDispatchEffects(macrostep));
  macrostep.history.seal(macrostep.context);
  return {
    snapshot: macrostep.snapshot(status),
    history: macrostep.history.records,
    validationFailure: macrostep.validationFailure,
    // A rejected event changes nothing: children started or messages sent on the way are void
    // with the state the step is rolled back to.
    effects: macrostep.validationFailure === null ? macrostep.effects : [],
  };
}

export function noTransition(
  macrostep: Macrostep,
  eventType: string,
): NoTransitionDefinitionFoundException {
  const state = macrostep.value.join(', ');
  // Read by the client of an endpoint (409): what happened and what it can send instead. How a
  // developer makes the state accept the event is in docs/errors.md (MR_NO_TRANSITION).
  const accepted = new Set<string>();
  for (const leaf of macrostep.leaves) for (const type of leaf.availableTypes) accepted.add(type);
  return new NoTransitionDefinitionFoundException(
    `Machine '${macrostep.machineId}' cannot accept event '${eventType}' in its current state ('${state}'). ` +
      (accepted.size === 0
        ? 'It accepts no event now.'
        : `Events it accepts now: ${[...accepted].join(', ')} (its availableEvents).`),
    { machine: macrostep.machineId, path: state, key: eventType },
  );
}
