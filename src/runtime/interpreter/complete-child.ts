/**
 * `completeChild`: the parent's side of a child machine's outcome, for children that finished
 * outside the parent's macrostep (asynchronous children, and synchronous ones that did not
 * finish at once). Pure: the shell's completion and timeout jobs call it with the parent's last
 * committed snapshot and persist the result.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { leavesOf, macrostepFromSnapshot } from './macrostep-context.js';
import { finishMacrostep, settle } from './macrostep.js';
import {
  describeError,
  finalStateKey,
  type ChildError,
  type ChildOutcome,
  type JobOutcome,
} from './child-outcomes.js';
import { routeChildOutcome } from './route-child-outcome.js';
import type { InvocationDefinition, JobInvocation } from '../definition/invocation.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from './types.js';

/** What happened to the child, as the shell reports it. */
export interface ChildCompletion {
  /** Full id of the delegating state that started the child (the `machine_children` row's). */
  parentStateId: string;
  outcome: 'done' | 'fail' | 'timeout';
  /** Instance id of the child, shown to behaviors (`event.payload.childId`). */
  childId?: string;
  /** `done`: the child's final state, full id (`child.approved`) or key (`approved`). */
  finalStateId?: string;
  /** `done`: the child's resolved output (`resolveOutput(child, childSnapshot)`). */
  output?: unknown;
  /** `fail`: what went wrong (an Error or its description). */
  error?: ChildError | Error;
}

/**
 * Routes a child's outcome in its parent: `@done.<final>` then `@done`, `@fail`, or `@timeout`
 * (see interpreter/invoke-child.ts for the event behaviors see). Returns `null`, doing nothing,
 * when the parent is no longer in `parentStateId` (it moved on, or finished): completion jobs
 * may run late or twice, and the second run must be a no-op. A parent with no handler for the
 * outcome (`@fail` missing) records it and stays.
 *
 * @example
 * const result = completeChild(orderMachine, parent, {
 *   parentStateId: 'order.payment', outcome: 'done', finalStateId: 'payment.paid', output,
 * });
 * if (result) await commit(result);
 */
export function completeChild(
  definition: MachineDefinition,
  parent: MachineSnapshot,
  completion: ChildCompletion,
  options: Pick<
    MacrostepOptions,
    'now' | 'machines' | 'maxTransitionDepth' | 'traceBehaviors' | 'scenario'
  > = {},
): MacrostepResult | null {
  return routeInParent(
    definition,
    parent,
    completion.parentStateId,
    (invocation) =>
      invocation.kind === 'job'
        ? toJobOutcome(completion)
        : toOutcome(invocation.childMachineId, completion),
    options,
  );
}

/**
 * Routes a job actor's outcome in the instance that started it (`@done` with the output, `@fail`
 * with the error, `@timeout`), like `completeChild`. `outcome` comes from `resolveJobOutcome`
 * (the output already parsed by the job's schema). Returns `null`, doing nothing, when the
 * instance is no longer in `parentStateId`; the shell also checks the job's row, so a result for
 * an earlier visit of the same state is ignored too.
 */
export function completeJob(
  definition: MachineDefinition,
  parent: MachineSnapshot,
  parentStateId: string,
  outcome: JobOutcome,
  options: Pick<
    MacrostepOptions,
    'now' | 'machines' | 'maxTransitionDepth' | 'traceBehaviors' | 'scenario'
  > = {},
): MacrostepResult | null {
  return routeInParent(
    definition,
    parent,
    parentStateId,
    (invocation) => (invocation.kind === 'job' ? outcome : null),
    options,
  );
}

/** What a job's run reported, before its output is checked. */
export type ReportedJobOutcome =
  | { outcome: 'done'; jobId: string; output: unknown }
  | { outcome: 'fail'; jobId: string; error: ChildError | Error };

/**
 * The outcome to route for what a job's run reported: `done` with its output parsed by the
 * job's `output` schema (and made plain JSON, as history stores it), or `fail` with a
 * serializable error when the output does not match or the run failed.
 */
export function resolveJobOutcome(
  invocation: JobInvocation,
  reported: ReportedJobOutcome,
): JobOutcome {
  if (reported.outcome === 'fail') {
    const { error } = reported;
    return {
      outcome: 'fail',
      jobId: reported.jobId,
      error: error instanceof Error ? describeError(error) : error,
    };
  }
  const schema = invocation.job.output;
  let output = reported.output;
  if (schema !== null) {
    const parsed = schema.safeParse(output);
    if (!parsed.success) {
      return {
        outcome: 'fail',
        jobId: reported.jobId,
        error: {
          name: 'MachineValidationException',
          code: 'MR_VALIDATION_FAILED',
          message: `Job '${invocation.name}' returned an output that does not match its output schema: ${parsed.error.issues
            .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
            .join('; ')}.`,
        },
      };
    }
    output = parsed.data;
  }
  return { outcome: 'done', jobId: reported.jobId, output: toJson(output) };
}

/** `value` as history stores it (JSON); `undefined` becomes `null`. */
function toJson(value: unknown): unknown {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as unknown);
}

function routeInParent(
  definition: MachineDefinition,
  parent: MachineSnapshot,
  parentStateId: string,
  outcomeFor: (invocation: InvocationDefinition) => ChildOutcome | JobOutcome | null,
  options: Pick<
    MacrostepOptions,
    'now' | 'machines' | 'maxTransitionDepth' | 'traceBehaviors' | 'scenario'
  >,
): MacrostepResult | null {
  if (parent.status === 'done' || parent.machineId !== definition.id) return null;
  const state = definition.idMap.get(parentStateId);
  const leaves = leavesOf(definition, parent.value);
  if (state === undefined || state.invocation === null || !leaves.includes(state)) return null;

  const outcome = outcomeFor(state.invocation);
  if (outcome === null) return null;
  const trigger: EventObject = {
    type: outcome.outcome === 'done' ? '@done' : outcome.outcome === 'fail' ? '@fail' : '@timeout',
  };
  const macrostep = macrostepFromSnapshot(
    definition,
    parent,
    trigger,
    {
      now: options.now,
      machines: options.machines,
      maxTransitionDepth: options.maxTransitionDepth,
      traceBehaviors: options.traceBehaviors,
      // The scenario the outcome's work carried, played again by this completion step.
      ...(options.scenario ? { scenario: options.scenario } : {}),
    },
    leaves,
  );
  routeChildOutcome(macrostep, state, outcome);
  settle(macrostep);
  return finishMacrostep(macrostep, parent);
}

function toOutcome(childMachineId: string, completion: ChildCompletion): ChildOutcome {
  const childId = completion.childId ?? null;
  if (completion.outcome === 'done') {
    return {
      outcome: 'done',
      childId,
      finalState: finalStateKey(childMachineId, completion.finalStateId ?? ''),
      output: completion.output ?? null,
    };
  }
  if (completion.outcome === 'fail')
    return { outcome: 'fail', childId, error: childError(completion, 'The child machine failed.') };
  return { outcome: 'timeout', childId, after: null };
}

function toJobOutcome(completion: ChildCompletion): JobOutcome {
  const jobId = completion.childId ?? '';
  if (completion.outcome === 'done')
    return { outcome: 'done', jobId, output: completion.output ?? null };
  if (completion.outcome === 'fail')
    return { outcome: 'fail', jobId, error: childError(completion, 'The job failed.') };
  return { outcome: 'timeout', jobId, after: null };
}

/** The serializable error of a `fail` completion (`fallback` when it carries none). */
function childError(completion: ChildCompletion, fallback: string): ChildError {
  const { error } = completion;
  if (error instanceof Error) return describeError(error);
  return error ?? { name: 'Error', code: null, message: fallback };
}
