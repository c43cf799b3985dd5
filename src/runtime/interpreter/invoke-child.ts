/**
 * Delegating states inside a macrostep: starting the child when the state is entered (inline
 * for a synchronous child, as a `startChild` effect for an asynchronous one) and cancelling it
 * when the state is left. Routing its outcome (`@done.<final>` then `@done`, `@fail`,
 * `@timeout`) is route-child-outcome.ts; the outcome types are child-outcomes.ts.
 *
 * ## The outcome event
 *
 * Behaviors of the routed transition (guards, actions, and the entry actions it causes) see
 * `event`:
 *
 * | `event.type` | `event.payload` |
 * |---|---|
 * | `@done` | `{ childId, childMachineId, finalState, output }`: `finalState` is the key of the child's final state (`approved`), `output` the child's resolved output (its final state's `output`, else its context with computed values) |
 * | `@fail` | `{ childId, childMachineId, error: { name, code, message } }` (`code` is `null` for errors outside the catalogue) |
 * | `@timeout` | `{ childId, childMachineId, after }` (`after` in seconds) |
 *
 * The type is `@done` also when `@done.<final>` routed it. History: `<m>.child.<child>.start`
 * (payload `{ childId }`) when the child starts, `<m>.child.<child>.done|fail|timeout` (the
 * payload above) when its outcome arrives, then the usual transition records.
 */
import type { StateNode } from '../definition/state-node.js';
import type { Context } from '../definition/types.js';
import type {
  InvocationDefinition,
  JobInvocation,
  MachineInvocation,
} from '../definition/invocation.js';
import type {
  CancelChildEffect,
  CancelJobEffect,
  ChildSlot,
  JobSlot,
  PersistChildEffect,
  StartChildEffect,
  StartJobEffect,
} from './effects.js';
import { describeError, finalStateKey, resolveChildMachine } from './child-outcomes.js';
import { nextRecordId } from './history.js';
import { carryScenario, resumeScenario } from './scenarios.js';
import { initialize } from './initialize.js';
import type { Macrostep } from './macrostep-context.js';
import { resolveOutput } from './output.js';
import { forcedOutcome, routeChildOutcome } from './route-child-outcome.js';
import type { MacrostepResult } from './types.js';

/** Starts the child of a delegating state that was entered in this macrostep. */
export function invokeChild(macrostep: Macrostep, state: StateNode): void {
  const invocation = state.invocation as InvocationDefinition;
  const settled = macrostep.settledChildren.indexOf(state);
  if (settled >= 0) macrostep.settledChildren.splice(settled, 1);
  const childId = nextRecordId(macrostep.time);
  let input: Context;
  try {
    input = invocation.mapInput(macrostep.context, macrostep.event);
  } catch (error) {
    // The child cannot start: its outcome is a failure (thrown on when nothing handles @fail).
    const start = invocation.kind === 'job' ? { jobId: childId } : { childId };
    macrostep.record(invocation.records.start, start);
    const outcome =
      invocation.kind === 'job'
        ? { outcome: 'fail' as const, jobId: childId, error: describeError(error) }
        : { outcome: 'fail' as const, childId, error: describeError(error) };
    routeChildOutcome(macrostep, state, outcome, error);
    return;
  }
  const override = macrostep.scenario?.plan.children.get(state.id);
  if (override?.kind === 'outcome') {
    // The scenario decides the outcome: no child (or job) runs, the outcome is routed at once.
    const start = invocation.kind === 'job' ? { jobId: childId } : { childId };
    macrostep.record(invocation.records.start, { ...start, scenario: macrostep.scenario!.slug });
    routeChildOutcome(macrostep, state, forcedOutcome(macrostep, invocation, childId, override));
    return;
  }
  if (invocation.kind === 'job') {
    macrostep.record(invocation.records.start, { jobId: childId });
    const effect: StartJobEffect = {
      kind: 'startJob',
      ...jobSlotOf(macrostep, state, invocation),
      jobId: childId,
      input,
      actor: macrostep.trigger.actor ?? null,
      fireAndForget: invocation.fireAndForget,
      timeoutSeconds: invocation.timeoutSeconds,
    };
    const carried = carryScenario(macrostep.definition, macrostep.scenario);
    if (carried !== undefined) effect.scenario = carried;
    macrostep.effects.push(effect);
    return;
  }
  const slot = slotOf(macrostep, state, invocation);
  // The child starts for real with one of its own scenarios kept on it (9.7.0).
  const childScenario =
    override?.kind === 'scenario' ? { slug: override.slug, params: { ...override.params } } : null;
  macrostep.record(invocation.records.start, { childId });

  if (invocation.async) {
    const effect: StartChildEffect = {
      kind: 'startChild',
      ...slot,
      childId,
      input,
      queue: invocation.queue,
      fireAndForget: invocation.fireAndForget,
      timeoutSeconds: invocation.timeoutSeconds,
      ...(childScenario === null ? {} : { scenario: childScenario }),
    };
    const carried = carryScenario(macrostep.definition, macrostep.scenario);
    if (childScenario === null && carried !== undefined) effect.carriedScenario = carried;
    if (carried !== undefined) effect.parentScenario = carried;
    macrostep.effects.push(effect);
    return;
  }

  const child = resolveChildMachine(invocation, macrostep.machines, macrostep.machineId);
  // Started under the parent's scenario (scenario isolation): the child's first step plays its
  // own scenario of that slug, kept on it while it waits, as an asynchronous child's start job
  // does (engine/jobs/child-jobs.ts). A child without that slug starts for real.
  const inherited =
    childScenario === null
      ? resumeScenario(child, carryScenario(macrostep.definition, macrostep.scenario))
      : null;
  const kept =
    childScenario ??
    (inherited === null ? null : { slug: inherited.slug, params: { ...inherited.params } });
  let result: MacrostepResult;
  try {
    result = initialize(child, {
      ...(inherited === null ? {} : { scenario: inherited }),
      id: childId,
      context: input,
      now: () => new Date(macrostep.time),
      parent: { machineId: macrostep.machineId, id: macrostep.id },
      actor: macrostep.trigger.actor ?? null,
      ...(macrostep.machines === undefined ? {} : { machines: macrostep.machines }),
      maxTransitionDepth: macrostep.maxTransitionDepth,
    });
  } catch (error) {
    routeChildOutcome(
      macrostep,
      state,
      { outcome: 'fail', childId, error: describeError(error) },
      error,
      input,
    );
    return;
  }
  if (result.validationFailure !== null) {
    const error = {
      name: 'MachineValidationException',
      code: 'MR_VALIDATION_FAILED',
      message: result.validationFailure.message,
    };
    routeChildOutcome(macrostep, state, { outcome: 'fail', childId, error });
    return;
  }
  const done = result.snapshot.status === 'done';
  const persist: PersistChildEffect = {
    kind: 'persistChild',
    ...slot,
    childId,
    snapshot: result.snapshot,
    history: result.history,
    status: done ? 'completed' : 'running',
    effects: result.effects,
    // Kept only while the child pauses for more events (a finished child plays nothing more).
    ...(kept === null || done ? {} : { scenario: kept }),
  };
  const parentScenario = carryScenario(macrostep.definition, macrostep.scenario);
  if (parentScenario !== undefined) persist.parentScenario = parentScenario;
  macrostep.effects.push(persist);
  // Not finished in its first macrostep: the child stays, tracked like an asynchronous one.
  if (!done) return;
  let output: unknown;
  try {
    output = resolveOutput(child, result.snapshot);
  } catch (error) {
    // Finished, but its typed output cannot be built: the parent gets no valid output.
    routeChildOutcome(
      macrostep,
      state,
      { outcome: 'fail', childId, error: describeError(error) },
      error,
    );
    return;
  }
  routeChildOutcome(macrostep, state, {
    outcome: 'done',
    childId,
    finalState: finalStateKey(child.id, result.snapshot.value[0] ?? ''),
    output,
  });
}

/** A delegating state is being exited: cancel its child unless it has nothing left to cancel. */
export function leaveDelegatingState(macrostep: Macrostep, state: StateNode): void {
  const invocation = state.invocation as InvocationDefinition;
  const pending = macrostep.invocations.indexOf(state);
  if (pending >= 0) {
    // Left before its child started (a completion moved on first): nothing was started.
    macrostep.invocations.splice(pending, 1);
    return;
  }
  if (invocation.fireAndForget || macrostep.settledChildren.includes(state)) return;
  if (invocation.kind === 'job') {
    const effect: CancelJobEffect = {
      kind: 'cancelJob',
      ...jobSlotOf(macrostep, state, invocation),
    };
    macrostep.effects.push(effect);
    return;
  }
  const effect: CancelChildEffect = {
    kind: 'cancelChild',
    ...slotOf(macrostep, state, invocation),
  };
  macrostep.effects.push(effect);
}

function jobSlotOf(macrostep: Macrostep, state: StateNode, invocation: JobInvocation): JobSlot {
  return {
    parentMachineId: macrostep.machineId,
    parentId: macrostep.id,
    parentStateId: state.id,
    job: invocation.name,
  };
}

function slotOf(macrostep: Macrostep, state: StateNode, invocation: MachineInvocation): ChildSlot {
  return {
    parentMachineId: macrostep.machineId,
    parentId: macrostep.id,
    parentStateId: state.id,
    childMachineId: invocation.childMachineId,
  };
}
