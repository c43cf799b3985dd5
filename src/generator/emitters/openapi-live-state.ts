/**
 * The state stream (`stream: true`) in the OpenAPI document: its Server-Sent Events typed per
 * machine. OpenAPI 3.1 has no item schema for a stream, so the body is described as the sequence
 * of its events (`type: array`, the way sequential media types are written before OpenAPI 3.2's
 * `itemSchema`), each event a component `<Response>StateEvent`: `id` (the sequence number),
 * `event: state` and `data`, the JSON text of the read envelope (`contentMediaType` and
 * `contentSchema` name its schema). `x-data-schema` keeps pointing at the envelope itself, for
 * tools that read only that.
 */
import type { JsonSchema, ManifestRoute } from '../manifest.js';

/** `OrderResponse` -> `OrderStateEvent`: the component of one message of the route's stream. */
export function stateEventSchemaName(responseSchema: string): string {
  return `${responseSchema.replace(/Response$/, '')}StateEvent`;
}

/**
 * One message of a state stream whose `data` is the JSON of `responseSchema`; `what` says what
 * that is (a registration's stream sends the read envelope, the admin stream its own message).
 */
export function stateEventSchema(
  responseSchema: string,
  what = 'the read envelope of that state',
): JsonSchema {
  return {
    type: 'object',
    description:
      'One server-sent event of the state stream: a committed state of the instance, oldest first.',
    properties: {
      id: {
        type: 'string',
        pattern: '^[0-9]+$',
        description: 'The sequence number of the state: send it as Last-Event-ID to resume.',
      },
      event: { type: 'string', const: 'state' },
      retry: {
        type: 'string',
        pattern: '^[0-9]+$',
        description:
          'Milliseconds an EventSource waits before reconnecting (on the first message).',
      },
      data: {
        type: 'string',
        contentMediaType: 'application/json',
        contentSchema: { $ref: `#/components/schemas/${responseSchema}` },
        description: `The JSON of ${responseSchema}, ${what}.`,
      },
    },
    required: ['id', 'event', 'data'],
    additionalProperties: false,
  };
}

/** The success answer of a state stream route whose envelope is `responseSchema`. */
export function streamResponse(route: ManifestRoute, responseSchema: string): JsonSchema {
  return {
    description:
      `Server-sent events, one per committed state, oldest first: \`id\` is its sequence number, ` +
      `\`event\` is \`state\`, \`data\` the JSON of ${responseSchema} (the read envelope). ` +
      `The first message is the current state; the stream ends after a final state (route ${route.name}).`,
    content: {
      'text/event-stream': {
        schema: {
          type: 'array',
          items: { $ref: `#/components/schemas/${stateEventSchemaName(responseSchema)}` },
        },
        'x-data-schema': { $ref: `#/components/schemas/${responseSchema}` },
      },
    },
  };
}
