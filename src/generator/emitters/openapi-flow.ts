/**
 * Flow control in the OpenAPI document (docs/http.md "Flow control"): the 429 answer of each
 * route with `flow`, its `Retry-After` header and the `FlowLimitedResponse` body, described
 * with the route's own limits and key.
 */
import type { RouteFlow } from '../../runtime/http/flow-types.js';
import type { JsonSchema, ManifestRoute } from '../manifest.js';

/** The component schema of a 429 body. */
export const FLOW_LIMITED_SCHEMA = 'FlowLimitedResponse';

/** `{ message, code, limit, retryAfter }`: which limit refused, and when to send again. */
export const FLOW_LIMITED_BODY: JsonSchema = {
  type: 'object',
  properties: {
    message: { type: 'string' },
    code: { type: 'string', const: 'MR_FLOW_LIMITED' },
    limit: { type: 'string', enum: ['concurrency', 'rate', 'debounce', 'instances'] },
    retryAfter: {
      type: ['integer', 'null'],
      minimum: 1,
      description:
        'Seconds to wait before sending again (the Retry-After header); null for a debounced request, which is not to be sent again.',
    },
  },
  required: ['message', 'code', 'limit', 'retryAfter'],
  additionalProperties: false,
};

/** The route's 429, or `undefined` for any other status. */
export function flowResponse(route: ManifestRoute, status: number): JsonSchema | undefined {
  if (status !== 429 || route.flow === undefined) return undefined;
  const flow = route.flow;
  const limit: 'rate' | 'concurrency' | 'debounce' | 'instances' =
    flow.rate !== undefined
      ? 'rate'
      : flow.concurrency !== undefined
        ? 'concurrency'
        : flow.inState !== undefined
          ? 'instances'
          : 'debounce';
  return {
    description: flowDescription(route, flow),
    headers: {
      'Retry-After': {
        description:
          'Seconds to wait before sending the request again (absent on a debounced request).',
        schema: { type: 'string', pattern: '^[0-9]+$' },
      },
    },
    content: {
      'application/json': {
        schema: { $ref: `#/components/schemas/${FLOW_LIMITED_SCHEMA}` },
        example: {
          message: `Route ${route.name}: ${limit === 'debounce' ? 'a later request of the same key came within the window' : 'over its flow control'}. Nothing was sent.`,
          code: 'MR_FLOW_LIMITED',
          limit,
          retryAfter: limit === 'debounce' ? null : 1,
        },
      },
    },
  };
}

/** What refuses a request of this route, in the route's own numbers. */
function flowDescription(route: ManifestRoute, flow: RouteFlow): string {
  const key =
    flow.key === null
      ? 'all requests of the route'
      : 'header' in flow.key
        ? `requests with the same ${flow.key.header} header`
        : 'payload' in flow.key
          ? `requests with the same payload ${flow.key.payload}`
          : `requests to instances with the same ${flow.key.context} in their context`;
  const limits: string[] = [];
  if (flow.concurrency !== undefined)
    limits.push(`more than ${flow.concurrency} in flight at once (limit: concurrency)`);
  if (flow.rate !== undefined)
    limits.push(
      `more than ${flow.rate.limit} per ${flow.rate.interval} ms, as a smooth bucket (limit: rate)`,
    );
  if (flow.debounce !== undefined)
    limits.push(
      `a later request within ${flow.debounce.window} ms: each request waits that long and only the last of a burst is sent${flow.debounce.maxWait === undefined ? '' : ` (at most ${flow.debounce.maxWait} ms after the burst's first)`}; the others are answered 429 without Retry-After and must not be sent again (limit: debounce)`,
    );
  const counted =
    limits.length === 0
      ? ''
      : `flow control counts ${key} together and refuses ${limits.join('; or ')}. `;
  const inState =
    flow.inState === undefined
      ? ''
      : `At most ${flow.inState.limit} instances of the ${route.machineId} may be in state ${flow.inState.state}: a request is refused while that many are (limit: instances). `;
  return (
    `Too Many Requests: ${counted}${inState}` +
    `Nothing was sent to the ${route.machineId}. Send again after Retry-After seconds (\`retryAfter\` in the body).`
  );
}
