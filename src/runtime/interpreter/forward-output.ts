/**
 * What a forwarded endpoint answers about the child (spec "Forwarded endpoint response"):
 * `data.child` (`state`, and `output`: the child's context keys, all of them or those of the
 * forward's `output` list) and the result of a forward's output behavior, which sees the parent
 * as every output behavior does plus `child` (see `defineChildOutput`).
 */
import { requiresChildOutput, type ChildOutputView } from '../definition/child-output.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { Context, EventObject, ForwardDefinition } from '../definition/types.js';
import { MachineOutputInjectionException } from '../errors.js';
import { resolveOutput, responseContext, stateOutputOf } from './output.js';
import { LiveStateView } from './state-view.js';
import type { MachineSnapshot } from './types.js';
import { NO_MESSAGING } from './messaging.js';

/** `data.child` of a forwarded response. */
export interface ForwardedChildData {
  /** Active state ids of the child. */
  state: string[];
  /** Child context with computed values; only the listed keys when the forward's `output` is a key list. */
  output: Context;
}

/**
 * `data.child` for a forward: the child's state and context (filtered by a key-list `output`).
 *
 * @example forwardedChildData(forward, paymentMachine, childSnapshot) // { state: ['payment.awaiting'], output: { cardLast4: '1111' } }
 */
export function forwardedChildData(
  forward: ForwardDefinition,
  child: MachineDefinition,
  childSnapshot: MachineSnapshot,
): ForwardedChildData {
  const context = responseContext(child, childSnapshot);
  if (forward.output?.kind !== 'keys') return { state: [...childSnapshot.value], output: context };
  const filtered: Context = {};
  for (const key of forward.output.keys)
    if (Object.hasOwn(context, key)) filtered[key] = context[key];
  return { state: [...childSnapshot.value], output: filtered };
}

/** Arguments of `resolveForwardOutput`. */
export interface ForwardOutputInput {
  /** The parent definition and its snapshot after the request. */
  definition: MachineDefinition;
  snapshot: MachineSnapshot;
  forward: ForwardDefinition;
  child: MachineDefinition;
  /** The child after the forwarded event; `null` when there is none (contention). */
  childSnapshot: MachineSnapshot | null;
  /** The event output behaviors see (the parent-facing event). */
  event?: EventObject;
}

/**
 * Runs a forward's output behavior: `undefined` when the forward has none (then the response
 * shows `data.child`). The behavior receives the parent's output arguments plus `child`
 * ({@link ChildOutputView}). One made with `defineChildOutput` requires the child's output:
 * MachineOutputInjectionException when the child's current state defines none, or there is no
 * child snapshot to read it from.
 */
export function resolveForwardOutput(input: ForwardOutputInput): unknown {
  const { definition, snapshot, forward, child, childSnapshot } = input;
  const output = forward.output;
  if (output?.kind !== 'behavior') return undefined;
  const requires = requiresChildOutput(output.run);
  let view: ChildOutputView | undefined;
  if (childSnapshot !== null) {
    if (requires && stateOutputOf(child, childSnapshot) === null) {
      throw injectionError(
        forward,
        output.name,
        child,
        `its state '${childSnapshot.value.join(', ')}' defines no output`,
      );
    }
    view = {
      machineId: child.id,
      id: childSnapshot.id,
      state: [...childSnapshot.value],
      context: responseContext(child, childSnapshot),
      output: resolveOutput(child, childSnapshot),
    };
  } else if (requires) {
    throw injectionError(forward, output.name, child, 'there is no running child to read it from');
  }
  return output.run({
    context: responseContext(definition, snapshot),
    event: input.event ?? { type: `${definition.id}.output` },
    state: new LiveStateView(definition.id, snapshot),
    params: output.params,
    machineId: definition.id,
    id: snapshot.id,
    raise: () => undefined,
    ...NO_MESSAGING,
    ...(view === undefined ? {} : { child: view }),
  } as Parameters<typeof output.run>[0]);
}

function injectionError(
  forward: ForwardDefinition,
  name: string,
  child: MachineDefinition,
  reason: string,
): MachineOutputInjectionException {
  return new MachineOutputInjectionException(
    `Forwarded endpoint '${forward.parentEventType}': output '${name}' reads the output of child machine '${child.id}', but ${reason}. ` +
      `Define output on the child's states, or use a plain output behavior.`,
    { machine: forward.stateId.split('.')[0], path: forward.stateId, key: forward.parentEventType },
  );
}
