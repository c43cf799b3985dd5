/**
 * Normalizes `on` entries into transition definitions: shapes, event types, behaviors, timers,
 * target resolution and the precomputed exit domain and entry set of every targeted branch.
 */
import {
  InvalidEventDefinitionException,
  InvalidStateConfigException,
  InvalidTimerDefinitionException,
  UndefinedTargetStateException,
} from '../errors.js';
import type { BehaviorRegistry } from './behavior-registry.js';
import { isReservedEventType, isUserEventType } from './event-type.js';
import { constantCase } from '../naming.js';
import type { IssueCollector } from './issues.js';
import { normalizeTimer } from './timers.js';
import {
  byDocumentOrder,
  isProperDescendant,
  type StateNode,
  type TransitionBranch,
  type TransitionDefinition,
} from './state-node.js';
import type { TransitionConfig } from './types.js';
import { isPlainObject } from './validate-config.js';

const TRANSITION_KEYS = [
  'target',
  'guards',
  'actions',
  'calculators',
  'description',
  'after',
  'every',
  'max',
  'then',
];

interface Context {
  root: StateNode;
  registry: BehaviorRegistry;
  issues: IssueCollector;
}

/** The `on` map of a state (with `onDone` folded in as `@done`), as transition definitions. */
export function normalizeTransitions(
  node: StateNode,
  context: Context,
): Map<string, TransitionDefinition> {
  const result = new Map<string, TransitionDefinition>();
  const on = isPlainObject(node.config.on) ? { ...node.config.on } : {};
  if (node.config.onDone !== undefined && on['@done'] === undefined)
    on['@done'] = node.config.onDone;
  // A fire-and-forget job's `target`: left as soon as the job is requested (job-invocation.ts).
  if (
    node.config.job !== undefined &&
    typeof node.config.target === 'string' &&
    on['@done'] === undefined &&
    on['@always'] === undefined
  )
    on['@always'] = node.config.target;
  for (const [eventType, config] of Object.entries(on)) {
    if (!checkEventKey(node, eventType, context.issues)) continue;
    const branches = normalizeBranches(node, eventType, config, context);
    if (branches !== null)
      result.set(eventType, Object.freeze({ eventType, source: node, branches }));
  }
  return result;
}

function checkEventKey(node: StateNode, eventType: string, issues: IssueCollector): boolean {
  const where = { path: node.route, key: eventType };
  if (isUserEventType(eventType) || eventType === '@always') return true;
  const delegating = node.delegation !== null || node.config.job !== undefined;
  if (eventType === '@done') {
    if (node.type === 'compound' || node.type === 'parallel' || delegating) return true;
    issues.add(
      InvalidEventDefinitionException,
      where,
      `'@done' never fires on a ${node.type} state.`,
      `Use it on a compound, parallel or delegating state.`,
    );
    return false;
  }
  // Parallel dispatch's watchdog (`region_timeout`) routes these on a parallel state.
  if ((eventType === '@fail' || eventType === '@timeout') && node.type === 'parallel') return true;
  if (isReservedEventType(eventType)) {
    if (eventType.startsWith('@done.') && node.delegation === null && delegating) {
      issues.add(
        InvalidStateConfigException,
        where,
        `it has ${eventType} with 'job': a job has no final states.`,
        `Use '@done' for the job's result.`,
      );
      return false;
    }
    if (delegating) return true;
    if (eventType.startsWith('@done.')) {
      issues.add(
        InvalidStateConfigException,
        where,
        `it has ${eventType} keys but no 'machine' delegation: '@done.<final>' routes a child machine's final state.`,
        `Add machine: <child machine> or use '@done'.`,
      );
      return false;
    }
    issues.add(
      InvalidEventDefinitionException,
      where,
      `'${eventType}' is only sent to delegating states (with 'machine').`,
      `Add machine: <child machine> or remove '${eventType}'.`,
    );
    return false;
  }
  const fix = eventType.startsWith('@')
    ? `Reserved names are @always, @done, @done.<final>, @fail and @timeout.`
    : `Use SCREAMING_SNAKE_CASE, e.g. '${constantCase(eventType)}'.`;
  issues.add(InvalidEventDefinitionException, where, `event type '${eventType}' is invalid.`, fix);
  return false;
}

function normalizeBranches(
  node: StateNode,
  eventType: string,
  config: unknown,
  context: Context,
): TransitionBranch[] | null {
  const where = { path: node.route, key: eventType };
  if (config === undefined) return null;
  const list: unknown[] = Array.isArray(config) ? config : [config];
  if (list.length === 0) {
    context.issues.add(
      InvalidStateConfigException,
      where,
      `transition for '${eventType}' is an empty list.`,
      `Use null for a targetless transition or add a branch.`,
    );
    return null;
  }
  const branches: TransitionBranch[] = [];
  list.forEach((entry, index) => {
    const branch = normalizeBranch(node, eventType, entry, context);
    if (branch === null) return;
    const last = index === list.length - 1;
    if (!last && branch.guards.length === 0 && hasNoGuardsConfigured(entry)) {
      context.issues.add(
        InvalidStateConfigException,
        where,
        `branch ${index + 1} of '${eventType}' has no guards but is not the last one, so later branches never run.`,
        'Move the unguarded (default) branch to the end.',
      );
    }
    branches.push(branch);
  });
  return branches.length === list.length ? branches : null;
}

function hasNoGuardsConfigured(entry: unknown): boolean {
  return (
    !isPlainObject(entry) ||
    entry.guards === undefined ||
    (Array.isArray(entry.guards) && entry.guards.length === 0)
  );
}

function normalizeBranch(
  node: StateNode,
  eventType: string,
  entry: unknown,
  context: Context,
): TransitionBranch | null {
  const { issues, registry } = context;
  const where = { path: node.route, key: eventType };
  let config: TransitionConfig;
  if (entry === null || typeof entry === 'string') {
    config = { target: entry };
  } else if (isPlainObject(entry)) {
    config = entry as TransitionConfig;
    const unknown = Object.keys(entry).filter((key) => !TRANSITION_KEYS.includes(key));
    if (unknown.length > 0) {
      issues.add(
        InvalidStateConfigException,
        where,
        `transition for '${eventType}' has unknown keys: ${unknown.join(', ')}.`,
        `Allowed keys: ${TRANSITION_KEYS.join(', ')}.`,
      );
      return null;
    }
  } else {
    issues.add(
      InvalidStateConfigException,
      where,
      `transition for '${eventType}' must be a target string, null, a transition object or a list of them.`,
      `Try ${eventType}: 'nextState'.`,
    );
    return null;
  }

  const label = `on.${eventType}`;
  const guards = registry.resolveList(config.guards, 'guards', {
    path: node.route,
    key: `${label}.guards`,
  });
  const calculators = registry.resolveList(config.calculators, 'calculators', {
    path: node.route,
    key: `${label}.calculators`,
  });
  const actions = registry.resolveList(config.actions, 'actions', {
    path: node.route,
    key: `${label}.actions`,
  });
  const timer = normalizeTimer(config, where, issues);
  // The sweep anchors a timer on its state's entry time, which `machine_current_states` keeps
  // for the active leaves only.
  if (
    timer !== null &&
    !eventType.startsWith('@') &&
    (node.type === 'compound' || node.type === 'parallel')
  ) {
    issues.add(
      InvalidTimerDefinitionException,
      where,
      `transition '${eventType}' has a timer on the ${node.type} state '${node.route}'; timers run on leaf states only.`,
      `Move the timed transition into the leaf states that wait (or into a child state that stays active).`,
    );
  }

  let target: StateNode | null = null;
  if (config.target !== undefined && config.target !== null && config.target !== '') {
    if (typeof config.target !== 'string') {
      issues.add(
        InvalidStateConfigException,
        where,
        `target of '${eventType}' must be a string or null.`,
      );
      return null;
    }
    target = resolveTarget(node, config.target, context.root);
    if (target === null) {
      issues.add(
        UndefinedTargetStateException,
        { path: node.route, key: config.target },
        `transition '${eventType}' targets '${config.target}', which is not a sibling, an ancestor's sibling or a path from the root.`,
        `Check the spelling or use a dotted path from the root (e.g. 'checkout.payment').`,
      );
      return null;
    }
    if (crossesRegions(node, target)) {
      issues.add(
        InvalidStateConfigException,
        { path: node.route, key: config.target },
        `transition '${eventType}' crosses parallel regions (to '${target.route}').`,
        'Regions cannot target each other; use raise() to coordinate them.',
      );
      return null;
    }
  }
  const domain = target === null ? null : transitionDomain(node, target, context.root);
  return Object.freeze({
    target,
    guards,
    calculators,
    actions,
    description: typeof config.description === 'string' ? config.description : undefined,
    timer,
    domain,
    entrySet: target === null || domain === null ? [] : entrySet(target, domain),
    unconditional: guards.length === 0 && calculators.length === 0,
  });
}

/** A sibling of the source, then siblings of its ancestors walking up, then a path from the root. */
export function resolveTarget(
  source: StateNode,
  target: string,
  root: StateNode,
): StateNode | null {
  const prefix = `${root.key}.`;
  const segments = (target.startsWith(prefix) ? target.slice(prefix.length) : target).split('.');
  for (
    let scope: StateNode | null = source.parent ?? source;
    scope !== null;
    scope = scope.parent
  ) {
    const found = descend(scope, segments);
    if (found !== null) return found;
  }
  return null;
}

function descend(scope: StateNode, segments: readonly string[]): StateNode | null {
  let node: StateNode | undefined = scope;
  for (const segment of segments) {
    node = node.childMap.get(segment);
    if (node === undefined) return null;
  }
  return node;
}

/** Source and target sit in different regions of one parallel state. */
function crossesRegions(source: StateNode, target: StateNode): boolean {
  for (let depth = source.depth - 1; depth >= 0; depth--) {
    const ancestor = source.ancestors[depth];
    if (ancestor === undefined || ancestor.type !== 'parallel') continue;
    if (!isProperDescendant(target, ancestor)) continue;
    return source.ancestors[depth + 1] !== target.ancestors[depth + 1];
  }
  return false;
}

/**
 * The compound state below which the transition exits and enters states. Transitions are
 * external: a transition to the source itself or to one of its descendants exits and re-enters
 * the source. A parallel state is never a domain (its regions live and die together).
 */
function transitionDomain(source: StateNode, target: StateNode, root: StateNode): StateNode {
  let domain = source.parent ?? root;
  while (domain !== root && (!isProperDescendant(target, domain) || domain.type === 'parallel')) {
    domain = domain.parent ?? root;
  }
  return domain;
}

/** The target, its ancestors below the domain, and the default descendants, in document order. */
function entrySet(target: StateNode, domain: StateNode): StateNode[] {
  const set = new Set<StateNode>();
  const path = target.ancestors.slice(domain.depth + 1);
  for (const node of path) set.add(node);
  for (const node of path) {
    if (node === target || node.type !== 'parallel') continue;
    for (const region of node.children) {
      if (!set.has(region)) addWithDefaults(region, set);
    }
  }
  addWithDefaults(target, set);
  return [...set].sort(byDocumentOrder);
}

/** `node` and what entering it enters: the initial child of compounds, every region of parallels. */
export function addWithDefaults(node: StateNode, set: Set<StateNode>): void {
  set.add(node);
  if (node.type === 'compound' && node.initial !== null) addWithDefaults(node.initial, set);
  else if (node.type === 'parallel')
    for (const region of node.children) addWithDefaults(region, set);
}
