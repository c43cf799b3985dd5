/**
 * `defineMachine`: validates a machine config as a whole (collecting every problem before
 * failing once) and normalizes it into the definition the interpreter, router and generator read.
 */
import type { ZodType } from 'zod';
import {
  MachineOutputInjectionException,
  InvalidMigrationDefinitionException,
  InvalidBehaviorDefinitionException,
  InvalidEventDefinitionException,
  InvalidStateConfigException,
  throwIfAny,
  type MachineRoutesError,
} from '../errors.js';
import { cloneContext } from './clone-context.js';
import { BehaviorRegistry } from './behavior-registry.js';
import { buildStateTree, type StateTree } from './build-state-tree.js';
import { collectIssuesSync, currentIssueScope } from './collect-issues.js';
import { normalizeEndpoints, type DelegatingStateInput } from './endpoints.js';
import { requiresChildOutput } from './child-output.js';
import { isMachineDefinition } from './invocation.js';
import { eventTypeOf, isEventReference, isUserEventType, toEventDefinition } from './event-type.js';
import { IssueCollector } from './issues.js';
import { checkTypedContracts, declaredContextKeys, rootContract } from './typed-contracts.js';
import type {
  ListenerDefinitions,
  MachineDefinition,
  MachineRecordTypes,
} from './machine-definition.js';
import { callerLocation } from './source-location.js';
import { normalizeScenarios } from './scenarios.js';
import { machineVersion } from './versions.js';
import { normalizeMigrations } from './migrations.js';
import type { StateNode } from './state-node.js';
import type {
  BehaviorConfig,
  ComputedFunction,
  Context,
  EventDefinition,
  EventReference,
  ForwardDefinition,
  ListenConfig,
  MachineConfig,
  MachineOptions,
  StateConfig,
  TransitionsConfig,
} from './types.js';
import type { MachineInput } from './typed-events.js';
import {
  isPlainObject,
  isZodSchema,
  validateRootOptions,
  validateStateConfig,
} from './validate-config.js';

const MACHINE_ID = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * Validates and normalizes a machine. Every problem of the config is collected first; then one
 * error is thrown (the single problem itself, or an AggregateMachineRoutesError with `.issues`).
 * Inside `collectDefinitionIssues` problems are recorded instead and the result is marked
 * `invalid`.
 *
 * Behaviors are typed from the machine as written: `context` by `config.context`, `event` by
 * `behavior.events` and the transitions naming the behavior (typed-events.ts). A context given
 * as a type argument (`defineMachine<Context>(...)`) leaves events untyped (`EventObject`).
 *
 * @example defineMachine({ config: { id: 'order', initial: 'idle', states: { idle: {} } } })
 */
export function defineMachine<
  TContext extends Context = Context,
  const TStates extends Record<string, StateConfig> = Record<string, StateConfig>,
  const TOn extends Record<string, TransitionsConfig> = {},
  const TListen extends ListenConfig = {},
  TEvents extends Record<string, EventReference> = Record<string, EventReference>,
  TGuards extends Record<string, unknown> = Record<string, unknown>,
  TActions extends Record<string, unknown> = Record<string, unknown>,
  TCalculators extends Record<string, unknown> = Record<string, unknown>,
>(
  input: MachineInput<TContext, TStates, TOn, TListen, TEvents, TGuards, TActions, TCalculators>,
): MachineDefinition {
  const source = callerLocation();
  const config = (
    isPlainObject(input) && isPlainObject(input.config) ? input.config : {}
  ) as MachineConfig;
  const behavior = (isPlainObject(input?.behavior) ? input.behavior : {}) as BehaviorConfig;
  const machineId =
    typeof config.id === 'string' && MACHINE_ID.test(config.id) ? config.id : 'machine';
  const issues = new IssueCollector(machineId, source);

  if (!isPlainObject(input) || !isPlainObject(input.config)) {
    issues.add(
      InvalidStateConfigException,
      { path: '', key: 'config' },
      'defineMachine needs { config: { id, initial, states } }.',
    );
  } else {
    if (config.id !== machineId) {
      issues.add(
        InvalidStateConfigException,
        { path: '', key: 'id' },
        `'id' must be a name of letters, digits, '_' or '-', got ${JSON.stringify(config.id)}.`,
        `Try id: 'order'.`,
      );
    }
    validateStateConfig(config, '', true, issues);
    validateRootOptions(config as unknown as Record<string, unknown>, issues);
  }

  const registry = new BehaviorRegistry(machineId, behavior, issues);
  const tree = buildStateTree({ ...config, id: machineId }, registry, issues);
  const listen = isPlainObject(config.listen) ? config.listen : {};
  const listeners: ListenerDefinitions = {
    entry: registry.resolveList(listen.entry, 'listeners', { path: '', key: 'listen.entry' }),
    exit: registry.resolveList(listen.exit, 'listeners', { path: '', key: 'listen.exit' }),
    transition: registry.resolveList(listen.transition, 'listeners', {
      path: '',
      key: 'listen.transition',
    }),
  };
  const computed = normalizeComputed(behavior, issues);
  const eventTypes = collectEventTypes(tree);
  const events = normalizeEvents(behavior, eventTypes, issues);
  const createContext = contextFactory(config.context, issues);
  const typedInput = rootContract(config, 'input', issues);
  const typedFailure = rootContract(config, 'failure', issues);
  checkTypedContracts(
    machineId,
    tree.nodes,
    declaredContextKeys(config),
    computed.map(([name]) => name),
    issues,
  );

  const normalized = normalizeEndpoints({
    machineId,
    endpoints: input?.endpoints,
    behavior,
    eventTypes,
    events,
    delegatingStates: collectDelegatingStates(tree),
  });
  issues.merge(normalized.issues);
  checkForwardOutputs(normalized.forwards, tree, issues);
  const scenarios = normalizeScenarios(input?.scenarios, {
    machineId,
    machineSource: source,
    idMap: tree.idMap,
    eventTypes,
    ...behaviorNames(tree, behavior),
  });
  issues.merge(scenarios.issues);

  const version = machineVersion(tree.root, config as unknown as Record<string, unknown>);
  const migrations = normalizeMigrations(input?.migrations, version, tree.idMap, machineId, issues);

  const definition: MachineDefinition = {
    kind: 'machine',
    id: machineId,
    config,
    behavior,
    events,
    eventTypes,
    endpoints: normalized.endpoints,
    forwards: normalized.forwards,
    options: machineOptions(config),
    source,
    root: tree.root,
    idMap: tree.idMap,
    listeners,
    computed,
    scenarios: scenarios.scenarios,
    records: recordTypes(machineId),
    version,
    migrations,
    pinned: pinnedVersions(input, machineId, version, issues),
    createContext,
    typedInput,
    typedFailure,
    invalid: issues.issues.length > 0,
  };
  if (issues.issues.length > 0) {
    const scope = currentIssueScope();
    if (scope === undefined) throwIfAny(issues.issues);
    else scope.issues.push(...issues.issues);
  }
  return Object.freeze(definition);
}

/**
 * Validates a machine without throwing: every problem `defineMachine` would report, or `[]`.
 *
 * @example expect(validateMachine({ config })).toEqual([])
 */
export function validateMachine<TContext extends Context = Context>(
  input: MachineInput<TContext>,
): MachineRoutesError[] {
  return collectIssuesSync(() => {
    defineMachine<TContext>(input);
  });
}

/**
 * `versioning: 'pin'` with `previous`: the older definitions by version (docs/versioning.md).
 * Each must be the same machine id at another version.
 */
function pinnedVersions(
  input: { previous?: readonly MachineDefinition[]; versioning?: string } | undefined,
  machineId: string,
  version: string,
  issues: IssueCollector,
): ReadonlyMap<string, MachineDefinition> {
  const pinned = new Map<string, MachineDefinition>();
  if (input?.versioning !== 'pin') return pinned;
  for (const [index, old] of (input.previous ?? []).entries()) {
    if (old?.kind !== 'machine' || old.id !== machineId || old.version === version) {
      issues.add(
        InvalidMigrationDefinitionException,
        { path: '', key: `previous[${index}]` },
        `'previous' must hold older definitions of machine '${machineId}' (another version than '${version}').`,
      );
      continue;
    }
    pinned.set(old.version, old);
  }
  return pinned;
}

/** Without its own `max_transition_depth` a machine uses the runtime's (`MacrostepOptions`). */
function machineOptions(config: MachineConfig): MachineOptions {
  const own = config.max_transition_depth;
  return Object.freeze({
    maxTransitionDepth: typeof own === 'number' && Number.isInteger(own) ? own : null,
    shouldPersist: config.should_persist !== false,
  });
}

function normalizeComputed(
  behavior: BehaviorConfig,
  issues: IssueCollector,
): [string, ComputedFunction][] {
  const computed: [string, ComputedFunction][] = [];
  for (const [name, fn] of Object.entries(behavior.computed ?? {})) {
    if (typeof fn === 'function') computed.push([name, fn]);
    else
      issues.add(
        InvalidBehaviorDefinitionException,
        { path: '', key: `computed.${name}` },
        `computed value '${name}' must be a function ({ context }) => value.`,
      );
  }
  return computed;
}

/** User-sendable `on` keys anywhere in the tree, in document order. */
/**
 * The user event types the states declare under `on`, read from the config as written: a
 * transition that failed to normalize (an unresolvable target, say) is reported once, where it
 * is, and its event still counts as handled, so endpoints and route filters naming it do not
 * report the same mistake again.
 */
function collectEventTypes(tree: StateTree): Set<string> {
  const types = new Set<string>();
  for (const node of tree.nodes) {
    const on = isPlainObject(node.config.on) ? Object.keys(node.config.on) : [];
    for (const type of [...node.on.keys(), ...on]) if (isUserEventType(type)) types.add(type);
  }
  return types;
}

/** `behavior.events` by type, plus a payload-less definition for every handled type without one. */
function normalizeEvents(
  behavior: BehaviorConfig,
  eventTypes: ReadonlySet<string>,
  issues: IssueCollector,
): Map<string, EventDefinition> {
  const events = new Map<string, EventDefinition>();
  for (const [key, reference] of Object.entries(behavior.events ?? {})) {
    const where = { path: '', key: `events.${key}` };
    if (!isEventReference(reference)) {
      issues.add(
        InvalidEventDefinitionException,
        where,
        `behavior.events.${key} is not an event definition.`,
        `Use defineEvent({ type: '${key}', payload }) or a MachineEvent class.`,
      );
      continue;
    }
    let type: string;
    try {
      type = eventTypeOf(reference);
    } catch (error) {
      issues.add(InvalidEventDefinitionException, where, (error as Error).message);
      continue;
    }
    if (!isUserEventType(key) || type !== key) {
      issues.add(
        InvalidEventDefinitionException,
        where,
        `behavior.events key '${key}' holds an event of type '${type}'.`,
        `Key it by its type: events: { ${type}: ... }.`,
      );
      continue;
    }
    events.set(type, toEventDefinition(reference));
  }
  for (const type of eventTypes) if (!events.has(type)) events.set(type, toEventDefinition(type));
  return events;
}

function contextFactory(context: MachineConfig['context'], issues: IssueCollector): () => Context {
  if (isZodSchema(context)) {
    const schema = context as ZodType<Context>;
    const probe = schema.safeParse({});
    if (!probe.success || !isPlainObject(probe.data)) {
      const detail = probe.success
        ? 'it does not produce an object'
        : probe.error.issues
            .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
            .join('; ');
      issues.add(
        InvalidStateConfigException,
        { path: '', key: 'context' },
        `the context schema cannot build an initial context from its defaults (${detail}).`,
        'Give every field a .default(...).',
      );
      return () => ({});
    }
    return () => schema.parse({});
  }
  const initial = isPlainObject(context) ? context : {};
  // The interpreter's context copy: ~10x faster than structuredClone on small JSON-like
  // contexts (every create and every stateless request builds one), same result.
  return () => cloneContext(initial);
}

function collectDelegatingStates(tree: StateTree): DelegatingStateInput[] {
  const states: DelegatingStateInput[] = [];
  for (const node of tree.nodes) {
    if (node.delegation === null) continue;
    states.push({
      stateId: node.id,
      path: node.route,
      forward: node.delegation.forward,
      child: childSummary(node),
    });
  }
  return states;
}

/** The child's events when `machine` is a definition already; delegation resolves the rest later. */
function childSummary(node: StateNode): DelegatingStateInput['child'] {
  const child = node.delegation?.machine;
  if (
    typeof child !== 'object' ||
    child === null ||
    (child as { kind?: unknown }).kind !== 'machine'
  )
    return null;
  const definition = child as MachineDefinition;
  return { id: definition.id, events: definition.events, eventTypes: definition.eventTypes };
}

/**
 * A forward whose output behavior requires the child's output (defineChildOutput) needs a child
 * that defines outputs. Knowable here when the child is a definition; otherwise the endpoint
 * checks when it answers.
 */
function checkForwardOutputs(
  forwards: readonly ForwardDefinition[],
  tree: StateTree,
  issues: IssueCollector,
): void {
  for (const forward of forwards) {
    // Mocked or partial forwards (tests of normalizeEndpoints) carry no output.
    if (forward.output?.kind !== 'behavior' || !requiresChildOutput(forward.output.run)) continue;
    const state = tree.idMap.get(forward.stateId);
    const child = state?.invocation?.machine;
    if (state === undefined || !isMachineDefinition(child) || child.invalid) continue;
    if (child.idMap.size > 0 && [...child.idMap.values()].some((node) => node.output !== null))
      continue;
    issues.add(
      MachineOutputInjectionException,
      { path: state.route, key: forward.parentEventType },
      `forward '${forward.parentEventType}' uses output '${forward.output.name}', which reads the child's output, ` +
        `but child machine '${child.id}' defines no output on any state.`,
      `Add output: [...keys] (or an output behavior) to the child's final states, or use a plain output behavior.`,
    );
  }
}

/** Every guard and action name a scenario may override: inline keys and the names resolved in the tree. */
function behaviorNames(
  tree: StateTree,
  behavior: BehaviorConfig,
): { guardNames: Set<string>; actionNames: Set<string> } {
  const guardNames = new Set(Object.keys(behavior.guards ?? {}));
  const actionNames = new Set(Object.keys(behavior.actions ?? {}));
  for (const node of tree.nodes) {
    for (const action of [...node.entry, ...node.exit]) actionNames.add(action.name);
    for (const transition of node.on.values()) {
      for (const branch of transition.branches) {
        for (const guard of branch.guards) guardNames.add(guard.name);
        for (const action of branch.actions) actionNames.add(action.name);
      }
    }
  }
  return { guardNames, actionNames };
}

function recordTypes(machineId: string): MachineRecordTypes {
  return Object.freeze({
    start: `${machineId}.start`,
    finish: `${machineId}.finish`,
    entryStart: `${machineId}.entry.start`,
    entryFinish: `${machineId}.entry.finish`,
    exitStart: `${machineId}.exit.start`,
    exitFinish: `${machineId}.exit.finish`,
    listenEntryStart: `${machineId}.listen.entry.start`,
    listenEntryFinish: `${machineId}.listen.entry.finish`,
    listenExitStart: `${machineId}.listen.exit.start`,
    listenExitFinish: `${machineId}.listen.exit.finish`,
    listenTransitionStart: `${machineId}.listen.transition.start`,
    listenTransitionFinish: `${machineId}.listen.transition.finish`,
  });
}
