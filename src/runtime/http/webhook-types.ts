/**
 * Inbound webhooks of a registration: the `webhooks` option, how a provider's signature is
 * carried, and a webhook route's settings as planned.
 */

/**
 * One inbound webhook of a registration (the `webhooks` option). Paths into the body are dotted
 * (`data.object.id`).
 *
 * @example
 * stripe: {
 *   secretEnv: 'STRIPE_WEBHOOK_SECRET',
 *   signature: { header: 'stripe-signature', scheme: 'stripe' },
 *   deliveryIdHeader: 'x-delivery-id',
 *   instance: { key: 'data.object.metadata.orderNumber' },
 *   event: { field: 'type', map: { 'payment_intent.succeeded': 'PAID' } },
 *   payload: 'data.object',
 * }
 */
export interface WebhookOptions {
  /**
   * The environment variable holding the provider's signing secret (a comma-separated list:
   * any one verifies, for rotation). The app refuses to start without it.
   */
  secretEnv: string;
  signature: WebhookSignature;
  /** Seconds a signed timestamp may be away from now (default 300); older ones are refused. */
  tolerance?: number;
  /**
   * Header of the provider's delivery id: a redelivery with the same id answers the first
   * delivery's response and applies nothing again. Without it every delivery is applied.
   */
  deliveryIdHeader?: string;
  /**
   * The instance: its machine id at a body path, or (with `createOrSend`) the business key at a
   * body path, the instance created when no instance has that key.
   */
  instance: { machineId: string } | { key: string };
  /** The event sent: one type, or the body field naming the provider's type mapped to events. */
  event: string | { field: string; map: Readonly<Record<string, string>> };
  /** Body path of the event's payload; default the whole body. */
  payload?: string;
}

/** How a webhook's signature is carried (HMAC-SHA256). */
export interface WebhookSignature {
  /** Header carrying the signature (`x-hub-signature-256`, `stripe-signature`). */
  header: string;
  /**
   * `'hmac'` (default): the header is the HMAC of the body (or of `{timestamp}.{body}` with
   * `timestampHeader`). `'stripe'`: `t=<unix seconds>,v1=<hex>[,v1=...]` over `{t}.{body}`.
   */
  scheme?: 'hmac' | 'stripe';
  /** `'hmac'`: `'hex'` (default) or `'base64'`. */
  encoding?: 'hex' | 'base64';
  /** `'hmac'`: text before the digest (`'sha256='`). */
  prefix?: string;
  /** `'hmac'`: header of the unix-seconds timestamp signed with the body. */
  timestampHeader?: string;
}

/** A webhook route's settings, as planned (the {@link WebhookOptions} checked). */
export interface RouteWebhook {
  name: string;
  secretEnv: string;
  scheme: 'hmac' | 'stripe';
  header: string;
  encoding: 'hex' | 'base64';
  prefix: string;
  timestampHeader: string | null;
  /** Seconds. */
  tolerance: number;
  deliveryIdHeader: string | null;
  instance: { machineId: string } | { key: string; field: string };
  /** The events the webhook sends: `match` is the provider's type (`null`: the only one). */
  events: { match: string | null; eventType: string; endpointIndex: number }[];
  eventField: string | null;
  payload: string | null;
}
