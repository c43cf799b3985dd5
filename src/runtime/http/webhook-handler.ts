/**
 * The route of an inbound webhook (docs/callbacks.md): the provider's HMAC-SHA256 signature is
 * checked over the raw body bytes (401 with `reason` when missing, wrong or its timestamp out
 * of tolerance; nothing is read further), then the body is mapped to an instance (machine id or
 * create-or-send key), an event type and its payload, and sent through the event handler of
 * that event. A delivery id header is the handler's Idempotency-Key: a redelivery answers the
 * first delivery's stored response and applies nothing again (idempotency.ts); one arriving
 * while the first still runs waits for its answer (up to 10 s more than the route's lock wait).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MachineDefinitionBase } from '../definition/types.js';
import { WebhookSignatureException } from '../errors.js';
import { callbackSecrets, requireSecrets } from './callback-token.js';
import { withBody } from './callback-handler.js';
import { createEventHandler } from './event-handler.js';
import type { HttpServices } from './http-services.js';
import { endpointFields, endpointHandler } from './plan-route-fields.js';
import { errorToResponse } from './responses.js';
import { consoleLogger } from './http-logger.js';
import { refusal, validationResponse } from './response-bodies.js';
import type { EndpointRequest, PlannedRoute, RouteBinding, RouteHandler } from './types.js';
import type { RouteWebhook } from './webhook-types.js';

/** How long a delivery id is remembered: providers redeliver for up to three days (Stripe). */
const DELIVERY_TTL_SECONDS = 3 * 86_400;
/**
 * How long a redelivery waits for the same delivery still running to answer, then replays that
 * answer: GitHub gives a delivery 10 s (Stripe and Slack more). A first delivery waiting for its
 * instance's lock (`contention: { wait }`) may take that much longer.
 */
const REDELIVERY_WAIT_MS = 10_000;

/** Builds the handler of a webhook route (`route.webhook`). Throws when its secret is unset. */
export function createWebhookHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  services: HttpServices<D>,
): RouteHandler {
  const webhook = route.webhook as RouteWebhook;
  const secrets = requireSecrets(
    webhook.secretEnv,
    route.name,
    callbackSecrets({ secret: process.env[webhook.secretEnv] ?? '' }),
  );
  const binding: RouteBinding =
    'key' in webhook.instance
      ? { kind: 'key', field: webhook.instance.field }
      : { kind: 'machineId', param: 'machineId' };
  // One event handler per event the webhook sends, under the webhook route's name: a delivery
  // id is one key whatever event it maps to.
  const handlers = new Map<string | null, RouteHandler>();
  for (const { match, eventType, endpointIndex } of webhook.events) {
    const endpoint = definition.endpoints[endpointIndex]!;
    const { webhook: _webhook, ...rest } = route;
    const inner: PlannedRoute = {
      ...rest,
      ...endpointFields(endpoint, []),
      // The webhook's documented answer (one envelope whatever the event), not the endpoint's.
      output: route.output,
      status: route.status,
      availableEvents: route.availableEvents,
      method: 'POST',
      handler: endpointHandler(binding),
      eventType,
      endpointIndex,
      binding,
      ...(webhook.deliveryIdHeader === null
        ? {}
        : {
            idempotency: {
              ttl: DELIVERY_TTL_SECONDS,
              inFlightWaitMs: REDELIVERY_WAIT_MS + (route.contention?.waitMs ?? 0),
            },
          }),
    };
    handlers.set(match, createEventHandler(definition, inner, [], services));
  }

  return async (request) => {
    const refused = verifySignature(webhook, request, secrets, Date.now());
    if (refused !== null) {
      return refusal(
        new WebhookSignatureException(`Route ${route.name}: ${refused.message}`, {
          machine: definition.id,
          route: route.name,
          reason: refused.reason,
        }),
        { reason: refused.reason },
      );
    }
    let body: unknown;
    try {
      body = request.body;
    } catch (error) {
      return errorToResponse(
        error,
        services.logger ?? request.log ?? consoleLogger,
        route.name,
        request,
      );
    }
    const type = webhook.eventField === null ? null : valueAt(body, webhook.eventField);
    const target = handlers.get(
      webhook.eventField === null ? null : typeof type === 'string' ? type : '',
    );
    if (target === undefined) {
      const known = [...handlers.keys()].join(', ');
      return validationResponse({
        [webhook.eventField as string]: [
          `The webhook '${webhook.name}' maps no event to '${String(type)}'. Mapped: ${known}.`,
        ],
      });
    }
    const path = 'key' in webhook.instance ? webhook.instance.key : webhook.instance.machineId;
    const instance = valueAt(body, path);
    if ((typeof instance !== 'string' && typeof instance !== 'number') || instance === '') {
      return validationResponse({
        [path]: [
          `The webhook '${webhook.name}' reads the instance from '${path}': a string or number is required there.`,
        ],
      });
    }
    let payload = webhook.payload === null ? body : valueAt(body, webhook.payload);
    if (
      'key' in webhook.instance &&
      typeof payload === 'object' &&
      payload !== null &&
      !Array.isArray(payload)
    )
      payload = { ...payload, [webhook.instance.field]: instance };
    const delivery =
      webhook.deliveryIdHeader === null ? undefined : header(request, webhook.deliveryIdHeader);
    return target(
      withBody(
        request,
        { payload },
        binding.kind === 'machineId' ? { machineId: String(instance) } : {},
        { 'idempotency-key': delivery },
      ),
    );
  };
}

function header(request: EndpointRequest, name: string): string | undefined {
  return request.header === undefined ? request.headers[name] : request.header(name);
}

/** The value at a dotted path of a JSON body, `undefined` when absent. */
function valueAt(body: unknown, path: string): unknown {
  let value = body;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part))
      return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Why a delivery's signature is refused, or `null` when it holds. */
function verifySignature(
  webhook: RouteWebhook,
  request: EndpointRequest,
  secrets: readonly string[],
  nowMs: number,
): { reason: 'missing' | 'mismatch' | 'timestamp'; message: string } | null {
  const value = header(request, webhook.header);
  if (value === undefined || value === '')
    return {
      reason: 'missing',
      message: `the ${webhook.header} header is missing: the delivery is not signed.`,
    };
  const raw = request.rawBody?.() ?? Buffer.alloc(0);
  let timestamp: string | null = null;
  let given: Buffer[];
  let encoding: 'hex' | 'base64' = webhook.encoding;
  if (webhook.scheme === 'stripe') {
    const pairs = value.split(',').map((pair) => pair.trim().split('='));
    timestamp = pairs.find(([name]) => name === 't')?.[1] ?? null;
    given = pairs
      .filter(([name]) => name === 'v1')
      .map(([, digest]) => Buffer.from(digest ?? '', 'hex'));
    encoding = 'hex';
    if (timestamp === null || given.length === 0)
      return {
        reason: 'mismatch',
        message: `the ${webhook.header} header must be 't=<unix seconds>,v1=<hex signature>'.`,
      };
  } else {
    if (!value.startsWith(webhook.prefix))
      return {
        reason: 'mismatch',
        message: `the ${webhook.header} header must start with '${webhook.prefix}'.`,
      };
    given = [Buffer.from(value.slice(webhook.prefix.length), encoding)];
    if (webhook.timestampHeader !== null) {
      timestamp = header(request, webhook.timestampHeader) ?? null;
      if (timestamp === null)
        return {
          reason: 'missing',
          message: `the ${webhook.timestampHeader} header is missing: the delivery is not timestamped.`,
        };
    }
  }
  const signed = timestamp === null ? raw : Buffer.concat([Buffer.from(`${timestamp}.`), raw]);
  const genuine = secrets.some((secret) => {
    const expected = createHmac('sha256', secret).update(signed).digest();
    return given.some(
      (digest) => digest.length === expected.length && timingSafeEqual(digest, expected),
    );
  });
  if (!genuine)
    return {
      reason: 'mismatch',
      message: `the ${webhook.header} signature does not match the body under the secret of ${webhook.secretEnv}.`,
    };
  if (timestamp !== null) {
    const seconds = Number(timestamp);
    if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowMs / 1000 - seconds) > webhook.tolerance)
      return {
        reason: 'timestamp',
        message: `the signed timestamp ${timestamp} is more than ${webhook.tolerance} s away from now: a delivery this old (or replayed) is refused.`,
      };
  }
  return null;
}
