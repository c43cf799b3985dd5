/**
 * What an event route reads of a request: the method's meaning (reads), the event data from the
 * query or the JSON body, and the stored-payload size bound.
 */
import { MachineValidationException } from '../errors.js';
import { HttpError } from './response-bodies.js';
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
  // Most payloads are far below the limit: a bound of their size, walked without allocating,
  // spares serialising them (a visible share of a small stateless request's CPU time).
  if (sizeBound(payload, limit) <= limit) return;
  // Bodies and queries are depth-bounded at parse time, so serialising cannot overflow.
  if (Buffer.byteLength(JSON.stringify(payload) ?? '') > limit) {
    throw new HttpError(413, `The payload of event '${eventType}' is larger than ${limit} bytes.`);
  }
}

/**
 * An upper bound of `Buffer.byteLength(JSON.stringify(value))` for plain JSON data, or
 * `Infinity` when the bound passes `budget` or the value is anything else (a `toJSON`, a class
 * instance, a function...), which the exact serialisation then measures. A UTF-16 unit takes
 * at most 6 bytes serialised (`\u001f`); a number at most 25 characters.
 */
function sizeBound(value: unknown, budget: number): number {
  switch (typeof value) {
    case 'string':
      return value.length * 6 + 2;
    case 'number':
      return 25;
    case 'boolean':
      return 5;
    case 'object':
      break;
    default:
      return Number.POSITIVE_INFINITY;
  }
  if (value === null) return 4;
  let size = 2;
  if (typeof (value as { toJSON?: unknown }).toJSON !== 'undefined')
    return Number.POSITIVE_INFINITY;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      // Holes and undefined serialise as `null`.
      const item: unknown = value[index];
      size += (item === undefined ? 4 : sizeBound(item, budget - size)) + 1;
      if (size > budget) return Number.POSITIVE_INFINITY;
    }
    return size;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return Number.POSITIVE_INFINITY;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    // Keys of undefined values are left out; counting them only loosens the bound.
    size += key.length * 6 + 4 + (item === undefined ? 0 : sizeBound(item, budget - size));
    if (size > budget) return Number.POSITIVE_INFINITY;
  }
  return size;
}
