/**
 * `defineMachine`: validates a machine config as a whole (collecting every problem before
 * failing once) and normalizes it into the definition the interpreter, router and generator read.
 */
import { InvalidStateConfigException, throwIfAny, type MachineRoutesError } from '../errors.js';
import { BehaviorRegistry } from './behavior-registry.js';
import { buildStateTree } from './build-state-tree.js';
import { collectIssuesSync, currentIssueScope } from './collect-issues.js';
import { checkForwardOutputs, collectDelegatingStates } from './delegating-states.js';
import { normalizeEndpoints } from './endpoints.js';
import { IssueCollector } from './issues.js';
import { collectEventTypes, normalizeEvents } from './machine-events.js';
import {
  behaviorNames,
  contextFactory,
  machineOptions,
  normalizeComputed,
  pinnedVersions,
  recordTypes,
} from './machine-parts.js';
import { checkTypedContracts, declaredContextKeys, rootContract } from './typed-contracts.js';
import type { ListenerDefinitions, MachineDefinition } from './machine-definition.js';
import { callerLocation } from './source-location.js';
import { normalizeScenarios } from './scenarios.js';
import { machineVersion } from './versions.js';
import { normalizeMigrations } from './migrations.js';
import type {
  Context,
  EventReference,
  ListenConfig,
  MachineConfig,
  StateConfig,
  TransitionsConfig,
} from './types.js';
import type { BehaviorConfig } from './behavior-types.js';
import type { MachineInput } from './typed-events.js';
import { isPlainObject, validateRootOptions, validateStateConfig } from './validate-config.js';

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
