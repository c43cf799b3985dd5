/**
 * Endpoint actions: lifecycle hooks around one endpoint (`before`, `after`, `onException`),
 * the TypeScript form of the spec's MachineEndpointAction subclasses.
 */
import { InvalidEndpointDefinitionException } from '../errors.js';
import type { EventObject } from './types.js';
import type {
  EndpointActionArgs,
  EndpointActionDefinition,
  EndpointResponse,
} from './endpoint-config.js';

/**
 * What users pass to {@link defineEndpointAction}, or write inline under
 * `behavior.endpointActions` (where `TEvent` is the machine's events). Every hook is optional.
 */
export interface EndpointActionConfig<TEvent = EventObject> {
  /** Shown in plans and logs; defaults to the key it is registered under, else `'anonymous'`. */
  name?: string;
  /**
   * The error statuses the action answers itself, with what each means, e.g.
   * `{ 403: 'The tenant header is missing.' }`: `abort(403)` in `before`, or a 403 returned by
   * `onException`. The OpenAPI document and the client list exactly these besides the runtime's
   * own statuses, so declare every status the action can answer (400-599).
   */
  statuses?: Readonly<Record<number, string>>;
  /** Runs before the event is sent, with the pre-transition state; may call `abort`. */
  before?(args: EndpointActionArgs<TEvent>): void | Promise<void>;
  /** Runs after a successful send, with the post-transition state. */
  after?(args: EndpointActionArgs<TEvent>): void | Promise<void>;
  /**
   * Runs when sending throws (not on lock contention nor on validation failures). Return a
   * response to answer with it, or `null`/`undefined` to re-throw.
   */
  onException?(
    error: unknown,
    args: EndpointActionArgs<TEvent>,
  ): EndpointResponse | null | undefined | Promise<EndpointResponse | null | undefined>;
}

/**
 * Defines an endpoint action.
 *
 * @example
 * export const AuditAction = defineEndpointAction({
 *   name: 'audit',
 *   before: ({ headers, abort }) => { if (!headers['x-tenant']) abort(403, 'Tenant required.'); },
 * });
 */
export function defineEndpointAction(config: EndpointActionConfig): EndpointActionDefinition {
  return toEndpointAction(config, config.name ?? 'anonymous');
}

const HOOKS = ['before', 'after', 'onException'] as const;
/** Keys of an action object besides its hooks. */
const OPTIONS = ['name', 'statuses'];

/**
 * Accepts what may stand where an endpoint action is expected: a definition, a plain object
 * of hooks (an inline `behavior.endpointActions` entry), or a class whose instances have the
 * hooks. Returns `null` for anything else so the caller can report it.
 */
export function asEndpointAction(value: unknown, name: string): EndpointActionDefinition | null {
  if (isRecord(value) && value.kind === 'endpointAction')
    return value as unknown as EndpointActionDefinition;
  if (typeof value === 'function') {
    const proto: unknown = value.prototype;
    if (!isRecord(proto) || !HOOKS.some((hook) => typeof proto[hook] === 'function')) return null;
    // A class: one instance per definition, like behavior classes.
    const instance = new (value as new () => Record<string, unknown>)();
    return toEndpointAction(
      instance as EndpointActionConfig,
      (value as { name: string }).name || name,
    );
  }
  if (!isRecord(value)) return null;
  const keys = Object.keys(value).filter((key) => !OPTIONS.includes(key));
  if (keys.length === 0 || !keys.every((key) => (HOOKS as readonly string[]).includes(key)))
    return null;
  if (!keys.every((key) => typeof value[key] === 'function')) return null;
  return toEndpointAction(
    value as EndpointActionConfig,
    typeof value.name === 'string' ? value.name : name,
  );
}

function toEndpointAction(config: EndpointActionConfig, name: string): EndpointActionDefinition {
  // Bound so that class-based actions keep `this`; frozen because definitions are shared.
  return Object.freeze({
    kind: 'endpointAction' as const,
    name,
    statuses: Object.freeze(declaredStatuses(config.statuses, name)),
    ...(config.before ? { before: config.before.bind(config) } : {}),
    ...(config.after ? { after: config.after.bind(config) } : {}),
    ...(config.onException ? { onException: config.onException.bind(config) } : {}),
  });
}

/** The declared statuses, checked: integer HTTP error statuses with a description. */
function declaredStatuses(statuses: unknown, name: string): Record<number, string> {
  if (statuses === undefined) return {};
  const fail = (detail: string): never => {
    throw new InvalidEndpointDefinitionException(
      `Endpoint action '${name}': ${detail} Declare them as { 403: 'What it means.' }.`,
      { action: name, key: 'statuses' },
    );
  };
  if (!isRecord(statuses) || Array.isArray(statuses)) return fail(`'statuses' must be an object.`);
  const declared: Record<number, string> = {};
  for (const [key, description] of Object.entries(statuses)) {
    const status = Number(key);
    if (!Number.isInteger(status) || status < 400 || status > 599)
      fail(`'statuses' key '${key}' is not an HTTP error status (400-599).`);
    if (typeof description !== 'string' || description === '')
      fail(`'statuses' entry ${key} needs a description.`);
    declared[status] = description as string;
  }
  return declared;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
