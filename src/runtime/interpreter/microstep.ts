/**
 * One microstep: exit the states the selected transitions leave (deepest first), run the
 * transition actions, switch the configuration, enter the new states (ancestors first) and note
 * completed compound / parallel states. Order: exit -> transition -> entry (rule 1); targetless
 * transitions only run their actions (rule 2).
 */
import type { ResolvedBehavior } from '../definition/behavior-registry.js';
import {
  byDocumentOrder,
  isLeaf,
  isProperDescendant,
  type StateNode,
} from '../definition/state-node.js';
import { leaveDelegatingState } from './invoke-child.js';
import { carryScenario } from './scenarios.js';
import { deferEntry, planRegionDeferral } from './plan-region-dispatch.js';
import type { Macrostep } from './macrostep-context.js';
import type { SelectedTransition } from './select-transitions.js';

export function runMicrostep(macrostep: Macrostep, selected: readonly SelectedTransition[]): void {
  if (selected.length === 1) {
    const only = selected[0] as SelectedTransition;
    if (only.branch.target === null) {
      macrostep.runActions(only.branch.actions);
      macrostep.record(only.handler.finishType);
      runListeners(macrostep, macrostep.definition.listeners.transition, 'transition');
      return;
    }
  }
  const exitSet = computeExitSet(macrostep.leaves, selected);
  // Listeners skip transient states (spec "Events" 5): leaving one is as silent as entering it.
  const fromTransient = macrostep.leaves.some((leaf) => leaf.transient);
  for (const state of exitSet) exitState(macrostep, state);
  if (exitSet.length > 0 && !fromTransient)
    runListeners(macrostep, macrostep.definition.listeners.exit, 'exit');

  let targeted = false;
  for (const { handler, branch } of selected) {
    macrostep.runActions(branch.actions);
    macrostep.record(handler.finishType);
    if (branch.target !== null) targeted = true;
  }
  if (!targeted) {
    runListeners(macrostep, macrostep.definition.listeners.transition, 'transition');
    return;
  }

  const entrySet = computeEntrySet(selected);
  const leaves = macrostep.leaves.filter((leaf) => !exitSet.includes(leaf));
  for (const state of entrySet) if (isLeaf(state)) leaves.push(state);
  if (leaves.length > 1) leaves.sort(byDocumentOrder);
  macrostep.setLeaves(leaves);
  enterStates(macrostep, entrySet);
}

/** Enters `states` (document order), then runs entry and transition listeners. */
export function enterStates(macrostep: Macrostep, states: readonly StateNode[]): void {
  if (macrostep.parallelDispatch !== null) planRegionDeferral(macrostep, states);
  for (const state of states) enterState(macrostep, state);
  if (macrostep.leaves.every((leaf) => !leaf.transient)) {
    runListeners(macrostep, macrostep.definition.listeners.entry, 'entry');
    runListeners(macrostep, macrostep.definition.listeners.transition, 'transition');
  }
}

function exitState(macrostep: Macrostep, state: StateNode): void {
  const { records } = state;
  if (state.exit.length > 0) {
    macrostep.record(records.exitStart);
    macrostep.runActions(state.exit);
    macrostep.record(records.exitFinish);
  }
  if (state.invocation !== null) leaveDelegatingState(macrostep, state);
  macrostep.record(records.exit);
}

function enterState(macrostep: Macrostep, state: StateNode): void {
  const { records } = state;
  if (state.parent !== null && state.parent.type === 'parallel')
    macrostep.record(records.regionEnter);
  macrostep.record(records.enter);
  const parallelEntry = macrostep.parallelEntries.get(state);
  if (parallelEntry !== undefined) parallelEntry.enteredAt = macrostep.history.lastSequence;
  const deferred = macrostep.deferredEntries.get(state);
  if (deferred !== undefined) deferEntry(macrostep, state, deferred);
  else if (state.entry.length > 0) {
    macrostep.record(records.entryStart);
    macrostep.runActions(state.entry);
    macrostep.record(records.entryFinish);
  }
  if (state.type === 'final') noteCompletion(macrostep, state);
  // The child starts once the step settles: after completions, before @always and raised
  // events (rule 4).
  else if (state.invocation !== null) macrostep.invocations.push(state);
}

/**
 * A final state completes its parent: the root (the machine is done) or a compound state (its
 * `@done` is queued). A completed region may complete its parallel state in turn.
 */
function noteCompletion(macrostep: Macrostep, final: StateNode): void {
  const parent = final.parent;
  if (parent === null) return;
  if (parent.parent === null) {
    macrostep.finished = true;
    return;
  }
  macrostep.completed.push(parent);
  for (
    let region: StateNode = parent;
    region.parent !== null && region.parent.type === 'parallel';
    region = region.parent
  ) {
    const parallel = region.parent;
    if (macrostep.completed.includes(parallel) || !isInFinalState(parallel, macrostep.leaves))
      return;
    macrostep.record(parallel.records.parallelDone);
    macrostep.completed.push(parallel);
  }
}

/** Compound: its active child is final. Parallel: every region is in a final state. */
export function isInFinalState(state: StateNode, leaves: readonly StateNode[]): boolean {
  if (state.type === 'final') return true;
  if (state.type === 'parallel')
    return state.children.every((region) => isInFinalState(region, leaves));
  if (state.type !== 'compound') return false;
  const leaf = leaves.find((candidate) => isProperDescendant(candidate, state));
  const child = leaf?.ancestors[state.depth + 1];
  return child !== undefined && child.type === 'final';
}

/** Active states below each targeted transition's domain, deepest (last in document order) first. */
function computeExitSet(
  leaves: readonly StateNode[],
  selected: readonly SelectedTransition[],
): StateNode[] {
  const exitSet: StateNode[] = [];
  for (const { branch } of selected) {
    const domain = branch.domain;
    if (domain === null) continue;
    for (const leaf of leaves) {
      if (!isProperDescendant(leaf, domain)) continue;
      for (let depth = leaf.depth; depth > domain.depth; depth--) {
        const state = leaf.ancestors[depth] as StateNode;
        if (!exitSet.includes(state)) exitSet.push(state);
      }
    }
  }
  if (exitSet.length > 1) exitSet.sort((a, b) => b.order - a.order);
  return exitSet;
}

function computeEntrySet(selected: readonly SelectedTransition[]): readonly StateNode[] {
  if (selected.length === 1) return (selected[0] as SelectedTransition).branch.entrySet;
  const entrySet: StateNode[] = [];
  for (const { branch } of selected)
    for (const state of branch.entrySet) if (!entrySet.includes(state)) entrySet.push(state);
  return entrySet.sort(byDocumentOrder);
}

/** Runs `config.listen` listeners of one phase; queued ones become deferred effects. */
function runListeners(
  macrostep: Macrostep,
  listeners: readonly ResolvedBehavior[],
  phase: 'entry' | 'exit' | 'transition',
): void {
  if (listeners.length === 0) return;
  const records = macrostep.definition.records;
  const [start, finish] =
    phase === 'entry'
      ? [records.listenEntryStart, records.listenEntryFinish]
      : phase === 'exit'
        ? [records.listenExitStart, records.listenExitFinish]
        : [records.listenTransitionStart, records.listenTransitionFinish];
  macrostep.record(start);
  for (const [index, listener] of listeners.entries()) {
    if (listener.queued) {
      // The job runs it after the commit; the step only records that it was queued.
      macrostep.record(queuedListenerRecord(macrostep.machineId, listener.name, 'dispatched'));
      const carried = carryScenario(macrostep.definition, macrostep.scenario);
      macrostep.effects.push({
        kind: 'listener',
        machineId: macrostep.machineId,
        id: macrostep.id,
        phase,
        index,
        listener: listener.name,
        params: listener.params,
        event: macrostep.event,
        ...(carried === undefined ? {} : { scenario: carried }),
      });
      continue;
    }
    macrostep.own();
    macrostep.call('listener', listener, () => listener.run(macrostep.argsFor(listener)));
  }
  macrostep.record(finish);
}

/** `<m>.listen.queue.<listener>.dispatched|started|completed`: a queued listener's history. */
export function queuedListenerRecord(
  machineId: string,
  listener: string,
  stage: 'dispatched' | 'started' | 'completed',
): string {
  return `${machineId}.listen.queue.${listener}.${stage}`;
}
