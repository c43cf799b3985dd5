/**
 * Builds the state-node tree of a machine config: nodes with ids, document order and ancestors,
 * resolved entry/exit behaviors and outputs, transitions, and per-leaf inherited handlers.
 */
import { InvalidOutputDefinitionException } from '../errors.js';
import type { BehaviorRegistry } from './behavior-registry.js';
import { isUserEventType } from './event-type.js';
import { normalizeInvocation } from './invocation.js';
import { normalizeJobInvocation } from './job-invocation.js';
import { childPath, type IssueCollector } from './issues.js';
import {
  isLeaf,
  type Handler,
  type MutableStateNode,
  type StateNode,
  type TransitionDefinition,
} from './state-node.js';
import { normalizeTransitions } from './transitions.js';
import type {
  MachineConfig,
  OutputConfig,
  OutputDefinition,
  StateConfig,
  StateOutputDefinition,
} from './types.js';
import { contractKeys } from './typed-contracts.js';
import { isZodSchema } from './validate-config.js';
import { isPlainObject, stateTypeOf, validateStateConfig } from './validate-config.js';

/** The built tree and its id map. */
export interface StateTree {
  readonly root: StateNode;
  /** Every state by full id (`order.submitted`). */
  readonly idMap: ReadonlyMap<string, StateNode>;
  /** Nodes in document order. */
  readonly nodes: readonly StateNode[];
}

interface BuildContext {
  machineId: string;
  registry: BehaviorRegistry;
  issues: IssueCollector;
  nodes: MutableStateNode[];
}

/** Builds and checks the whole tree; problems go to `issues`. */
export function buildStateTree(
  config: MachineConfig,
  registry: BehaviorRegistry,
  issues: IssueCollector,
): StateTree {
  const context: BuildContext = { machineId: config.id, registry, issues, nodes: [] };
  // The root's `input` is the machine's typed input (a schema), never a child mapping.
  const root = buildNode(config as unknown as StateConfig, config.id, null, '', context);
  for (const node of context.nodes) {
    node.on = normalizeTransitions(node, { root, registry, issues });
    const done = node.on.get('@done');
    // A delegating state's `@done` answers its child, not a final child state of its own.
    if (done !== undefined && node.config.machine === undefined)
      node.doneHandler = handlerFor(done, node.route, config.id);
    node.invocation =
      node.config.job === undefined
        ? normalizeInvocation(node, config.id, issues)
        : normalizeJobInvocation(node, config.id, issues);
  }
  for (const node of context.nodes) if (isLeaf(node)) completeLeaf(node, config.id);
  return {
    root,
    idMap: new Map(context.nodes.map((node) => [node.id, node])),
    nodes: context.nodes,
  };
}

function buildNode(
  config: StateConfig,
  key: string,
  parent: MutableStateNode | null,
  route: string,
  context: BuildContext,
): MutableStateNode {
  const { machineId, registry, issues } = context;
  const id = route === '' ? machineId : `${machineId}.${route}`;
  const type = stateTypeOf(config);
  const prefix = `${machineId}.state.${route}`;
  const node: MutableStateNode = {
    key,
    id,
    route,
    type,
    parent,
    children: [],
    childMap: new Map(),
    initial: null,
    depth: parent === null ? 0 : parent.depth + 1,
    order: context.nodes.length,
    ancestors: [],
    transient: isPlainObject(config.on) && config.on['@always'] !== undefined,
    entry: registry.resolveList(config.entry, 'actions', { path: route, key: 'entry' }),
    exit: registry.resolveList(config.exit, 'actions', { path: route, key: 'exit' }),
    output: null,
    on: new Map(),
    handlers: new Map(),
    availableTypes: [],
    hasAlways: false,
    doneHandler: null,
    invocation: null,
    delegation:
      config.machine === undefined
        ? null
        : {
            machine: config.machine,
            input: config.input,
            queue: config.queue,
            forward: config.forward,
          },
    records: {
      enter: `${prefix}.enter`,
      exit: `${prefix}.exit`,
      entryStart: `${prefix}.entry.start`,
      entryFinish: `${prefix}.entry.finish`,
      exitStart: `${prefix}.exit.start`,
      exitFinish: `${prefix}.exit.finish`,
      regionEnter: `${machineId}.parallel.${route}.region.enter`,
      parallelDone: `${machineId}.parallel.${route}.done`,
    },
    config,
  };
  node.ancestors = parent === null ? [node] : [...parent.ancestors, node];
  context.nodes.push(node);
  node.output = normalizeStateOutput(node, parent, registry, issues);

  const children =
    type === 'final' || !isPlainObject(config.states) ? [] : Object.entries(config.states);
  for (const [childKey, childConfig] of children) {
    const childRoute = childPath(route, childKey);
    if (!validateStateConfig(childConfig, childRoute, false, issues)) continue;
    const child = buildNode(childConfig, childKey, node, childRoute, context);
    (node.children as StateNode[]).push(child);
    (node.childMap as Map<string, StateNode>).set(childKey, child);
  }
  if (type === 'compound') {
    node.initial =
      (typeof config.initial === 'string' ? node.childMap.get(config.initial) : undefined) ??
      node.children[0] ??
      null;
  }
  return node;
}

function normalizeStateOutput(
  node: MutableStateNode,
  parent: StateNode | null,
  registry: BehaviorRegistry,
  issues: IssueCollector,
): StateOutputDefinition | null {
  const output = node.config.output;
  if (output === undefined) return null;
  const where = { path: node.route, key: 'output' };
  if (node.transient) {
    issues.add(
      InvalidOutputDefinitionException,
      where,
      `'output' is not allowed on a transient (@always) state: it is left before anyone reads it.`,
      'Move the output to the state it leads to.',
    );
    return null;
  }
  if (parent !== null && parent.ancestors.some((ancestor) => ancestor.type === 'parallel')) {
    issues.add(
      InvalidOutputDefinitionException,
      where,
      `'output' is not allowed on a state inside a parallel region.`,
      'Define it on the parallel state itself.',
    );
    return null;
  }
  if (isZodSchema(output)) {
    // Not a zod object: reported by checkTypedContracts.
    const keys = contractKeys(output);
    return keys === null ? null : { kind: 'typed', schema: output, keys: keys.all };
  }
  return normalizeOutput(output as OutputConfig, registry, where);
}

/** A state's or endpoint's `output`: a list of context keys, or an output behavior. */
export function normalizeOutput(
  output: OutputConfig,
  registry: BehaviorRegistry,
  where: { path: string; key: string },
): OutputDefinition | null {
  if (Array.isArray(output) && output.every((key) => typeof key === 'string')) {
    return { kind: 'keys', keys: Object.freeze([...(output as readonly string[])]) };
  }
  const behavior = registry.resolve(output, 'outputs', where);
  return behavior === null
    ? null
    : { kind: 'behavior', name: behavior.name, run: behavior.run, params: behavior.params };
}

/** Inherited handlers and available types of a leaf: the nearest declaration wins. */
function completeLeaf(leaf: MutableStateNode, machineId: string): void {
  const handlers = new Map<string, Handler>();
  const available: string[] = [];
  for (let depth = leaf.depth; depth >= 0; depth--) {
    const node = leaf.ancestors[depth];
    if (node === undefined) continue;
    for (const [eventType, transition] of node.on) {
      // Completion events (`@done`, `@fail`, ...) belong to the state declaring them; only
      // user events and `@always` bubble to ancestors.
      if (
        handlers.has(eventType) ||
        (node !== leaf && eventType.startsWith('@') && eventType !== '@always')
      )
        continue;
      handlers.set(eventType, handlerFor(transition, leaf.route, machineId));
      if (isUserEventType(eventType)) available.push(eventType);
    }
  }
  leaf.handlers = handlers;
  leaf.availableTypes = available;
  leaf.hasAlways = handlers.has('@always');
}

/** A transition seen from `route`: its history types are named after that state. */
function handlerFor(transition: TransitionDefinition, route: string, machineId: string): Handler {
  const prefix = `${machineId}.transition.${route}.${transition.eventType}`;
  return {
    transition,
    startType: `${prefix}.start`,
    finishType: `${prefix}.finish`,
    failType: `${prefix}.fail`,
  };
}
