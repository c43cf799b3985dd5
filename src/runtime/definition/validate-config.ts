/**
 * Shape checks of the raw config, state by state: keys, types, final/parallel/compound rules,
 * `initial`, root options. Each problem is recorded; nothing here throws.
 */
import type { ZodType } from 'zod';
import { InvalidStateConfigException } from '../errors.js';
import type { IssueCollector } from './issues.js';
import type { StateConfig, StateType } from './types.js';

const STATE_TYPES: readonly StateType[] = ['atomic', 'compound', 'parallel', 'final'];

const STATE_KEYS = [
  'type',
  'initial',
  'states',
  'on',
  'onDone',
  'entry',
  'exit',
  'output',
  'description',
  'meta',
  'machine',
  'input',
  'queue',
  'forward',
  'job',
  'target',
] as const;

const ROOT_KEYS = [
  'id',
  'context',
  'failure',
  'listen',
  'max_transition_depth',
  'should_persist',
  'version',
] as const;

const LISTEN_KEYS = ['entry', 'exit', 'transition'] as const;

/** True for `{ ... }` (not null, not an array, not a class instance with a custom prototype). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** True for a zod schema (duck-typed so a second zod copy still counts). */
export function isZodSchema(value: unknown): value is ZodType {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { safeParse?: unknown }).safeParse === 'function'
  );
}

/** The type a state config resolves to: explicit `type`, else compound when it has children. */
export function stateTypeOf(config: StateConfig): StateType {
  if (config.type !== undefined && STATE_TYPES.includes(config.type)) return config.type;
  return isPlainObject(config.states) && Object.keys(config.states).length > 0
    ? 'compound'
    : 'atomic';
}

/** Root-only options: id, context, listen, max_transition_depth, should_persist. */
export function validateRootOptions(config: Record<string, unknown>, issues: IssueCollector): void {
  const root = { path: '', key: '' };
  const { context, listen, max_transition_depth: depth, should_persist: persist } = config;
  if (context !== undefined && !isPlainObject(context) && !isZodSchema(context)) {
    issues.add(
      InvalidStateConfigException,
      { ...root, key: 'context' },
      `'context' must be a plain object or a zod object schema.`,
      'Try context: { total: 0 }.',
    );
  }
  if (listen !== undefined) {
    if (!isPlainObject(listen)) {
      issues.add(
        InvalidStateConfigException,
        { ...root, key: 'listen' },
        `'listen' must be an object.`,
        'Try listen: { entry: [...] }.',
      );
    } else {
      for (const key of Object.keys(listen)) {
        if (!(LISTEN_KEYS as readonly string[]).includes(key)) {
          issues.add(
            InvalidStateConfigException,
            { ...root, key: `listen.${key}` },
            `'listen' has an unknown key '${key}'.`,
            `Allowed: ${LISTEN_KEYS.join(', ')}.`,
          );
        }
      }
    }
  }
  if (depth !== undefined && (!Number.isInteger(depth) || (depth as number) < 1)) {
    issues.add(
      InvalidStateConfigException,
      { ...root, key: 'max_transition_depth' },
      `'max_transition_depth' must be a positive integer, got ${JSON.stringify(depth)}.`,
      'Try max_transition_depth: 100.',
    );
  }
  const version = config.version;
  if (
    version !== undefined &&
    !(typeof version === 'string' && version !== '') &&
    !(typeof version === 'number' && Number.isFinite(version))
  ) {
    issues.add(
      InvalidStateConfigException,
      { ...root, key: 'version' },
      `'version' must be a non-empty string or a number, got ${JSON.stringify(version)}.`,
      "Try version: 'v2'.",
    );
  }
  if (persist !== undefined && typeof persist !== 'boolean') {
    issues.add(
      InvalidStateConfigException,
      { ...root, key: 'should_persist' },
      `'should_persist' must be a boolean.`,
    );
  }
}

/**
 * Checks one state config. Returns false when it is not an object at all (the builder skips it);
 * other problems are recorded and the state is still built so later checks keep finding issues.
 */
export function validateStateConfig(
  config: unknown,
  path: string,
  isRoot: boolean,
  issues: IssueCollector,
): config is StateConfig {
  const at = (key: string) => ({ path, key });
  if (!isPlainObject(config)) {
    issues.add(
      InvalidStateConfigException,
      at(path),
      `the state config must be an object, got ${config === null ? 'null' : typeof config}.`,
      `Try ${path.split('.').pop() || 'state'}: { on: { ... } }.`,
    );
    return false;
  }
  const allowed: readonly string[] = isRoot ? [...STATE_KEYS, ...ROOT_KEYS] : STATE_KEYS;
  for (const key of Object.keys(config)) {
    if (allowed.includes(key)) continue;
    const fix = key.startsWith('@')
      ? `Move it under on: { '${key}': ... }.`
      : `Allowed keys: ${allowed.join(', ')}.`;
    issues.add(InvalidStateConfigException, at(key), `unknown key '${key}'.`, fix);
  }

  const state = config as StateConfig;
  if (state.type !== undefined && !STATE_TYPES.includes(state.type)) {
    issues.add(
      InvalidStateConfigException,
      at('type'),
      `invalid type '${String(state.type)}'.`,
      `Allowed types: ${STATE_TYPES.join(', ')}.`,
    );
  }
  const type = stateTypeOf(state);
  const hasStatesKey = state.states !== undefined;
  const childKeys = isPlainObject(state.states) ? Object.keys(state.states) : [];
  if (hasStatesKey && !isPlainObject(state.states)) {
    issues.add(
      InvalidStateConfigException,
      at('states'),
      `'states' must be an object of child states.`,
      `Try states: { idle: {} }.`,
    );
  }
  for (const key of childKeys) {
    if (key === '' || key.includes('.') || key.startsWith('@') || key.startsWith('#')) {
      issues.add(
        InvalidStateConfigException,
        at(key),
        `state key '${key}' is invalid: keys must be non-empty and contain no '.', '@' or '#'.`,
        'Rename the state.',
      );
    }
  }
  if (isRoot && childKeys.length === 0) {
    issues.add(
      InvalidStateConfigException,
      at('states'),
      'the machine has no states.',
      `Try states: { idle: {} } with initial: 'idle'.`,
    );
  }

  if (type === 'final') {
    if (state.on !== undefined && (!isPlainObject(state.on) || Object.keys(state.on).length > 0)) {
      issues.add(
        InvalidStateConfigException,
        at('on'),
        'a final state cannot have transitions.',
        `Remove 'on' or make the state non-final.`,
      );
    }
    if (state.onDone !== undefined) {
      issues.add(
        InvalidStateConfigException,
        at('onDone'),
        'a final state cannot have transitions.',
        `Remove 'onDone'.`,
      );
    }
    if (childKeys.length > 0) {
      issues.add(
        InvalidStateConfigException,
        at('states'),
        'a final state cannot have child states.',
        `Remove 'states' or drop type: 'final'.`,
      );
    }
  }
  if (type === 'compound' && childKeys.length === 0 && !isRoot) {
    issues.add(
      InvalidStateConfigException,
      at('type'),
      `a compound state needs child states.`,
      `Add states: { ... } or use type: 'atomic'.`,
    );
  }
  if (type === 'atomic' && state.type === 'atomic' && childKeys.length > 0) {
    issues.add(
      InvalidStateConfigException,
      at('states'),
      `an atomic state cannot have child states.`,
      `Drop type: 'atomic' (it becomes compound).`,
    );
  }
  if (type === 'parallel') {
    if (state.initial !== undefined) {
      issues.add(
        InvalidStateConfigException,
        at('initial'),
        `a parallel state cannot have 'initial': all its regions are entered.`,
        `Remove initial: '${String(state.initial)}'.`,
      );
    }
    if (childKeys.length === 0) {
      issues.add(
        InvalidStateConfigException,
        at('states'),
        'a parallel state must have at least one region in states.',
        `Try states: { payment: { initial: 'pending', states: { ... } } }.`,
      );
    }
    if (state.machine !== undefined) {
      issues.add(
        InvalidStateConfigException,
        at('machine'),
        `a parallel state cannot delegate to a machine.`,
        `Move 'machine' into one of its regions.`,
      );
    }
    if (state.job !== undefined) {
      issues.add(
        InvalidStateConfigException,
        at('job'),
        `it cannot have both 'job' and type 'parallel': a parallel state cannot run a job.`,
        `Move 'job' into one of its regions.`,
      );
    }
  } else if (state.initial !== undefined) {
    if (childKeys.length === 0) {
      issues.add(
        InvalidStateConfigException,
        at('initial'),
        `'initial' is set but the state has no child states.`,
        `Remove initial: '${String(state.initial)}' or add states.`,
      );
    } else if (typeof state.initial !== 'string' || !childKeys.includes(state.initial)) {
      issues.add(
        InvalidStateConfigException,
        at('initial'),
        `initial state '${String(state.initial)}' is not one of its child states (${childKeys.join(', ')}).`,
        `Try { initial: '${childKeys[0]}' }.`,
      );
    }
  }
  if (state.on !== undefined && !isPlainObject(state.on)) {
    issues.add(
      InvalidStateConfigException,
      at('on'),
      `'on' must be an object of transitions by event type.`,
      `Try on: { SUBMIT: 'submitted' }.`,
    );
  }
  if (state.onDone !== undefined && isPlainObject(state.on) && state.on['@done'] !== undefined) {
    issues.add(
      InvalidStateConfigException,
      at('onDone'),
      `both 'onDone' and on['@done'] are set.`,
      'Keep one of them.',
    );
  }
  // A job with `forward` is reported by the job checks (definition/job-invocation.ts).
  if (state.forward !== undefined && state.machine === undefined && state.job === undefined) {
    issues.add(
      InvalidStateConfigException,
      at('forward'),
      `'forward' is set without 'machine'.`,
      `Add machine: <child machine> or remove 'forward'.`,
    );
  }
  return true;
}
