/**
 * What an event route reads of a request: the method's meaning (reads), the event data from the
 * query or the JSON body, and the stored-payload size bound.
 */
import { MachineValidationException } from '../errors.js';
import { HttpError } from './responses.js';
import { withoutScenarioKeys } from './scenario-fields.js';
import type { EndpointRequest } from './types.js';

/** GET, and HEAD (which frameworks route to GET handlers), read their data from the query. */
export function isRead(request: EndpointRequest): boolean {
  return request.method === 'GET' || request.method === 'HEAD';
}

/** A JSON object body: not `null`, not an array. */
export function isJsonObject(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

/**
 * The event data of a request. GET: the query, wrapped into `payload` unless it already uses
 * the bracket form `payload[key]=`. Other methods: the JSON body `{ type?, payload? }`.
 *
 * A body `type` must name the route's event (or, on a forward, the child's): the route alone
 * decides the event, so a client cannot reach another event's handler, middleware or
 * validation by overriding it (the original let it override; reference notes §4.25).
 */
export function requestData(
  request: EndpointRequest,
  eventType: string,
  acceptedTypes: readonly string[],
  scenarios: boolean,
): { payload: unknown } {
  if (isRead(request)) {
    const query = scenarios ? withoutScenarioKeys(request.query) : request.query;
    return { payload: Object.hasOwn(query, 'payload') ? query.payload : query };
  }
  const body = request.body;
  if (body === undefined) return { payload: undefined };
  // JSON `null` is a body, and not an object (docs/http.md "Bad input").
  if (!isJsonObject(body)) {
    throw new HttpError(400, 'The request body must be a JSON object: { "payload": { ... } }.');
  }
  const { type, payload } = body as { type?: unknown; payload?: unknown };
  if (type !== undefined && type !== eventType && !acceptedTypes.includes(type as string)) {
    throw new MachineValidationException(
      `The type must be '${eventType}' (the event of this route).`,
      {
        type: [`The type must be '${eventType}' (the event of this route).`],
      },
    );
  }
  return { payload };
}

/**
 * 413 when the payload, as it would be stored in the history, is over `limit` bytes: a body
 * limit bounds a request, this bounds what every accepted event keeps forever.
 */
export function assertPayloadSize(payload: unknown, eventType: string, limit: number): void {
  if (payload === undefined) return;
  // Bodies and queries are depth-bounded at parse time, so serialising cannot overflow.
  if (Buffer.byteLength(JSON.stringify(payload) ?? '') > limit) {
    throw new HttpError(413, `The payload of event '${eventType}' is larger than ${limit} bytes.`);
  }
}
