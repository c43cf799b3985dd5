/**
 * The first step of `planRegistration`: the registration's own options checked (unknown keys,
 * `prefix`, `name`, `only` / `except`, `machineIdFor` / `modelFor`, `model` / `attribute`,
 * `middleware`) and turned into the {@link PlanningContext} every later step reads. Pure.
 */
import { eventTypeOfReference } from '../definition/endpoints.js';
import { InvalidRouterConfigException, type MachineRoutesError } from '../errors.js';
import type { EventReference, MachineDefinitionBase } from '../definition/types.js';
import type { RegistrationOptions, RouteBinding } from './types.js';
import { modelParamName, normalizePrefix } from '../definition/uri.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS } from '../known-keys.js';

/** What planning reads of a machine definition. */
export type PlannableDefinition = Pick<MachineDefinitionBase, 'id' | 'endpoints' | 'forwards'> &
  /** Read outputs name behaviors of `behavior.outputs`; `flow`'s `inState` a state of `config`. */
  Partial<Pick<MachineDefinitionBase, 'behavior' | 'config'>>;

/** Reports one problem of the registration under the option `key`. */
export type PlanningFail = (message: string, key: string) => void;

/** The checked registration options and what the planning steps derive from them. */
export interface PlanningContext {
  definition: PlannableDefinition;
  options: RegistrationOptions;
  /** The registration's name (`options.name` when valid, else the machine id). */
  name: string;
  /** The normalized prefix; `null` when it is missing or invalid (no routes are planned). */
  prefix: string | null;
  /** Every problem found so far, in the order found; later steps push theirs here too. */
  issues: MachineRoutesError[];
  fail: PlanningFail;
  /** Event types of the machine's endpoints, then of its forwards (their parent-facing type). */
  endpointTypes: string[];
  forwardTypes: string[];
  available: string[];
  /** Whether `only` / `except` keep an event type. */
  isKept: (type: string) => boolean;
  /** Event types of the endpoints (not forwards) the registration keeps. */
  keptEndpoints: string[];
  machineIdFor: string[];
  modelFor: string[];
  middleware: readonly string[];
  /** The model binding of `model` + `attribute`, when both are set. */
  modelBinding: RouteBinding | null;
}

/**
 * Checks the registration's own options against the definition (rules R6-R14 of "Filtering and
 * validation"), every problem pushed on `issues` through `fail` in the order the spec lists them.
 */
export function planningContext(
  definition: PlannableDefinition,
  options: RegistrationOptions,
): PlanningContext {
  const issues: MachineRoutesError[] = [];
  const validName = typeof options.name === 'string' && /^[A-Za-z0-9_.-]+$/.test(options.name);
  const name = validName ? (options.name as string) : definition.id;
  const where = `(machine '${definition.id}', registration '${name}')`;
  const fail: PlanningFail = (message, key) => {
    issues.push(
      new InvalidRouterConfigException(`MachineRouter: ${message} ${where}`, {
        machine: definition.id,
        registration: name,
        key,
      }),
    );
  };

  for (const unknown of findUnknownKeys(options, KNOWN_KEYS.registration)) {
    fail(
      `${describeUnknownKey(unknown)} in the registration options. Known keys: ${KNOWN_KEYS.registration.join(', ')}.`,
      unknown.key,
    );
  }
  const prefix = normalizePrefix(options.prefix);
  if (prefix === null) {
    fail(
      options.prefix === undefined || options.prefix === ''
        ? `'prefix' is required, e.g. { prefix: '${definition.id}s' }.`
        : `invalid 'prefix' '${String(options.prefix)}': use path segments of letters, digits, '-', '_', '.' and '~' (no parameters, query or spaces).`,
      'prefix',
    );
  }
  if (options.name !== undefined && !validName) {
    fail(
      `invalid 'name' '${String(options.name)}': use letters, digits, '_', '.' and '-'.`,
      'name',
    );
  }

  const endpointTypes = definition.endpoints.map((endpoint) => endpoint.eventType);
  const forwardTypes = definition.forwards.map((forward) => forward.parentEventType);
  const available = [...endpointTypes, ...forwardTypes];
  const list = (key: 'only' | 'except' | 'machineIdFor' | 'modelFor'): string[] | null => {
    const value = options[key] as readonly EventReference[] | null | undefined;
    if (value === undefined || value === null) return null;
    if (!Array.isArray(value)) {
      fail(`'${key}' must be a list of event types or event definitions.`, key);
      return [];
    }
    const types: string[] = [];
    for (const ref of value as readonly unknown[]) {
      const type = eventTypeOfReference(ref);
      if (type === null)
        fail(`'${key}' has an entry that is not an event type or event definition.`, key);
      else types.push(type);
    }
    return types;
  };
  const only = list('only');
  const except = list('except');
  const machineIdFor = list('machineIdFor') ?? [];
  const modelFor = list('modelFor') ?? [];
  const middleware: readonly string[] = Array.isArray(options.middleware) ? options.middleware : [];
  if (
    (options.middleware !== undefined && !Array.isArray(options.middleware)) ||
    !middleware.every((entry) => typeof entry === 'string' && entry !== '')
  ) {
    fail(`'middleware' must be a list of middleware names, e.g. ['auth:api'].`, 'middleware');
  }

  // R6-R7: filtering.
  if (only !== null && except !== null) {
    fail(`'only' and 'except' cannot be used together. Keep one of them.`, 'only');
  }
  for (const [key, types] of [
    ['only', only],
    ['except', except],
  ] as const) {
    const unknown = (types ?? []).filter((type) => !available.includes(type));
    if (unknown.length > 0) {
      fail(
        `unknown event types in '${key}': ${unknown.join(', ')}. Available: ${available.join(', ') || '(none)'}.`,
        key,
      );
    }
  }
  const filter: 'only' | 'except' | null =
    only !== null ? 'only' : except !== null ? 'except' : null;
  const isKept = (type: string): boolean =>
    only !== null ? only.includes(type) : except !== null ? !except.includes(type) : true;

  // R9-R12: binding lists reference kept, non-forwarded endpoints.
  const keptEndpoints = endpointTypes.filter(isKept);
  for (const [key, types] of [
    ['machineIdFor', machineIdFor],
    ['modelFor', modelFor],
  ] as const) {
    const forwarded = types.filter((type) => forwardTypes.includes(type));
    if (forwarded.length > 0) {
      fail(
        `'${key}' cannot reference forwarded endpoints (they inherit binding mode from parent model config): ${forwarded.join(', ')}. Remove them from '${key}'.`,
        key,
      );
    }
    const missing = types.filter(
      (type) => !forwardTypes.includes(type) && !keptEndpoints.includes(type),
    );
    if (missing.length > 0) {
      const filteredOut = missing.every((type) => endpointTypes.includes(type));
      const hint =
        filteredOut && filter === 'only'
          ? ` (filtered by 'only'). Remove from '${key}' or add to 'only'.`
          : filteredOut && filter === 'except'
            ? ` (filtered by 'except'). Remove from '${key}' or adjust 'except'.`
            : `. Available: ${keptEndpoints.join(', ') || '(none)'}.`;
      fail(
        `'${key}' references event types not in the registered endpoint set: ${missing.join(', ')}${hint}`,
        key,
      );
    }
  }
  // R13-R14.
  const hasModel = typeof options.model === 'string' && options.model !== '';
  const hasAttribute = typeof options.attribute === 'string' && options.attribute !== '';
  if (modelFor.length > 0 && (!hasModel || !hasAttribute)) {
    fail(
      `'model' and 'attribute' are required when 'modelFor' is set, e.g. { model: 'Order', attribute: 'machine_id' }.`,
      'model',
    );
  }
  if (hasModel && modelParamName(options.model as string) === '') {
    fail(`invalid 'model' '${String(options.model)}': use a name such as 'Order'.`, 'model');
  }
  const overlap = machineIdFor.filter((type) => modelFor.includes(type));
  if (overlap.length > 0) {
    fail(
      `events cannot be in both 'machineIdFor' and 'modelFor': ${overlap.join(', ')}. Keep each in one list.`,
      'machineIdFor',
    );
  }
  const modelBinding: RouteBinding | null =
    hasModel && hasAttribute
      ? {
          kind: 'model',
          param: modelParamName(options.model as string),
          model: options.model as string,
          attribute: options.attribute as string,
        }
      : null;

  return {
    definition,
    options,
    name,
    prefix,
    issues,
    fail,
    endpointTypes,
    forwardTypes,
    available,
    isKept,
    keptEndpoints,
    machineIdFor,
    modelFor,
    middleware,
    modelBinding,
  };
}
