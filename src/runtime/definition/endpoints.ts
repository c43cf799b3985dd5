/**
 * Definition-time normalization of `endpoints` and of delegating states' `forward` entries
 * (spec "Endpoint definition formats", "Forwarding", "Filtering and validation" rule 6 and 7).
 *
 * Pure: takes what defineMachine found, returns normalized definitions plus every problem
 * found (never throws), so `check` can report all of a machine's problems at once.
 */
import {
  InvalidEndpointDefinitionException,
  InvalidStateConfigException,
  type MachineRoutesError,
} from '../errors.js';
import { contentionProblem } from './contention.js';
import { asEndpointAction } from './endpoint-action.js';
import { endpointUriFor, isValidEndpointUri } from './uri.js';
import { eventTypeOf, isEventReference, toEventDefinition } from './event-type.js';
import type {
  BehaviorConfig,
  ContentionConfig,
  EndpointActionDefinition,
  EndpointConfig,
  EndpointDefinition,
  EndpointOptions,
  EventDefinition,
  EventReference,
  ForwardConfig,
  ForwardDefinition,
  ForwardOptions,
  HttpMethod,
  OutputConfig,
  OutputDefinition,
  OutputFunction,
} from './types.js';

/** A delegating state as defineMachine found it. */
export interface DelegatingStateInput {
  /** Full state id (`parent.processing`). */
  stateId: string;
  /** Dotted state path without the machine id (`processing`). */
  path: string;
  forward: ForwardConfig | undefined;
  /** The child machine's normalized events and definition id. */
  child: {
    id: string;
    events: ReadonlyMap<string, EventDefinition>;
    eventTypes: ReadonlySet<string>;
  } | null;
}

export interface EndpointNormalizationInput {
  machineId: string;
  endpoints: readonly EndpointConfig[] | undefined;
  behavior: BehaviorConfig;
  /** User-sendable event types handled somewhere in the state tree (keys of `on`). */
  eventTypes: ReadonlySet<string>;
  /** Event definitions by type from `behavior.events`. */
  events: ReadonlyMap<string, EventDefinition>;
  delegatingStates: readonly DelegatingStateInput[];
}

export interface EndpointNormalizationResult {
  endpoints: EndpointDefinition[];
  forwards: ForwardDefinition[];
  issues: MachineRoutesError[];
}

const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const ENDPOINT_KEYS = [
  'uri',
  'method',
  'action',
  'output',
  'middleware',
  'status',
  'available_events',
  'contention',
];
const FORWARD_KEYS = [...ENDPOINT_KEYS, 'child_event'];

/**
 * Normalizes `endpoints` (the four mixable formats) and every delegating state's `forward`
 * entries, resolving each option to its default (POST, generated URI, status 200,
 * available_events true).
 */
export function normalizeEndpoints(input: EndpointNormalizationInput): EndpointNormalizationResult {
  const issues: MachineRoutesError[] = [];
  const endpoints = normalizeEndpointList(input, issues);
  const forwards = normalizeForwards(input, endpoints, issues);
  return { endpoints, forwards, issues };
}

// ---------------------------------------------------------------------------------------------
// endpoints

interface EndpointEntry {
  ref: EventReference;
  options: string | EndpointOptions | undefined;
  /** Config path for messages: `endpoints[2]`, `endpoints[1].APPROVE`. */
  path: string;
}

function normalizeEndpointList(
  input: EndpointNormalizationInput,
  issues: MachineRoutesError[],
): EndpointDefinition[] {
  const { machineId } = input;
  const result: EndpointDefinition[] = [];
  const seen = new Set<string>();
  for (const entry of flattenEndpointEntries(input.endpoints ?? [], machineId, issues)) {
    const resolved = resolveEventReference(entry.ref);
    if (resolved === null) {
      issues.push(
        endpointIssue(
          `Endpoint entry at ${entry.path} of machine '${machineId}' is not an event type, an event definition or an event class.`,
          machineId,
          entry.path,
        ),
      );
      continue;
    }
    const { type } = resolved;
    if (!input.eventTypes.has(type)) {
      issues.push(
        endpointIssue(
          `Endpoint references undefined event type \`${type}\` in machine '${machineId}'. ` +
            `Ensure a state handles it under 'on' (and list its payload under the behavior 'events').`,
          machineId,
          entry.path,
          type,
        ),
      );
      continue;
    }
    if (seen.has(type)) {
      issues.push(
        endpointIssue(
          `Endpoint \`${type}\` is declared more than once in machine '${machineId}'. Keep one entry per event type.`,
          machineId,
          entry.path,
          type,
        ),
      );
      continue;
    }
    seen.add(type);
    const options: EndpointOptions =
      typeof entry.options === 'string' ? { uri: entry.options } : (entry.options ?? {});
    const common = normalizeCommonOptions(options, ENDPOINT_KEYS, {
      machineId,
      eventType: type,
      path: entry.path,
      behavior: input.behavior,
      issues,
      unknownKeyIssue: (keys) =>
        endpointIssue(
          `Endpoint \`${type}\` of machine '${machineId}' has unknown keys: ${keys.join(', ')}. Allowed: ${ENDPOINT_KEYS.join(', ')}.`,
          machineId,
          entry.path,
          type,
        ),
    });
    if (common === null) continue;
    result.push({
      eventType: type,
      event: input.events.get(type) ?? resolved.definition ?? bareEvent(type),
      ...common,
      availableEvents: options.available_events ?? true,
    });
  }
  return result;
}

/** Expands the four formats into one `{ ref, options }` entry per event. */
function flattenEndpointEntries(
  configs: readonly EndpointConfig[],
  machineId: string,
  issues: MachineRoutesError[],
): EndpointEntry[] {
  const entries: EndpointEntry[] = [];
  if (!Array.isArray(configs as unknown)) {
    issues.push(
      endpointIssue(
        `'endpoints' of machine '${machineId}' must be a list, e.g. ['SUBMIT', { APPROVE: '/approve' }].`,
        machineId,
        'endpoints',
      ),
    );
    return entries;
  }
  configs.forEach((config, index) => {
    const path = `endpoints[${index}]`;
    if (Array.isArray(config)) {
      // Event-definition key: [EventRef, uri | options].
      const [ref, options] = config as readonly [EventReference, string | EndpointOptions];
      if (config.length !== 2 || !(typeof options === 'string' || isPlainObject(options))) {
        issues.push(
          endpointIssue(
            `Endpoint entry at ${path} of machine '${machineId}' must be a pair [event, uri | options].`,
            machineId,
            path,
          ),
        );
        return;
      }
      entries.push({ ref, options, path });
    } else if (isPlainObject(config) && config.kind !== 'event') {
      // String map or options map, keyed by event type.
      for (const [type, options] of Object.entries(config)) {
        entries.push({
          ref: type,
          options: options as string | EndpointOptions,
          path: `${path}.${type}`,
        });
      }
    } else {
      entries.push({ ref: config as EventReference, options: undefined, path });
    }
  });
  return entries;
}

// ---------------------------------------------------------------------------------------------
// forwards

function normalizeForwards(
  input: EndpointNormalizationInput,
  endpoints: readonly EndpointDefinition[],
  issues: MachineRoutesError[],
): ForwardDefinition[] {
  const { machineId } = input;
  const endpointTypes = new Set(endpoints.map((endpoint) => endpoint.eventType));
  const declaredBy = new Map<string, string>();
  const result: ForwardDefinition[] = [];

  for (const state of input.delegatingStates) {
    if (state.forward === undefined) continue;
    // Without a resolvable child there is nothing to validate against; defineMachine reports
    // the delegation problem itself.
    if (state.child === null) continue;
    const child = state.child;
    for (const entry of flattenForwardEntries(state, machineId, issues)) {
      const { parentType, options, path } = entry;
      const childRef = options.child_event ?? parentType;
      const childResolved = resolveEventReference(childRef);
      if (childResolved === null) {
        issues.push(
          endpointIssue(
            `State '${state.stateId}' forward entry '${parentType}' has an invalid child_event. Use an event type or event definition of '${child.id}'.`,
            machineId,
            path,
            parentType,
          ),
        );
        continue;
      }
      const childType = childResolved.type;
      const conflict = forwardConflict(
        state.stateId,
        parentType,
        endpointTypes,
        input.events,
        declaredBy,
      );
      if (conflict !== null) {
        issues.push(endpointIssue(conflict, machineId, path, parentType));
        continue;
      }
      declaredBy.set(parentType, state.stateId);
      if (!child.eventTypes.has(childType)) {
        issues.push(
          endpointIssue(
            `State '${state.stateId}' forwards '${parentType}' as undefined child event type \`${childType}\`: ` +
              `no state of child machine '${child.id}' handles it. Fix 'child_event' or handle '${childType}' in '${child.id}'.`,
            machineId,
            path,
            parentType,
          ),
        );
        continue;
      }
      if (
        options.uri !== undefined &&
        (typeof options.uri !== 'string' || !options.uri.startsWith('/'))
      ) {
        issues.push(
          new InvalidStateConfigException(
            `State '${state.path}' forward entry '${parentType}' uri must start with '/'.`,
            { machine: machineId, path, key: 'uri' },
          ),
        );
        continue;
      }
      const common = normalizeCommonOptions(options, FORWARD_KEYS, {
        machineId,
        eventType: parentType,
        path,
        behavior: input.behavior,
        issues,
        unknownKeyIssue: (keys) =>
          new InvalidStateConfigException(
            `State '${state.path}' forward entry '${parentType}' has unknown keys: ${keys.join(', ')}. Allowed: ${FORWARD_KEYS.join(', ')}.`,
            { machine: machineId, path, key: keys[0] },
          ),
      });
      if (common === null) continue;
      result.push({
        parentEventType: parentType,
        childEventType: childType,
        childEvent: child.events.get(childType) ?? childResolved.definition ?? bareEvent(childType),
        stateId: state.stateId,
        childMachineId: child.id,
        ...common,
        // The spec's default is null ("include"): the flag is honoured, unlike the original (§4.6).
        availableEvents: options.available_events ?? true,
      });
    }
  }
  return result;
}

interface ForwardEntry {
  parentType: string;
  options: ForwardOptions;
  path: string;
}

/** Expands the three forward formats (list, rename map, options map). */
function flattenForwardEntries(
  state: DelegatingStateInput,
  machineId: string,
  issues: MachineRoutesError[],
): ForwardEntry[] {
  const entries: ForwardEntry[] = [];
  (state.forward ?? []).forEach((item, index) => {
    const path = `${state.path}.forward[${index}]`;
    if (isPlainObject(item) && item.kind !== 'event') {
      for (const [parentType, value] of Object.entries(item)) {
        const itemPath = `${path}.${parentType}`;
        if (isPlainObject(value) && value.kind !== 'event') {
          entries.push({ parentType, options: value as ForwardOptions, path: itemPath });
        } else {
          // Rename: the parent receives `parentType`, the child gets `value`.
          entries.push({
            parentType,
            options: { child_event: value as EventReference },
            path: itemPath,
          });
        }
      }
      return;
    }
    const resolved = resolveEventReference(item as EventReference);
    if (resolved === null) {
      issues.push(
        endpointIssue(
          `State '${state.stateId}' has an invalid forward entry at ${path}: use an event type, an event definition or a { PARENT: CHILD | options } map.`,
          machineId,
          path,
        ),
      );
      return;
    }
    entries.push({
      parentType: resolved.type,
      options: { child_event: item as EventReference },
      path,
    });
  });
  return entries;
}

/** Rule 6/7: a forwarded type may be declared once, and nowhere else in the parent. */
function forwardConflict(
  stateId: string,
  type: string,
  endpointTypes: ReadonlySet<string>,
  parentEvents: ReadonlyMap<string, EventDefinition>,
  declaredBy: ReadonlyMap<string, string>,
): string | null {
  if (endpointTypes.has(type)) {
    return (
      `State '${stateId}' forwards '${type}' which is also declared in parent's endpoints. ` +
      `Remove '${type}' from endpoints — forward is the single source of truth for child events.`
    );
  }
  if (parentEvents.has(type)) {
    return (
      `State '${stateId}' forwards '${type}' which is also declared in parent's behavior.events. ` +
      `Remove '${type}' from behavior.events — forward auto-discovers child events.`
    );
  }
  if (declaredBy.has(type)) {
    const other = declaredBy.get(type);
    return (
      `Forward event '${type}' is declared in multiple delegating states ('${other}' and '${stateId}'). ` +
      `Use rename syntax to disambiguate (e.g., { CANCEL_PAYMENT: 'CANCEL' }).`
    );
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// options shared by endpoints and forwards

interface OptionContext {
  machineId: string;
  eventType: string;
  path: string;
  behavior: BehaviorConfig;
  issues: MachineRoutesError[];
  unknownKeyIssue(keys: string[]): MachineRoutesError;
}

type CommonOptions = Pick<
  EndpointDefinition,
  'uri' | 'method' | 'action' | 'output' | 'middleware' | 'status' | 'contention'
>;

/** Resolves uri, method, action, output, middleware and status; `null` after reporting issues. */
function normalizeCommonOptions(
  rawOptions: EndpointOptions | ForwardOptions,
  allowedKeys: readonly string[],
  ctx: OptionContext,
): CommonOptions | null {
  const { machineId, eventType: type, path, issues } = ctx;
  const before = issues.length;
  const options = rawOptions as EndpointOptions;
  if (!isPlainObject(rawOptions as unknown)) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}' must map to a URI string or an options object.`,
        machineId,
        path,
        type,
      ),
    );
    return null;
  }
  const unknown = Object.keys(options).filter((key) => !allowedKeys.includes(key));
  if (unknown.length > 0) issues.push(ctx.unknownKeyIssue(unknown));

  const uri = options.uri ?? endpointUriFor(type);
  if (typeof uri !== 'string' || !isValidEndpointUri(uri)) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}' has an invalid uri '${String(uri)}': it must start with '/' ` +
          `and use only letters, digits, '-', '_', '.', '~' and '/' (route parameters are added by the router).`,
        machineId,
        path,
        'uri',
      ),
    );
  }
  const method =
    typeof options.method === 'string' ? options.method.toUpperCase() : (options.method ?? 'POST');
  if (!HTTP_METHODS.includes(method as HttpMethod)) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}' has an invalid method '${String(options.method)}'. Use one of ${HTTP_METHODS.join(', ')}.`,
        machineId,
        path,
        'method',
      ),
    );
  }
  const middleware = options.middleware ?? [];
  if (
    !Array.isArray(middleware) ||
    !middleware.every((name) => typeof name === 'string' && name !== '')
  ) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}' has invalid middleware: use a list of names such as ['auth:api'].`,
        machineId,
        path,
        'middleware',
      ),
    );
  }
  const status = options.status ?? 200;
  if (!Number.isInteger(status) || status < 200 || status > 299) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}' has an invalid status '${String(status)}': a success status is an integer from 200 to 299.`,
        machineId,
        path,
        'status',
      ),
    );
  }
  const availableEvents: unknown = options.available_events;
  if (
    availableEvents !== undefined &&
    availableEvents !== null &&
    typeof availableEvents !== 'boolean'
  ) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}' has a non-boolean available_events.`,
        machineId,
        path,
        'available_events',
      ),
    );
  }
  const contention = contentionProblem(options.contention);
  if (contention !== null) {
    issues.push(
      endpointIssue(
        `Endpoint \`${type}\` of machine '${machineId}': 'contention' ${contention}.`,
        machineId,
        path,
        'contention',
      ),
    );
  }
  const action = resolveAction(options.action, ctx);
  const output = resolveOutputConfig(options.output, ctx);
  if (issues.length > before) return null;
  return {
    uri,
    method: method as HttpMethod,
    action,
    output,
    middleware: [...middleware],
    status,
    contention: copyContention(options.contention),
  };
}

/** A valid policy, detached from the user's object (the definition is frozen data). */
function copyContention(value: ContentionConfig | null | undefined): ContentionConfig | null {
  if (value === undefined || value === null) return null;
  return value === 'reject' ? 'reject' : { wait: value.wait };
}

function resolveAction(reference: unknown, ctx: OptionContext): EndpointActionDefinition | null {
  if (reference === undefined || reference === null) return null;
  const registry = ctx.behavior.endpointActions ?? {};
  const value = typeof reference === 'string' ? registry[reference] : reference;
  const found =
    value === undefined || typeof value === 'string'
      ? null
      : asEndpointAction(value, String(reference));
  // An unnamed action registered under an inline key is known by that key in plans and logs.
  const action =
    found !== null && typeof reference === 'string' && found.name === 'anonymous'
      ? { ...found, name: reference }
      : found;
  if (action === null) {
    const label = typeof reference === 'string' ? reference : describe(reference);
    ctx.issues.push(
      endpointIssue(
        `Endpoint action \`${label}\` of endpoint \`${ctx.eventType}\` (machine '${ctx.machineId}') must be created with ` +
          `defineEndpointAction(), be an object of before/after/onException hooks, or be a key of behavior 'endpointActions'.`,
        ctx.machineId,
        ctx.path,
        'action',
      ),
    );
  }
  return action;
}

/**
 * Normalizes an endpoint `output`: a list of context keys (filter), an inline key of
 * behavior `outputs`, a function or class, or a `[behavior, params]` tuple.
 */
function resolveOutputConfig(
  config: OutputConfig | null | undefined,
  ctx: OptionContext,
): OutputDefinition | null {
  if (config === undefined || config === null) return null;
  if (Array.isArray(config)) {
    const [first, second] = config as readonly unknown[];
    if (config.length === 2 && isPlainObject(second)) {
      const behavior = resolveOutputBehavior(first, ctx);
      return behavior && { ...behavior, params: { ...second } };
    }
    if (config.every((key) => typeof key === 'string'))
      return { kind: 'keys', keys: [...(config as string[])] };
    ctx.issues.push(
      endpointIssue(
        `Endpoint \`${ctx.eventType}\` of machine '${ctx.machineId}' has an invalid output: use a list of context keys or a [behavior, { ...params }] tuple.`,
        ctx.machineId,
        ctx.path,
        'output',
      ),
    );
    return null;
  }
  return resolveOutputBehavior(config, ctx);
}

function resolveOutputBehavior(
  reference: unknown,
  ctx: OptionContext,
): Extract<OutputDefinition, { kind: 'behavior' }> | null {
  const outputs = (ctx.behavior.outputs ?? {}) as Record<string, unknown>;
  const value = typeof reference === 'string' ? outputs[reference] : reference;
  const name =
    typeof reference === 'string'
      ? reference
      : ((reference as { name?: string } | null)?.name ?? '');
  const run = asOutputFunction(value);
  if (run === null) {
    ctx.issues.push(
      endpointIssue(
        `Endpoint references undefined output behavior \`${typeof reference === 'string' ? reference : describe(reference)}\` ` +
          `(endpoint \`${ctx.eventType}\` of machine '${ctx.machineId}'). Ensure it is listed in the behavior 'outputs' or pass the function itself.`,
        ctx.machineId,
        ctx.path,
        'output',
      ),
    );
    return null;
  }
  return { kind: 'behavior', name: name || 'anonymous', run, params: {} };
}

function asOutputFunction(value: unknown): OutputFunction | null {
  if (typeof value !== 'function') return null;
  const proto: unknown = value.prototype;
  if (isPlainObject(proto) && typeof proto.run === 'function') {
    // A behavior class: instantiated once per definition.
    const instance = new (value as new () => { run: OutputFunction })();
    return (args) => instance.run(args);
  }
  return value as OutputFunction;
}

// ---------------------------------------------------------------------------------------------
// helpers

/**
 * The event type of a reference (type string, event definition or event class), or `null`
 * when it is none of those. Shared with the router's list options (`only`, `machineIdFor`...).
 */
export function eventTypeOfReference(ref: unknown): string | null {
  return resolveEventReference(ref)?.type ?? null;
}

/** The event type of a reference and, for definitions and classes, its definition. */
function resolveEventReference(
  ref: unknown,
): { type: string; definition: EventDefinition | null } | null {
  if (ref === '' || !isEventReference(ref)) return null;
  try {
    return {
      type: eventTypeOf(ref),
      definition: typeof ref === 'string' ? null : toEventDefinition(ref),
    };
  } catch {
    // A class whose derived type is not SCREAMING_SNAKE: reported as an invalid entry.
    return null;
  }
}

function bareEvent(type: string): EventDefinition {
  return { kind: 'event', type, payload: undefined };
}

function endpointIssue(
  message: string,
  machine: string,
  path: string,
  key?: string,
): InvalidEndpointDefinitionException {
  return new InvalidEndpointDefinitionException(message, {
    machine,
    path,
    ...(key === undefined ? {} : { key }),
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (typeof value === 'function') return value.name || 'anonymous function';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
