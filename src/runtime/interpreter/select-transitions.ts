/**
 * Transition selection: which handlers the active leaves resolve an event to (nearest declaration
 * wins, events bubble), and which branch of each passes its calculators and guards.
 */
import {
  isDescendantOrSelf,
  type Handler,
  type StateNode,
  type TransitionBranch,
} from '../definition/state-node.js';
import type { Macrostep } from './macrostep-context.js';

/** A handler and the branch that passed. */
export interface SelectedTransition {
  readonly handler: Handler;
  readonly branch: TransitionBranch;
}

/** What selecting an event produced. */
export type Selection =
  /** No active state (nor an ancestor) handles the event. */
  | { kind: 'unhandled' }
  /** Handlers exist; `selected` holds those whose branch passed (possibly none). */
  | { kind: 'selected'; selected: SelectedTransition[] }
  /** A validation guard failed: the whole event is rejected (`macrostep.validationFailure`). */
  | { kind: 'rejected' };

const UNHANDLED: Selection = Object.freeze({ kind: 'unhandled' });
const REJECTED: Selection = Object.freeze({ kind: 'rejected' });
/** A handler whose validation guard failed. */
const REJECTED_HANDLER = Symbol('rejected');

type BranchOutcome = 'pass' | 'fail' | 'abort' | 'reject';

/** Resolves `eventType` from every active leaf, then evaluates each distinct handler once. */
export function selectTransitions(macrostep: Macrostep, eventType: string): Selection {
  const leaves = macrostep.leaves;
  if (leaves.length === 1) {
    // One leaf, one handler: no list of handlers to build.
    const handler = (leaves[0] as StateNode).handlers.get(eventType);
    if (handler === undefined) return UNHANDLED;
    const result = evaluateHandler(macrostep, handler);
    if (result === REJECTED_HANDLER) return REJECTED;
    return { kind: 'selected', selected: result === null ? [] : [result] };
  }
  const handlers: Handler[] = [];
  for (const leaf of leaves) {
    const handler = leaf.handlers.get(eventType);
    if (handler !== undefined && !handlers.some((known) => known.transition === handler.transition))
      handlers.push(handler);
  }
  if (handlers.length === 0) return UNHANDLED;
  const selected: SelectedTransition[] = [];
  for (const handler of handlers) {
    const result = evaluateHandler(macrostep, handler);
    if (result === REJECTED_HANDLER) return REJECTED;
    if (result !== null) addWithoutConflict(selected, result);
  }
  return { kind: 'selected', selected };
}

/** Evaluates the `@done` transition of a completed compound or parallel state. */
export function selectCompletion(macrostep: Macrostep, handler: Handler): Selection {
  const result = evaluateHandler(macrostep, handler);
  if (result === REJECTED_HANDLER) return REJECTED;
  return { kind: 'selected', selected: result === null ? [] : [result] };
}

function evaluateHandler(
  macrostep: Macrostep,
  handler: Handler,
): SelectedTransition | null | typeof REJECTED_HANDLER {
  macrostep.record(handler.startType);
  for (const branch of handler.transition.branches) {
    const outcome = branch.unconditional ? 'pass' : evaluateBranch(macrostep, branch);
    if (outcome === 'pass') return { handler, branch };
    if (outcome === 'reject') {
      macrostep.record(handler.failType);
      return REJECTED_HANDLER;
    }
    if (outcome === 'abort') break;
  }
  macrostep.record(handler.failType);
  return null;
}

/**
 * What a handler's guards say before its event is sent (`explainAvailableEvents`): `pass` (some
 * branch is taken), `fail` (none is: the event changes nothing), `reject` (a validation guard
 * refuses it, with the message a send would answer) or `unknown` (the answer depends on what the
 * event carries, or a check threw).
 */
export type GuardVerdict =
  | { readonly kind: 'pass' | 'fail' | 'unknown' }
  | { readonly kind: 'reject'; readonly message: string };

/** Tells whether the checks just run read the event's payload (then their outcome says nothing). */
export interface PayloadProbe {
  read: boolean;
}

const PASS: GuardVerdict = Object.freeze({ kind: 'pass' });
const FAIL: GuardVerdict = Object.freeze({ kind: 'fail' });
const UNKNOWN: GuardVerdict = Object.freeze({ kind: 'unknown' });

/**
 * Evaluates a handler's branches as {@link selectTransitions} does (document order, first passing
 * branch wins, a calculator failure stops, the same calculators, guards and context rollback),
 * on a macrostep whose event has no payload to give: a branch whose checks read it (`probe.read`)
 * or throw is `unknown`. A later branch that passes still decides (the event is then taken
 * whichever way the unknown branch goes); a later failure or rejection does not.
 */
export function probeHandler(
  macrostep: Macrostep,
  handler: Handler,
  probe: PayloadProbe,
): GuardVerdict {
  let uncertain = false;
  for (const branch of handler.transition.branches) {
    if (branch.unconditional) return PASS;
    const before = macrostep.context;
    const wasOwned = macrostep.owned;
    probe.read = false;
    let outcome: BranchOutcome | 'unknown';
    try {
      outcome = evaluateBranch(macrostep, branch);
    } catch {
      macrostep.context = before;
      macrostep.owned = wasOwned;
      outcome = 'unknown';
    }
    const failure = macrostep.validationFailure;
    macrostep.validationFailure = null;
    if (probe.read) outcome = 'unknown';
    if (outcome === 'pass') return PASS;
    if (outcome === 'unknown') uncertain = true;
    else if (outcome === 'reject' && failure !== null)
      return uncertain ? UNKNOWN : { kind: 'reject', message: failure.message };
    else if (outcome === 'abort') break;
  }
  return uncertain ? UNKNOWN : FAIL;
}

/**
 * Runs a branch's calculators then guards on a private copy of the context. The copy becomes the
 * working context when the branch passes; when it fails the copy is dropped, which is the
 * rollback of rule 6, and events raised (or messages sent) meanwhile are dropped with it.
 */
function evaluateBranch(macrostep: Macrostep, branch: TransitionBranch): BranchOutcome {
  const before = macrostep.context;
  const wasOwned = macrostep.owned;
  const raisedBefore = macrostep.raised.length;
  const effectsBefore = macrostep.effects.length;
  macrostep.owned = false;
  macrostep.own();
  const outcome = runChecks(macrostep, branch);
  if (outcome !== 'pass') {
    macrostep.context = before;
    macrostep.owned = wasOwned;
    macrostep.raised.length = raisedBefore;
    // Messages sent by a failing guard or calculator are rolled back with its context.
    macrostep.effects.length = effectsBefore;
  }
  return outcome;
}

function runChecks(macrostep: Macrostep, branch: TransitionBranch): BranchOutcome {
  for (const calculator of branch.calculators) {
    try {
      macrostep.call('calculator', calculator, () => calculator.run(macrostep.argsFor(calculator)));
    } catch (error) {
      macrostep.record(calculator.failType, {
        error: `Calculator failed: ${error instanceof Error ? error.message : String(error)}`,
      });
      return 'abort';
    }
    macrostep.record(calculator.passType);
  }
  for (const guard of branch.guards) {
    const args = macrostep.argsFor(guard);
    const override = macrostep.scenario?.plan.guards.get(guard.name);
    const passed =
      override === undefined
        ? macrostep.call('guard', guard, () => guard.run(args))
        : override(args);
    if (passed) {
      macrostep.record(guard.passType);
      continue;
    }
    if (guard.validation !== null) {
      const { message, field } = guard.validation;
      const text = typeof message === 'function' ? message(args as never) : message;
      const errors = { [field ?? guard.failType]: [text] };
      macrostep.record(guard.failType, errors);
      macrostep.validationFailure = { message: text, errors };
      return 'reject';
    }
    macrostep.record(guard.failType);
    return 'fail';
  }
  return 'pass';
}

/**
 * Adds a selected transition unless it conflicts with one already selected (their exit sets
 * overlap). As in SCXML, a transition from a descendant state preempts one from its ancestor;
 * otherwise the earlier one (document order of the active leaves) wins.
 */
function addWithoutConflict(selected: SelectedTransition[], candidate: SelectedTransition): void {
  const domain = candidate.branch.domain;
  if (domain === null) {
    selected.push(candidate);
    return;
  }
  for (let index = 0; index < selected.length; index++) {
    const other = selected[index] as SelectedTransition;
    const otherDomain = other.branch.domain;
    if (otherDomain === null) continue;
    if (!isDescendantOrSelf(domain, otherDomain) && !isDescendantOrSelf(otherDomain, domain))
      continue;
    if (isDescendantOrSelf(candidate.handler.transition.source, other.handler.transition.source))
      selected[index] = candidate;
    return;
  }
  selected.push(candidate);
}
