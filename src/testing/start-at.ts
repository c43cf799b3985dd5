/**
 * Starting an instance at any state: the states named by a test (a leaf path, the leaves of a
 * parallel configuration, or a compound state entered through its initial states) are checked
 * against the definition and written as a new instance with the given context, as if it had
 * just entered them. Nothing runs on the way in: no entry action, no child machine or job is
 * started; the states' timers count from now.
 */
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { StateNode } from '../runtime/definition/state-node.js';
import type { Context } from '../runtime/definition/types.js';
import { newUlid } from '../runtime/ids.js';
import { commitStep, type EngineContext } from '../runtime/engine/index.js';
import type { HistoryRecord, MacrostepResult } from '../runtime/interpreter/types.js';
import { ImpossibleConfigurationException, InvalidTestContextException } from './errors.js';

/** States as a test names them: `'submitted'`, `'processing.payment.captured'`, full ids, or several. */
export type StateSelection = string | readonly string[];

/**
 * The active leaves (full ids, document order) the selection stands for: each named state with
 * its ancestors, and the initial states of whatever it leaves open (a compound state named
 * alone, a parallel region no leaf was named for). Throws `ImpossibleConfigurationException`.
 */
export function resolveConfiguration(
  definition: MachineDefinition,
  selection: StateSelection,
): string[] {
  const named = (typeof selection === 'string' ? [selection] : [...selection]).map((state) =>
    nodeOf(definition, state),
  );
  if (named.length === 0)
    throw impossible(
      definition,
      '',
      'No state was named. Name a leaf state, e.g. its initial one.',
    );
  const active = new Set<StateNode>();
  for (const node of named) for (const ancestor of node.ancestors) active.add(ancestor);
  const leaves: StateNode[] = [];
  const expand = (node: StateNode): void => {
    if (node.type === 'atomic' || node.type === 'final') {
      leaves.push(node);
      return;
    }
    if (node.type === 'parallel') {
      for (const region of node.children) expand(region);
      return;
    }
    const chosen = node.children.filter((child) => active.has(child));
    if (chosen.length > 1)
      throw impossible(
        definition,
        node.route,
        `States ${chosen.map((child) => `'${child.route}'`).join(' and ')} are children of the compound state '${node.route || definition.id}': only one of them can be active. Name one, or make '${node.route || definition.id}' parallel.`,
      );
    const next = chosen[0] ?? node.initial;
    if (next === null || next === undefined)
      throw impossible(
        definition,
        node.route,
        `State '${node.route}' has no initial state to enter.`,
      );
    expand(next);
  };
  expand(definition.root);
  return leaves.sort((a, b) => a.order - b.order).map((leaf) => leaf.id);
}

/** The initial context with `context` merged over it, checked by the machine's context schema. */
export function contextFor(definition: MachineDefinition, context: Context | undefined): Context {
  const merged = { ...definition.createContext(), ...context };
  const schema: unknown = definition.config.context;
  if (typeof schema !== 'object' || schema === null || !('safeParse' in schema)) return merged;
  const parsed = (
    schema as {
      safeParse(value: unknown): {
        success: boolean;
        error?: { issues: { path: PropertyKey[]; message: string }[] };
      };
    }
  ).safeParse(merged);
  if (parsed.success) return merged;
  const issues = (parsed.error?.issues ?? [])
    .map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  throw new InvalidTestContextException(
    `The context given for a '${definition.id}' instance does not match its context schema: ${issues}. Give values the schema accepts.`,
    { machine: definition.id, key: 'context' },
  );
}

/** Options of `startAt`. */
export interface StartAtOptions {
  /** Merged over the machine's initial context (and checked by its schema, when it has one). */
  context?: Context;
  /** Recorded as the actor of the start record. */
  actor?: string | null;
}

/**
 * A fake child written done: its id (the one its row names) and its parent; the commit then
 * completes its row and writes the parent's completion job (`planCommit`).
 */
interface ChildPlacement {
  id: string;
  parent: { machineId: string; id: string };
}

/**
 * Writes a new instance in the states of `selection` (see {@link resolveConfiguration}) at
 * `now`, through the engine's commit step (the one writer of steps: its jobs are enqueued, a
 * fake child that ends at once gets its parent's completion job, listeners are told). Its
 * history has one record, the machine's start record, whose payload says where the test put
 * it. Returns the step as written.
 */
export async function writeInstanceAt(
  ctx: EngineContext,
  definition: MachineDefinition,
  selection: StateSelection,
  now: Date,
  options: StartAtOptions & { child?: ChildPlacement } = {},
): Promise<MacrostepResult> {
  const value = resolveConfiguration(definition, selection);
  const context = contextFor(definition, options.context);
  const id = options.child?.id ?? newUlid();
  const record: HistoryRecord = {
    id,
    sequence: 1,
    createdAt: now.toISOString(),
    machineId: definition.id,
    rootEventId: id,
    source: 'internal',
    type: definition.records.start,
    payload: { startedAt: value },
    value,
    context,
    version: 1,
    actor: options.actor ?? null,
  };
  const done = value.some((leaf) => {
    const node = definition.idMap.get(leaf);
    return node?.type === 'final' && node.parent === definition.root;
  });
  const result: MacrostepResult = {
    snapshot: {
      machineId: definition.id,
      id,
      value,
      context,
      status: done ? 'done' : 'active',
      sequence: 1,
      ...(options.child === undefined ? {} : { parent: options.child.parent }),
    },
    history: [record],
    validationFailure: null,
    effects: [],
  };
  await commitStep(ctx, { main: { result, from: null }, at: now });
  return result;
}

function nodeOf(definition: MachineDefinition, state: string): StateNode {
  const node =
    definition.idMap.get(state) ?? definition.idMap.get(`${definition.id}.${state}`) ?? null;
  if (node !== null && node !== definition.root) return node;
  const known = [...definition.idMap.values()]
    .filter((candidate) => candidate !== definition.root)
    .map((candidate) => candidate.route);
  throw impossible(
    definition,
    state,
    `Machine '${definition.id}' has no state '${state}'. Its states: ${known.join(', ')}.`,
  );
}

function impossible(
  definition: MachineDefinition,
  path: string,
  message: string,
): ImpossibleConfigurationException {
  return new ImpossibleConfigurationException(message, { machine: definition.id, path });
}
