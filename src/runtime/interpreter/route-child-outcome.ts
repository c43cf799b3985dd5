/**
 * Routing the outcome of a delegating state's child or job in a macrostep: the outcome record,
 * then the first transition that accepts it (`@done.<final>`, `@done`, `@fail`, `@timeout`), and
 * the outcome a scenario forces instead of running the child. The outcome event's payloads are
 * in invoke-child.ts.
 */
import type { Handler, StateNode } from '../definition/state-node.js';
import type { Context, EventObject } from '../definition/types.js';
import { isMachineDefinition, type InvocationDefinition } from '../definition/invocation.js';
import type { ChildOverride } from '../definition/scenarios.js';
import { InvalidScenarioDefinitionException } from '../errors.js';
import {
  describeError,
  type ChildError,
  type ChildOutcome,
  type JobOutcome,
} from './child-outcomes.js';
import type { Macrostep } from './macrostep-context.js';
import { runMicrostep } from './microstep.js';
import { childFailure } from './typed-contracts.js';
import { selectCompletion } from './select-transitions.js';

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

/** The child machine's id, or the job's name. */
function nameOf(invocation: InvocationDefinition): string {
  return invocation.kind === 'job' ? invocation.name : invocation.childMachineId;
}
