/**
 * Callback URLs and inbound webhooks in the OpenAPI document (docs/callbacks.md): a callback
 * route is an operation under `paths` whose body is the event's payload as it is and whose
 * token refusals (403, 409, 410) have the typed `CallbackRefusedResponse`; each webhook is an
 * entry of the top-level `webhooks` (OpenAPI 3.1): the provider's body, its signature headers,
 * and every answer, 401 with `WebhookRefusedResponse`.
 */
import type { JsonSchema, ManifestRoute } from '../manifest.js';
import type { RouteWebhook } from '../../runtime/http/webhook-types.js';
import { machineNoun } from './openapi-text.js';
import {
  objectSchema,
  payloadSchemaName,
  ref,
  responseSchemaName,
  ERROR_SCHEMA,
} from './openapi-names.js';
import { errorResponses, SHARED_RESPONSES } from './openapi-responses.js';
import { PRECONDITION_FAILED_SCHEMA } from './openapi-http-surface.js';

/** Component of a refused callback token's body. */
export const CALLBACK_REFUSED_SCHEMA = 'CallbackRefusedResponse';
/** Component of a refused webhook signature's body. */
export const WEBHOOK_REFUSED_SCHEMA = 'WebhookRefusedResponse';

export const CALLBACK_REFUSED_BODY: JsonSchema = objectSchema(
  {
    message: { type: 'string' },
    code: {
      type: 'string',
      enum: ['MR_CALLBACK_INVALID', 'MR_CALLBACK_EXPIRED', 'MR_CALLBACK_USED'],
    },
  },
  ['message', 'code'],
);

export const WEBHOOK_REFUSED_BODY: JsonSchema = objectSchema(
  {
    message: { type: 'string' },
    code: { type: 'string', const: 'MR_WEBHOOK_SIGNATURE' },
    reason: { type: 'string', enum: ['missing', 'mismatch', 'timestamp'] },
  },
  ['message', 'code', 'reason'],
);

const json = (schema: JsonSchema, example?: JsonSchema): JsonSchema => ({
  'application/json': example === undefined ? { schema } : { schema, example },
});

/** The callback route's answer for `status` when it is the token's, else `undefined`. */
export function callbackResponse(route: ManifestRoute, status: number): JsonSchema | undefined {
  if (route.handler !== 'callback') return undefined;
  const code = { 403: 'MR_CALLBACK_INVALID', 409: 'MR_CALLBACK_USED', 410: 'MR_CALLBACK_EXPIRED' }[
    status
  ];
  if (code === undefined) return undefined;
  const description =
    status === 403
      ? 'The token is not signed for this instance and event (changed, or minted for another instance or event). Nothing was written.'
      : status === 410
        ? 'The callback URL expired. Nothing was written.'
        : `The callback URL was already used (its event sent), or another request is using it now (code MR_CALLBACK_USED); or ${SHARED_RESPONSES[409].description[0]!.toLowerCase()}${SHARED_RESPONSES[409].description.slice(1)} Nothing was written.`;
  const schema =
    status === 409
      ? { anyOf: [ref(CALLBACK_REFUSED_SCHEMA), ref(ERROR_SCHEMA)] }
      : ref(CALLBACK_REFUSED_SCHEMA);
  return { description, content: json(schema, { message: description, code }) };
}

/** The request body of a callback route: the event's payload, as the third party sends it. */
export function callbackRequestBody(route: ManifestRoute): JsonSchema {
  return {
    required: route.payloadSchema !== null,
    description: `The payload of ${route.eventType} itself (not wrapped in \`{ payload }\`), validated by the event's schema.`,
    content: json(
      route.payloadSchema === null ? { type: 'object' } : ref(payloadSchemaName(route)),
    ),
  };
}

/** The token path parameter's description. */
export const CALLBACK_TOKEN_DESCRIPTION =
  'The signed token of the callback URL (`{expires}.{nonce}.{signature}`), as `mintCallbackUrl` minted it.';

/** The summary and description head of a callback operation. */
export function callbackText(route: ManifestRoute): { summary: string; lead: string } {
  const noun = machineNoun(route.machineId);
  return {
    summary: `Callback URL: send ${route.eventType} to the ${noun} it was minted for`,
    lead: `Called by a third party, not the frontend (the generated client leaves it out): the URL an action minted with \`mintCallbackUrl\` sends ${route.eventType} to its ${noun} once, before it expires. The token is the credential; the body is the event's payload.`,
  };
}

/** The `webhooks` entry of a webhook route: `{ post: operation }`. */
export function webhookItem(route: ManifestRoute): Record<string, JsonSchema> {
  const webhook = route.webhook as RouteWebhook;
  const noun = machineNoun(route.machineId);
  const events = webhook.events.map((event) =>
    event.match === null ? event.eventType : `${event.match} -> ${event.eventType}`,
  );
  const signed =
    webhook.scheme === 'stripe'
      ? `\`${webhook.header}: t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">\``
      : `\`${webhook.header}: ${webhook.prefix}<${webhook.encoding} HMAC-SHA256 of ${webhook.timestampHeader === null ? 'the raw body' : `"{${webhook.timestampHeader}}.{raw body}"`}>\``;
  const instance =
    'key' in webhook.instance
      ? `the ${noun} whose ${webhook.instance.field} is the body's \`${webhook.instance.key}\` (created when none has it)`
      : `the ${noun} whose id is the body's \`${webhook.instance.machineId}\``;
  const parameters: JsonSchema[] = [
    {
      name: webhook.header,
      in: 'header',
      required: true,
      description: `The provider's signature: ${signed}, under the secret of ${webhook.secretEnv}.`,
      schema: { type: 'string' },
    },
  ];
  if (webhook.timestampHeader !== null)
    parameters.push({
      name: webhook.timestampHeader,
      in: 'header',
      required: true,
      description: 'Unix seconds, signed with the body.',
      schema: { type: 'string', pattern: '^[0-9]+$' },
    });
  if (webhook.deliveryIdHeader !== null)
    parameters.push({
      name: webhook.deliveryIdHeader,
      in: 'header',
      required: false,
      description:
        "The delivery id: a redelivery answers the first delivery's response (Idempotency-Replayed: true) and applies nothing again.",
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  const responses: JsonSchema = {
    [String(route.status)]: {
      description: 'The event was sent: the answer of its route.',
      headers: {
        'Idempotency-Replayed': {
          description: 'Present (`true`) on the stored answer of a redelivery.',
          schema: { type: 'string', const: 'true' },
        },
      },
      content: json(ref(responseSchemaName(route))),
    },
  };
  for (const error of errorResponses(route)) {
    const status = String(error.status);
    if (error.status === 401) {
      responses[status] = {
        description: `The signature is missing, does not match the raw body, or its timestamp is more than ${webhook.tolerance} s from now. Nothing was written.`,
        content: json(ref(WEBHOOK_REFUSED_SCHEMA)),
      };
    } else if (error.status === 423) {
      responses[status] = {
        description:
          'The instance is processing another event: its last committed state, isProcessing true.',
        content: json(error.schema),
      };
    } else if (error.status === 412) {
      responses[status] = {
        description: 'If-Match names a version the instance moved on from.',
        content: json(ref(PRECONDITION_FAILED_SCHEMA)),
      };
    } else if (error.component !== null) {
      responses[status] = { $ref: `#/components/responses/${error.component}` };
    } else {
      responses[status] = {
        description: error.description ?? 'Answered by the endpoint action.',
        content: json(error.schema),
      };
    }
  }
  return {
    post: {
      operationId: route.name,
      tags: [route.machineId],
      summary: `Webhook ${webhook.name}: ${events.join(', ')}`,
      description: `A provider's delivery at \`POST ${route.path}\`, signed with ${signed}. Sends ${events.join(', ')} to ${instance}; the payload is ${webhook.payload === null ? 'the body' : `the body's \`${webhook.payload}\``}. Called by the provider, not the frontend (the generated client leaves it out).`,
      parameters,
      requestBody: {
        required: true,
        description: "The provider's JSON body, signed as sent.",
        content: json({ type: 'object' }),
      },
      responses,
    },
  };
}
