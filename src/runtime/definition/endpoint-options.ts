/**
 * The options endpoints and forwards share (uri, method, action, output, middleware, status,
 * contention), resolved to their defaults; pure, every problem reported as an issue.
 */
import type { MachineRoutesError } from '../errors.js';
import { contentionProblem } from './contention.js';
import { asEndpointAction } from './endpoint-action.js';
import { endpointUriFor, isValidEndpointUri } from './uri.js';
import { describeValue, endpointIssue, isPlainObject } from './endpoint-references.js';
import type { EndpointDefinition, HttpMethod, OutputConfig, OutputDefinition } from './types.js';
import type { BehaviorConfig, OutputFunction } from './behavior-types.js';
import type {
  ContentionConfig,
  EndpointActionDefinition,
  EndpointOptions,
  ForwardOptions,
} from './endpoint-config.js';

const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Option keys of an endpoint entry. */
export const ENDPOINT_KEYS = [
  'uri',
  'method',
  'action',
  'output',
  'middleware',
  'status',
  'available_events',
  'contention',
];

interface OptionContext {
  machineId: string;
  eventType: string;
  path: string;
  behavior: BehaviorConfig;
  issues: MachineRoutesError[];
  unknownKeyIssue(keys: string[]): MachineRoutesError;
}

export type CommonOptions = Pick<
  EndpointDefinition,
  'uri' | 'method' | 'action' | 'output' | 'middleware' | 'status' | 'contention'
>;

/** Resolves uri, method, action, output, middleware and status; `null` after reporting issues. */
export function normalizeCommonOptions(
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
    const label = typeof reference === 'string' ? reference : describeValue(reference);
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
        `Endpoint references undefined output behavior \`${typeof reference === 'string' ? reference : describeValue(reference)}\` ` +
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
