/**
 * Delegating states inside a macrostep: starting the child when the state is entered (inline
 * for a synchronous child, as a `startChild` effect for an asynchronous one), routing its outcome
 * (`@done.<final>` then `@done`, `@fail`, `@timeout`) and cancelling it when the state is left.
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
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { Handler, StateNode } from '../definition/state-node.js';
import type { Context, EventObject } from '../definition/types.js';
import {
  isMachineDefinition,
  type InvocationDefinition,
  type JobInvocation,
  type MachineInvocation,
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
import type { ChildOverride } from '../definition/scenarios.js';
import {
  InvalidScenarioDefinitionException,
  MachineRoutesError,
  MachineNotFoundException,
} from '../errors.js';
import { nextRecordId } from './history.js';
import { carryScenario } from './scenarios.js';
import { initialize } from './initialize.js';
import type { Macrostep } from './macrostep-context.js';
import { runMicrostep } from './microstep.js';
import { resolveOutput } from './output.js';
import { childFailure } from './typed-contracts.js';
import { selectCompletion } from './select-transitions.js';
import type { MacrostepResult } from './types.js';

/** A serializable description of a child's failure. */
export interface ChildError {
  name: string;
  /** Catalogue code (`MR_...`), `null` for other errors. */
  code: string | null;
  message: string;
  /** The thrown error's own JSON fields (a typed failure is built from them). */
  fields?: Record<string, unknown>;
}

/** What became of a child machine. */
export type ChildOutcome =
  | { outcome: 'done'; childId: string | null; finalState: string; output: unknown }
  | { outcome: 'fail'; childId: string | null; error: ChildError }
  | { outcome: 'timeout'; childId: string | null; after: number | null };

/** What became of a job actor's run (`output`: already validated by the job's schema). */
export type JobOutcome =
  | { outcome: 'done'; jobId: string; output: unknown }
  | { outcome: 'fail'; jobId: string; error: ChildError }
  | { outcome: 'timeout'; jobId: string; after: number | null };

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
    macrostep.effects.push(effect);
    return;
  }

  const child = resolveChildMachine(invocation, macrostep.machines, macrostep.machineId);
  let result: MacrostepResult;
  try {
    result = initialize(child, {
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
    ...(childScenario === null || done ? {} : { scenario: childScenario }),
  };
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

/**
 * Records a child's (or job's) outcome and takes the first transition that accepts it:
 * `@done.<final>`, then `@done` (each may be guarded branches); `@fail`; `@timeout`. Without a
 * handler the state stays, except that a synchronous child's exception (`rethrow`) propagates.
 * A job's event payloads are `{ jobId, job, output }`, `{ jobId, job, error }` and
 * `{ jobId, job, after }`.
 */
export function routeChildOutcome(
  macrostep: Macrostep,
  state: StateNode,
  outcome: ChildOutcome | JobOutcome,
  rethrow?: unknown,
  /** The input the child was started with, when known (a typed failure may read it). */
  input: Context = {},
): void {
  const invocation = state.invocation as InvocationDefinition;
  const common =
    'jobId' in outcome || invocation.kind === 'job'
      ? { jobId: 'jobId' in outcome ? outcome.jobId : outcome.childId, job: nameOf(invocation) }
      : { childId: outcome.childId, childMachineId: invocation.childMachineId };
  let type: string;
  let record: string;
  let payload: Record<string, unknown>;
  const handlers: Handler[] = [];
  if (outcome.outcome === 'done') {
    type = '@done';
    record = invocation.records.done;
    if ('finalState' in outcome) {
      payload = { ...common, finalState: outcome.finalState, output: outcome.output };
      const specific = state.handlers.get(`@done.${outcome.finalState}`);
      if (specific !== undefined) handlers.push(specific);
    } else {
      payload = { ...common, output: outcome.output };
    }
  } else if (outcome.outcome === 'fail') {
    type = '@fail';
    record = invocation.records.fail;
    payload = { ...common, ...failurePayload(macrostep, invocation, outcome.error, input) };
  } else {
    type = '@timeout';
    record = invocation.records.timeout;
    payload = { ...common, after: outcome.after ?? invocation.timeoutSeconds };
  }
  const general = state.handlers.get(type);
  if (general !== undefined) handlers.push(general);

  macrostep.record(record, payload);
  macrostep.settledChildren.push(state);
  if (handlers.length === 0) {
    if (rethrow !== undefined) throw rethrow;
    return;
  }
  macrostep.step(type);
  macrostep.event = { type, payload, actor: macrostep.trigger.actor ?? null } satisfies EventObject;
  for (const handler of handlers) {
    const selection = selectCompletion(macrostep, handler);
    if (selection.kind === 'rejected') return;
    if (selection.kind === 'selected' && selection.selected.length > 0) {
      runMicrostep(macrostep, selection.selected);
      return;
    }
  }
}

/**
 * The outcome a scenario forces on a delegating state: `@done`, `@done.<final>` (child machines
 * only), `@fail`, `@timeout`. A forced `@done` carries `output: null`.
 */
export function forcedOutcome(
  macrostep: Macrostep,
  invocation: InvocationDefinition,
  id: string,
  override: Extract<ChildOverride, { kind: 'outcome' }>,
): ChildOutcome | JobOutcome {
  const slug = macrostep.scenario!.slug;
  const literal = override.resolve(macrostep.argsFor(null));
  const job = invocation.kind === 'job';
  const what = job ? `job '${nameOf(invocation)}'` : `child machine '${nameOf(invocation)}'`;
  if (literal === '@fail') {
    const message = `Scenario '${slug}' forced the outcome '@fail' of ${what}.`;
    const error = { name: 'ScenarioOutcome', code: null, message };
    return job ? { outcome: 'fail', jobId: id, error } : { outcome: 'fail', childId: id, error };
  }
  if (literal === '@timeout') {
    const after = invocation.timeoutSeconds;
    return job
      ? { outcome: 'timeout', jobId: id, after }
      : { outcome: 'timeout', childId: id, after };
  }
  if (job && literal === '@done') return { outcome: 'done', jobId: id, output: null };
  if (!job && (literal === '@done' || literal.startsWith('@done.'))) {
    return {
      outcome: 'done',
      childId: id,
      finalState: literal.slice('@done.'.length),
      output: null,
    };
  }
  throw new InvalidScenarioDefinitionException(
    `Machine '${macrostep.machineId}', scenario '${slug}': the outcome of ${what} must be '@done'${job ? '' : ", '@done.<final state>'"}, '@fail' or '@timeout' (got ${JSON.stringify(literal)}).`,
    { machine: macrostep.machineId, key: String(literal) },
  );
}

const CONTRACT_CODES = ['MR_MACHINE_INPUT_VALIDATION', 'MR_MACHINE_OUTPUT_RESOLUTION'];

/**
 * `error`, and `failure` when the child declares a typed failure. A failure that cannot be
 * built replaces the error with the MachineFailureResolutionException that says why.
 */
function failurePayload(
  macrostep: Macrostep,
  invocation: InvocationDefinition,
  error: ChildError,
  input: Context,
): { error: ChildError; failure?: Record<string, unknown> } {
  // A broken input or output contract is no failure of the child's own: no typed failure.
  if (invocation.kind !== 'machine' || CONTRACT_CODES.includes(error.code ?? '')) return { error };
  const child =
    typeof invocation.machine === 'string'
      ? macrostep.machines?.(invocation.machine)
      : invocation.machine;
  if (!isMachineDefinition(child)) return { error };
  try {
    const failure = childFailure(child, error, input);
    return failure === undefined ? { error } : { error, failure };
  } catch (unresolved) {
    return { error: describeError(unresolved) };
  }
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

/** The child definition of an invocation; ids go through the `machines` resolver. */
export function resolveChildMachine(
  invocation: MachineInvocation,
  machines: ((machineId: string) => MachineDefinition | undefined) | undefined,
  parentMachineId: string,
): MachineDefinition {
  if (typeof invocation.machine !== 'string') return invocation.machine;
  const resolved = machines?.(invocation.machine);
  if (!isMachineDefinition(resolved)) {
    throw new MachineNotFoundException(
      `Machine '${parentMachineId}' delegates to machine '${invocation.machine}', which is not known here. ` +
        `Pass its definition as 'machine', or register it with the runtime (MacrostepOptions.machines).`,
      { machine: parentMachineId, key: invocation.machine },
    );
  }
  return resolved;
}

/** `child.approved` -> `approved`. */
export function finalStateKey(childMachineId: string, stateId: string): string {
  return stateId.startsWith(`${childMachineId}.`)
    ? stateId.slice(childMachineId.length + 1)
    : stateId;
}

/** The serializable form of a thrown value. */
export function describeError(error: unknown): ChildError {
  if (error instanceof MachineRoutesError)
    return { name: error.name, code: error.code, message: error.message };
  if (error instanceof Error) {
    const described: ChildError = { name: error.name, code: null, message: error.message };
    const fields = ownFields(error);
    if (fields !== null) described.fields = fields;
    return described;
  }
  return { name: 'Error', code: null, message: String(error) };
}

/** An error's own enumerable fields as JSON (`null` without any, or when they are not JSON). */
function ownFields(error: Error): Record<string, unknown> | null {
  const own = Object.fromEntries(Object.entries(error).filter(([key]) => key !== 'stack'));
  if (Object.keys(own).length === 0) return null;
  try {
    return JSON.parse(JSON.stringify(own)) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** The child machine's id, or the job's name. */
function nameOf(invocation: InvocationDefinition): string {
  return invocation.kind === 'job' ? invocation.name : invocation.childMachineId;
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
