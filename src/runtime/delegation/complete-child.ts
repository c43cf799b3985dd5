/**
 * `completeChild`: the parent's side of a child machine's outcome, for children that finished
 * outside the parent's macrostep (asynchronous children, and synchronous ones that did not
 * finish at once). Pure: the shell's completion and timeout jobs call it with the parent's last
 * committed snapshot and persist the result.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { Macrostep, leavesOf } from '../interpreter/macrostep-context.js';
import { finishMacrostep, settle } from '../interpreter/macrostep.js';
import {
  describeError,
  finalStateKey,
  routeChildOutcome,
  type ChildError,
  type ChildOutcome,
} from '../interpreter/invoke-child.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from '../interpreter/types.js';

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
  options: Pick<MacrostepOptions, 'now' | 'machines'> = {},
): MacrostepResult | null {
  if (parent.status === 'done' || parent.machineId !== definition.id) return null;
  const state = definition.idMap.get(completion.parentStateId);
  const leaves = leavesOf(definition, parent.value);
  if (state === undefined || state.invocation === null || !leaves.includes(state)) return null;

  const outcome = toOutcome(state.invocation.childMachineId, completion);
  const trigger: EventObject = {
    type: outcome.outcome === 'done' ? '@done' : outcome.outcome === 'fail' ? '@fail' : '@timeout',
  };
  const macrostep = new Macrostep(
    definition,
    parent.id,
    {
      value: parent.value,
      leaves,
      context: parent.context,
      sequence: parent.sequence,
      time: options.now === undefined ? Date.now() : options.now().getTime(),
      parent: parent.parent,
      machines: options.machines,
    },
    trigger,
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
  if (completion.outcome === 'fail') {
    const error = completion.error;
    return {
      outcome: 'fail',
      childId,
      error:
        error instanceof Error
          ? describeError(error)
          : (error ?? { name: 'Error', code: null, message: 'The child machine failed.' }),
    };
  }
  return { outcome: 'timeout', childId, after: null };
}
