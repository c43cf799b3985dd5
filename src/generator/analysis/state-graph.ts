/**
 * The reachable configurations of a machine, read from its definition alone: which sets of
 * active states an instance can be in, and which event (with which guards passing) leads from
 * one to another. No behavior runs: a guarded branch is an alternative that may or may not be
 * taken, so the graph is what the definition allows, an over-approximation of what a context
 * makes possible. Pure: no I/O, nothing mutated outside the call.
 *
 * Paths (`enumeratePaths`), the examples of the OpenAPI document and the endpoint descriptions
 * are read from this graph.
 */
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import {
  byDocumentOrder,
  isLeaf,
  isProperDescendant,
  type Handler,
  type StateNode,
  type TransitionBranch,
} from '../../runtime/definition/state-node.js';
import { addWithDefaults } from '../../runtime/definition/transitions.js';
import { isInFinalState } from '../../runtime/interpreter/microstep.js';

/** One microstep: an event (or `@always` / `@done` taken on its own) and where it led. */
export interface GraphStep {
  /** Event type: a user event, `@always`, `@done`, `@done.<final>`, `@fail`, `@timeout`, ... */
  event: string;
  /** Names of the guards that passed to take this branch (empty: unguarded). */
  guards: string[];
  /** Active leaf state ids before and after. */
  from: string[];
  to: string[];
}

/** One reachable configuration (the leaf states an instance reports in `data.state`). */
export interface GraphNode {
  /** The state ids, in document order, joined by `,`. */
  key: string;
  value: string[];
  /** A top-level final state is active: the machine is done. */
  final: boolean;
}

/** An event sent in one configuration, and the configuration once the machine settled. */
export interface GraphEdge {
  from: string;
  to: string;
  event: string;
  /** The event's own step first, then the automatic ones (`@always`, `@done`) it caused. */
  steps: GraphStep[];
}

/** Every configuration reachable from the initial one, and the edges between them. */
export interface StateGraph {
  machineId: string;
  /** Configurations reached when an instance is created (several when `@always` is guarded). */
  initial: GraphNode[];
  /** Every reachable configuration, in discovery order (breadth first). */
  nodes: GraphNode[];
  /** Edges in discovery order; targetless transitions are edges to the same configuration. */
  edges: GraphEdge[];
  /** True when exploration stopped at `maxNodes` configurations. */
  truncated: boolean;
}

/** Options of {@link buildStateGraph}. */
export interface StateGraphOptions {
  /** Stop exploring after this many configurations (default 10 000). */
  maxNodes?: number;
}

interface Settled {
  leaves: StateNode[];
  steps: GraphStep[];
}

const ids = (leaves: readonly StateNode[]): string[] => leaves.map((leaf) => leaf.id);

function nodeOf(definition: MachineDefinition, leaves: readonly StateNode[]): GraphNode {
  const value = ids(leaves);
  return {
    key: value.join(','),
    value,
    final: leaves.some((leaf) => leaf.type === 'final' && leaf.parent === definition.root),
  };
}

/** The leaves after exiting each branch's domain and entering its entry set. */
function applyBranches(
  leaves: readonly StateNode[],
  branches: readonly TransitionBranch[],
): { leaves: StateNode[]; entered: StateNode[] } {
  let next = [...leaves];
  const entered: StateNode[] = [];
  for (const branch of branches) {
    const domain = branch.domain;
    if (branch.target === null || domain === null) continue;
    next = next.filter((leaf) => !isProperDescendant(leaf, domain));
    for (const state of branch.entrySet) {
      if (!entered.includes(state)) entered.push(state);
      if (isLeaf(state) && !next.includes(state)) next.push(state);
    }
  }
  return { leaves: next.sort(byDocumentOrder), entered };
}

function guardNames(branch: TransitionBranch): string[] {
  return branch.guards.map((guard) => guard.name);
}

/**
 * The ways one set of handlers can go: every combination of one branch per handler (a handler
 * whose branches are all guarded may also take none). The empty combination is left out.
 */
function branchChoices(handlers: readonly Handler[]): TransitionBranch[][] {
  let choices: TransitionBranch[][] = [[]];
  for (const handler of handlers) {
    const branches = handler.transition.branches;
    const options: (TransitionBranch | null)[] = [...branches];
    if (branches.every((branch) => !branch.unconditional)) options.push(null);
    choices = choices.flatMap((choice) =>
      options.map((option) => (option === null ? choice : [...choice, option])),
    );
  }
  return choices.filter((choice) => choice.length > 0);
}

function stepOf(
  event: string,
  branches: readonly TransitionBranch[],
  from: readonly StateNode[],
  to: readonly StateNode[],
): GraphStep {
  return { event, guards: branches.flatMap(guardNames), from: ids(from), to: ids(to) };
}

/**
 * Runs what happens without an event once states were entered: `@done` of compound and
 * parallel states whose final states were just entered, then `@always`. Every alternative is
 * returned; `depth` bounds loops of eventless transitions (the machine's own limit).
 */
function settle(
  definition: MachineDefinition,
  leaves: StateNode[],
  entered: readonly StateNode[],
  depth: number,
): Settled[] {
  const done = { leaves, steps: [] };
  if (depth <= 0 || nodeOf(definition, leaves).final) return [done];
  const completed = completedStates(definition, leaves, entered);
  for (const state of completed) {
    const handler = state.doneHandler;
    if (handler === null) continue;
    return follow(definition, leaves, '@done', [handler], depth, true);
  }
  const always: Handler[] = [];
  for (const leaf of leaves) {
    const handler = leaf.handlers.get('@always');
    if (handler !== undefined && !always.some((h) => h.transition === handler.transition))
      always.push(handler);
  }
  if (always.length === 0) return [done];
  return follow(definition, leaves, '@always', always, depth, true);
}

/** Compound and parallel states (below the root) that the states just entered complete. */
function completedStates(
  definition: MachineDefinition,
  leaves: readonly StateNode[],
  entered: readonly StateNode[],
): StateNode[] {
  const completed: StateNode[] = [];
  for (const final of entered) {
    if (final.type !== 'final') continue;
    for (
      let state = final.parent;
      state !== null && state !== definition.root;
      state = state.parent
    ) {
      if (!isInFinalState(state, leaves)) break;
      if (!completed.includes(state)) completed.push(state);
    }
  }
  return completed;
}

/** Takes each branch combination of `handlers`, then settles. */
function follow(
  definition: MachineDefinition,
  leaves: StateNode[],
  event: string,
  handlers: readonly Handler[],
  depth: number,
  eventless: boolean,
): Settled[] {
  const results: Settled[] = [];
  const choices = branchChoices(handlers);
  for (const choice of choices) {
    const next = applyBranches(leaves, choice);
    const step = stepOf(event, choice, leaves, next.leaves);
    for (const settled of settle(definition, next.leaves, next.entered, depth - 1))
      results.push({ leaves: settled.leaves, steps: [step, ...settled.steps] });
  }
  // An eventless transition whose guards all fail leaves the machine where it is.
  if (eventless && handlers.every((h) => h.transition.branches.every((b) => !b.unconditional)))
    results.push({ leaves, steps: [] });
  return results;
}

/** The event types the active leaves handle (user events and completion events), sorted. */
function handledEvents(leaves: readonly StateNode[]): string[] {
  const events = new Set<string>();
  for (const leaf of leaves)
    for (const event of leaf.handlers.keys()) if (event !== '@always') events.add(event);
  return [...events].sort();
}

function handlersFor(leaves: readonly StateNode[], event: string): Handler[] {
  const handlers: Handler[] = [];
  for (const leaf of leaves) {
    const handler = leaf.handlers.get(event);
    if (handler !== undefined && !handlers.some((h) => h.transition === handler.transition))
      handlers.push(handler);
  }
  return handlers;
}

/**
 * Explores the configurations reachable from the initial one, breadth first.
 *
 * @example buildStateGraph(orderMachine).nodes.map((node) => node.key)
 */
export function buildStateGraph(
  definition: MachineDefinition,
  options: StateGraphOptions = {},
): StateGraph {
  const maxNodes = options.maxNodes ?? 10_000;
  const depth = definition.config.max_transition_depth ?? 100;
  const nodes = new Map<string, GraphNode>();
  const leavesByKey = new Map<string, StateNode[]>();
  const edges: GraphEdge[] = [];
  const queue: string[] = [];
  let truncated = false;
  const visit = (leaves: StateNode[]): GraphNode | null => {
    const node = nodeOf(definition, leaves);
    if (nodes.has(node.key)) return nodes.get(node.key)!;
    if (nodes.size >= maxNodes) {
      truncated = true;
      return null;
    }
    nodes.set(node.key, node);
    leavesByKey.set(node.key, leaves);
    queue.push(node.key);
    return node;
  };

  const entry = new Set<StateNode>();
  addWithDefaults(definition.root, entry);
  entry.delete(definition.root);
  const entered = [...entry].sort(byDocumentOrder);
  const initial: GraphNode[] = [];
  for (const settled of settle(definition, entered.filter(isLeaf), entered, depth)) {
    const node = visit(settled.leaves);
    if (node !== null && !initial.includes(node)) initial.push(node);
  }

  while (queue.length > 0) {
    const key = queue.shift()!;
    const node = nodes.get(key)!;
    if (node.final) continue;
    const leaves = leavesByKey.get(key)!;
    for (const event of handledEvents(leaves)) {
      for (const settled of follow(
        definition,
        leaves,
        event,
        handlersFor(leaves, event),
        depth,
        false,
      )) {
        const target = visit(settled.leaves);
        if (target === null) continue;
        edges.push({ from: key, to: target.key, event, steps: settled.steps });
      }
    }
  }
  return { machineId: definition.id, initial, nodes: [...nodes.values()], edges, truncated };
}
