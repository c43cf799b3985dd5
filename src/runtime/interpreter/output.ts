/**
 * What a response shows as `output`: an endpoint output, else the current state's output up the
 * ancestors, else the context with computed values.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type {
  Context,
  EventObject,
  OutputDefinition,
  StateOutputDefinition,
} from '../definition/types.js';
import { MachineOutputResolutionException } from '../errors.js';
import { NO_MESSAGING } from './messaging.js';
import { leafOf } from './macrostep-context.js';
import { LiveStateView } from './state-view.js';
import type { MachineSnapshot } from './types.js';

/**
 * The context plus `behavior.computed` values: what responses show by default. Computed values
 * are never part of `snapshot.context` (they are not persisted).
 *
 * @example responseContext(orderMachine, snapshot) // { total: 100, isLarge: false }
 */
export function responseContext(definition: MachineDefinition, snapshot: MachineSnapshot): Context {
  if (definition.computed.length === 0) return { ...snapshot.context };
  const result: Context = { ...snapshot.context };
  for (const [name, compute] of definition.computed)
    result[name] = compute({ context: snapshot.context });
  return result;
}

/** Options of `resolveOutput`. */
export interface ResolveOutputOptions {
  /** The event output behaviors see (default `{ type: '<m>.output' }`). */
  event?: EventObject;
}

/**
 * Resolves the output of a snapshot: `output` when given (an endpoint's), else the state output
 * (current atomic state, then its ancestors; in a parallel configuration the parallel state's own
 * output), else `responseContext`. A key list filters context + computed values (missing keys are
 * dropped); an output behavior gets `{ context, event, state, params, machineId, id }` and must
 * treat them as read-only.
 *
 * @example resolveOutput(orderMachine, snapshot, { kind: 'keys', keys: ['total'] }) // { total: 100 }
 */
export function resolveOutput(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  output?: OutputDefinition | null,
  options: ResolveOutputOptions = {},
): unknown {
  const chosen = output ?? stateOutputOf(definition, snapshot);
  const context = responseContext(definition, snapshot);
  if (chosen === null) return context;
  if (chosen.kind === 'typed') return typedOutput(definition, snapshot, chosen, context);
  if (chosen.kind === 'keys') {
    const filtered: Context = {};
    for (const key of chosen.keys) if (Object.hasOwn(context, key)) filtered[key] = context[key];
    return filtered;
  }
  return chosen.run({
    context,
    event: options.event ?? { type: `${definition.id}.output` },
    state: new LiveStateView(definition.id, snapshot),
    params: chosen.params,
    machineId: definition.id,
    id: snapshot.id,
    // Outputs describe a state; raising from them has nowhere to go.
    raise: () => undefined,
    ...NO_MESSAGING,
  });
}

/**
 * The `output` definition a snapshot's current state resolves to (the atomic state, then its
 * ancestors; the parallel state's own in a parallel configuration), `null` when none is defined.
 */
export function stateOutputOf(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
): StateOutputDefinition | null {
  const value = snapshot.value;
  if (value.length === 0) return null;
  // Every id is checked as `leavesOf` would; the first leaf alone decides, so no list is made.
  const first = leafOf(definition, value[0] as string);
  for (let index = 1; index < value.length; index++) leafOf(definition, value[index] as string);
  const parallel = first.ancestors.find((ancestor) => ancestor.type === 'parallel');
  if (parallel !== undefined) return parallel.output;
  for (let depth = first.depth; depth >= 0; depth--) {
    const output = first.ancestors[depth]?.output;
    if (output !== undefined && output !== null) return output;
  }
  return null;
}

/**
 * A typed output: the schema's keys taken from the context (and computed values), parsed.
 * Throws `MachineOutputResolutionException` naming the machine, the state and the keys when
 * the context cannot build it (a required key missing, a value of the wrong type).
 */
function typedOutput(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  output: Extract<StateOutputDefinition, { kind: 'typed' }>,
  context: Context,
): unknown {
  const source: Context = {};
  for (const key of output.keys) if (Object.hasOwn(context, key)) source[key] = context[key];
  const parsed = output.schema.safeParse(source);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  const first = parsed.error.issues[0]?.path[0];
  throw new MachineOutputResolutionException(
    `Machine '${definition.id}' instance '${snapshot.id}': the typed output of '${snapshot.value.join(', ')}' cannot be built from the context (${problems}). ` +
      `Set those context keys before the state is reached, or make them optional in the output schema.`,
    {
      machine: definition.id,
      path: snapshot.value.join(','),
      ...(first === undefined ? {} : { key: String(first) }),
    },
  );
}
