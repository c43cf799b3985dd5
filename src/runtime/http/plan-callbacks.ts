/**
 * The `callbacks` and `webhooks` registration options, checked and planned as routes
 * (docs/callbacks.md): third parties call these, so they carry their own authentication (a
 * signed token, a provider's signature) and the generated client leaves them out. Pure, like
 * the rest of planning.
 */
import { eventTypeOfReference } from '../definition/endpoints.js';
import type { EndpointDefinition } from '../definition/types.js';
import { InvalidRouterConfigException, type MachineRoutesError } from '../errors.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';
import { endpointFields } from './plan-route-fields.js';
import type { PlannedRoute, RegistrationOptions } from './types.js';
import type { RouteWebhook, WebhookOptions, WebhookSignature } from './webhook-types.js';
import type { PlannedCreateOrSend } from './plan-create-or-send.js';

true satisfies ExactKeys<WebhookOptions, typeof KNOWN_KEYS.webhook>;
true satisfies ExactKeys<WebhookSignature, typeof KNOWN_KEYS.webhookSignature>;

/** Default webhook timestamp tolerance, in seconds (Stripe's). */
export const DEFAULT_WEBHOOK_TOLERANCE = 300;

/** A planned route less its answers (planRoutes adds them). */
export type CallbackRoute = Omit<
  PlannedRoute,
  'payloadSource' | 'authGuards' | 'errorStatuses' | 'actionStatuses'
>;

/** What planning the options reads of the registration. */
export interface CallbackContext {
  machineId: string;
  registration: string;
  prefix: string;
  middleware: readonly string[];
  endpoints: readonly EndpointDefinition[];
  /** Event types of the endpoints the registration keeps (`only` / `except`). */
  kept: readonly string[];
  createOrSend: PlannedCreateOrSend | null;
}

/**
 * Whether third parties call the route (a callback URL, a webhook), not the frontend: the
 * generated client, its TanStack bindings and the OPTIONS surface leave such routes out.
 */
export function isThirdPartyRoute(route: Pick<PlannedRoute, 'handler'>): boolean {
  return route.handler === 'callback' || route.handler === 'webhook';
}

/** The route segment of an event in a callback path: `APPROVED` -> `approved`. */
export function callbackSegment(eventType: string): string {
  return eventType.toLowerCase();
}

/**
 * The callback routes of `callbacks` (one per event, bound by machine id, the token a path
 * parameter) and the webhook routes of `webhooks`; problems are pushed on `issues`.
 */
export function planCallbackRoutes(
  options: Pick<RegistrationOptions, 'callbacks' | 'webhooks'>,
  issues: MachineRoutesError[],
  context: CallbackContext,
): CallbackRoute[] {
  const where = `(machine '${context.machineId}', registration '${context.registration}')`;
  const fail = (message: string, key: string): void => {
    issues.push(
      new InvalidRouterConfigException(`MachineRouter: ${message} ${where}`, {
        machine: context.machineId,
        registration: context.registration,
        key,
      }),
    );
  };
  const base = { registration: context.registration, machineId: context.machineId };
  const routes: CallbackRoute[] = [];
  const endpointOf = (type: string, key: string): number | null => {
    const index = context.endpoints.findIndex((endpoint) => endpoint.eventType === type);
    if (index === -1 || !context.kept.includes(type)) {
      fail(
        `'${key}' names '${type}', which is not a registered endpoint of the machine. Available: ${context.kept.join(', ') || '(none)'}.`,
        key,
      );
      return null;
    }
    return index;
  };

  const callbacks = options.callbacks;
  if (callbacks !== undefined && callbacks !== null) {
    if (!Array.isArray(callbacks)) {
      fail(`'callbacks' must be a list of event types, e.g. callbacks: ['APPROVED'].`, 'callbacks');
    } else {
      for (const ref of callbacks as readonly unknown[]) {
        const type = eventTypeOfReference(ref);
        if (type === null) {
          fail(
            `'callbacks' has an entry that is not an event type or event definition.`,
            'callbacks',
          );
          continue;
        }
        const index = endpointOf(type, 'callbacks');
        if (index === null) continue;
        const endpoint = context.endpoints[index]!;
        routes.push({
          ...base,
          ...endpointFields(endpoint, context.middleware),
          // A third party POSTs the payload, whatever the endpoint's own method; its route
          // middleware (auth) is the frontend's, not the third party's: the token is the auth.
          method: 'POST',
          middleware: [],
          name: `${context.registration}.callback.${callbackSegment(type)}`,
          path: `${context.prefix}/{machineId}/callbacks/${callbackSegment(type)}/{token}`,
          handler: 'callback',
          read: null,
          childEventType: null,
          childMachineId: null,
          endpointIndex: index,
          binding: { kind: 'machineId', param: 'machineId' },
        });
      }
    }
  }

  const webhooks = options.webhooks;
  if (webhooks === undefined || webhooks === null) return routes;
  if (typeof webhooks !== 'object' || Array.isArray(webhooks)) {
    fail(
      `'webhooks' must be an object of webhooks by name, e.g. webhooks: { stripe: {...} }.`,
      'webhooks',
    );
    return routes;
  }
  for (const [name, value] of Object.entries(webhooks)) {
    const planned = planWebhook(name, value, context, (message, key) =>
      fail(`'webhooks.${name}' ${message}`, key),
    );
    if (planned === null) continue;
    routes.push({
      ...base,
      name: `${context.registration}.webhook.${name}`,
      method: 'POST',
      path: `${context.prefix}/webhooks/${name}`,
      handler: 'webhook',
      eventType: null,
      read: null,
      childEventType: null,
      childMachineId: null,
      endpointIndex: null,
      binding:
        'key' in planned.instance
          ? { kind: 'key', field: planned.instance.field }
          : { kind: 'none' },
      middleware: [],
      // Whatever event the body maps to, the answer is the default envelope of the machine.
      output: { kind: 'default' },
      action: null,
      status: 200,
      availableEvents: true,
      webhook: planned,
    });
  }
  return routes;
}

const PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/;
const HEADER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

function planWebhook(
  name: string,
  value: WebhookOptions,
  context: CallbackContext,
  fail: (message: string, key: string) => void,
): RouteWebhook | null {
  const key = `webhooks.${name}`;
  if (!/^[A-Za-z0-9_-]+$/.test(name)) {
    fail(
      `is not a valid name: a webhook name is a path segment of letters, digits, '_' and '-'.`,
      key,
    );
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(`must be an object { secretEnv, signature, instance, event }.`, key);
    return null;
  }
  for (const unknown of findUnknownKeys(value, KNOWN_KEYS.webhook))
    fail(`has ${describeUnknownKey(unknown)}. Known keys: ${KNOWN_KEYS.webhook.join(', ')}.`, key);
  let ok = true;
  const problem = (message: string): void => {
    ok = false;
    fail(message, key);
  };
  if (typeof value.secretEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(value.secretEnv))
    problem(
      `needs 'secretEnv', the environment variable of the signing secret, e.g. 'STRIPE_WEBHOOK_SECRET'.`,
    );
  const signature = value.signature as WebhookSignature | undefined;
  if (
    typeof signature !== 'object' ||
    signature === null ||
    typeof signature.header !== 'string' ||
    !HEADER.test(signature.header)
  ) {
    problem(`needs 'signature: { header }', the header carrying the signature.`);
    return null;
  }
  for (const unknown of findUnknownKeys(signature, KNOWN_KEYS.webhookSignature))
    problem(
      `'signature' has ${describeUnknownKey(unknown)}. Known keys: ${KNOWN_KEYS.webhookSignature.join(', ')}.`,
    );
  const scheme = signature.scheme ?? 'hmac';
  if (scheme !== 'hmac' && scheme !== 'stripe')
    problem(`'signature.scheme' must be 'hmac' or 'stripe'.`);
  const encoding = signature.encoding ?? 'hex';
  if (encoding !== 'hex' && encoding !== 'base64')
    problem(`'signature.encoding' must be 'hex' or 'base64'.`);
  if (signature.prefix !== undefined && typeof signature.prefix !== 'string')
    problem(`'signature.prefix' must be text, e.g. 'sha256='.`);
  const timestampHeader = signature.timestampHeader ?? null;
  if (
    timestampHeader !== null &&
    (typeof timestampHeader !== 'string' || !HEADER.test(timestampHeader))
  )
    problem(`'signature.timestampHeader' must be a header name.`);
  const tolerance = value.tolerance ?? DEFAULT_WEBHOOK_TOLERANCE;
  if (typeof tolerance !== 'number' || !Number.isInteger(tolerance) || tolerance <= 0)
    problem(
      `'tolerance' must be a positive whole number of seconds (default ${DEFAULT_WEBHOOK_TOLERANCE}).`,
    );
  const delivery = value.deliveryIdHeader ?? null;
  if (delivery !== null && (typeof delivery !== 'string' || !HEADER.test(delivery)))
    problem(`'deliveryIdHeader' must be a header name, e.g. 'x-github-delivery'.`);
  if (
    value.payload !== undefined &&
    (typeof value.payload !== 'string' || !PATH.test(value.payload))
  )
    problem(`'payload' must be a dotted body path, e.g. 'data.object'.`);

  const instance = value.instance as Record<string, unknown> | undefined;
  let plannedInstance: RouteWebhook['instance'] | null = null;
  if (
    typeof instance === 'object' &&
    instance !== null &&
    typeof instance['machineId'] === 'string' &&
    PATH.test(instance['machineId'])
  ) {
    plannedInstance = { machineId: instance['machineId'] };
  } else if (
    typeof instance === 'object' &&
    instance !== null &&
    typeof instance['key'] === 'string' &&
    PATH.test(instance['key'])
  ) {
    if (context.createOrSend === null)
      problem(
        `'instance: { key }' needs the registration's 'createOrSend' (the key's field and its events).`,
      );
    else plannedInstance = { key: instance['key'], field: context.createOrSend.key };
  } else {
    problem(`needs 'instance', { machineId: '<body path>' } or { key: '<body path>' }.`);
  }

  const events: RouteWebhook['events'] = [];
  let eventField: string | null = null;
  const addEvent = (match: string | null, type: unknown): void => {
    if (typeof type !== 'string') return problem(`maps to an event type that is not text.`);
    const index = context.endpoints.findIndex((endpoint) => endpoint.eventType === type);
    if (index === -1 || !context.kept.includes(type))
      return problem(
        `names '${type}', which is not a registered endpoint of the machine. Available: ${context.kept.join(', ') || '(none)'}.`,
      );
    if (
      plannedInstance !== null &&
      'key' in plannedInstance &&
      !context.createOrSend?.events.includes(type)
    )
      return problem(`sends '${type}' by key: list it in 'createOrSend.events' too.`);
    events.push({ match, eventType: type, endpointIndex: index });
  };
  const event = value.event as unknown;
  if (typeof event === 'string') addEvent(null, event);
  else if (
    typeof event === 'object' &&
    event !== null &&
    typeof (event as { field?: unknown }).field === 'string' &&
    PATH.test((event as { field: string }).field) &&
    typeof (event as { map?: unknown }).map === 'object' &&
    (event as { map?: unknown }).map !== null
  ) {
    eventField = (event as { field: string }).field;
    for (const [match, type] of Object.entries((event as { map: Record<string, unknown> }).map))
      addEvent(match, type);
    if (events.length === 0 && ok)
      problem(`'event.map' is empty: map the provider's types to events.`);
  } else {
    problem(
      `needs 'event', an event type or { field: '<body path>', map: { '<provider type>': '<EVENT>' } }.`,
    );
  }
  if (!ok || plannedInstance === null) return null;
  return {
    name,
    secretEnv: value.secretEnv,
    scheme,
    header: signature.header.toLowerCase(),
    encoding,
    prefix: signature.prefix ?? '',
    timestampHeader: timestampHeader === null ? null : timestampHeader.toLowerCase(),
    tolerance,
    deliveryIdHeader: delivery === null ? null : delivery.toLowerCase(),
    instance: plannedInstance,
    events,
    eventField,
    payload: value.payload ?? null,
  };
}
