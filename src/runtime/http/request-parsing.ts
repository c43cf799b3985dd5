/**
 * Body and query parsing shared by both adapters, so Fastify and Express accept and reject
 * exactly the same requests: `secure-json-parse` for bodies and qs's nested syntax for query
 * strings (./nested-query.ts), with nesting bounded so a hostile request is a 400 at parse
 * time instead of a stack overflow wherever the value is walked later (validation, coercion,
 * serialising the history row).
 */
import secureJson from 'secure-json-parse';
import { parseNestedQuery } from './nested-query.js';
import { HttpError } from './response-bodies.js';

/** Default request-body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * Default limit of one event payload, serialised as stored in the history: 64 KiB. Payloads
 * without a schema are kept in full in every history row, so the body limit alone is too loose.
 */
export const DEFAULT_PAYLOAD_LIMIT = 64 * 1024;

/**
 * Deepest nesting of objects and arrays accepted in a JSON body or a query string (`a[b][c]`
 * is 3 deep). Event payloads are records, not trees: 32 levels is far beyond any schema the
 * example or the tests use, and far below what overflows a stack.
 */
export const MAX_NESTING_DEPTH = 32;

/** Most `key=value` pairs accepted in one query string (qs's own default). */
const MAX_QUERY_PARAMETERS = 1000;

/**
 * Parses a JSON request body. An empty body is `undefined`; malformed JSON, or JSON nested
 * deeper than {@link MAX_NESTING_DEPTH}, is a 400 `HttpError`. `__proto__` keys, and
 * `constructor` keys holding a `prototype`, are removed (secure-json-parse, as in Fastify), so
 * nothing downstream can be polluted by merging the body.
 */
export function parseJsonBody(text: string): unknown {
  if (isBlank(text)) return undefined;
  let value: unknown;
  try {
    value = secureJson.parse(text, null, SECURE_JSON_OPTIONS);
  } catch {
    throw new HttpError(400, 'Malformed JSON in request body.');
  }
  // JSON nested N deep has N openers and N closers: a text shorter than 2 (N + 1) characters
  // cannot be over the limit, so most bodies skip the scan; longer ones are counted first (an
  // upper bound), and walked only when the count is over the limit.
  if (
    text.length >= 2 * (MAX_NESTING_DEPTH + 1) &&
    countOpeners(text) > MAX_NESTING_DEPTH &&
    nestingDepth(value) > MAX_NESTING_DEPTH
  ) {
    throw new HttpError(
      400,
      `The request body is nested more than ${MAX_NESTING_DEPTH} levels deep.`,
    );
  }
  return value;
}

/**
 * The 415 for a body sent with a `Content-Encoding` other than `identity` (gzip, br, ...): the
 * layer reads bodies as they are, so a compressed one would otherwise be "malformed JSON".
 * `undefined` when the body is not encoded.
 */
export function unsupportedEncoding(contentEncoding: string | undefined): HttpError | undefined {
  if (contentEncoding === undefined) return undefined;
  const coding = contentEncoding.trim().toLowerCase();
  if (coding === '' || coding === 'identity') return undefined;
  return new HttpError(
    415,
    `Unsupported Media Type: Content-Encoding '${contentEncoding.slice(0, 40)}' is not accepted; send the JSON body uncompressed.`,
  );
}

/**
 * A request body the layer cannot read as JSON, held where the parsed body would be: malformed
 * JSON or too deep (400), a media type other than JSON or a `Content-Encoding` (415). The
 * adapters' parsers hand it on instead of answering at once, so route middleware runs first
 * (spec "Request handling order": an unauthenticated request is the middleware's 401 whatever
 * its body), and reading `EndpointRequest.body` throws {@link UnreadableBody.error}. A body over
 * the size limit is not one of these: it is refused (413) before it is read, ahead of the
 * middleware, so that nobody can make the server receive a large body by sending a bad one.
 */
export class UnreadableBody {
  constructor(
    /** What reading the body answers (400 or 415). */
    readonly error: HttpError,
  ) {}
}

/** The 415 of a body whose media type is not JSON. */
export function unsupportedMediaType(): HttpError {
  return new HttpError(415, 'Unsupported Media Type: send application/json.');
}

/** True for `application/json` and `application/*+json`, with or without parameters. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * Parses a query string the way PHP/Laravel does, which the spec's GET rules assume:
 * `a=1&a=2` -> `{ a: ['1', '2'] }`, `items[]=x` -> `{ items: ['x'] }`,
 * `payload[code]=7` -> `{ payload: { code: '7' } }`. Values stay strings (the schema coerces).
 * Keys naming `Object.prototype` members (`__proto__`, `constructor`, ...) are dropped; more
 * than {@link MAX_NESTING_DEPTH} brackets, 1000 pairs or malformed percent-encoding is a 400.
 */
export function parseQueryString(query: string): Record<string, unknown> {
  if (query === '' || query === '?') return {};
  try {
    return parseNestedQuery(query, strictDecode, {
      depth: MAX_NESTING_DEPTH,
      parameters: MAX_QUERY_PARAMETERS,
    });
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, `Malformed query string: ${(error as Error).message}`);
  }
}

/**
 * qs's decoding (`+` is a space), except that malformed percent-encoding is a 400 instead of
 * kept as is.
 */
function strictDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new HttpError(400, 'Malformed query string.');
  }
}

const SECURE_JSON_OPTIONS = Object.freeze({
  protoAction: 'remove',
  constructorAction: 'remove',
} as const);

/** `text.trim() === ''` without trimming a copy of every body that has content. */
function isBlank(text: string): boolean {
  if (text.length === 0) return true;
  const first = text.charCodeAt(0);
  // A JSON text that starts with `{`, `[` or `"` is not blank (the common case).
  if (first === 0x7b || first === 0x5b || first === 0x22) return false;
  return text.trim() === '';
}

/**
 * An upper bound of the nesting depth of a JSON text: its `{` and `[` count. Cheap, and below
 * the limit for almost every body, so the exact walk below is rarely needed.
 */
function countOpeners(text: string): number {
  let count = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x7b || code === 0x5b) count++;
  }
  return count;
}

/** Nesting depth of a parsed JSON value, walked without recursion (it may be very deep). */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth + 1 > deepest) deepest = depth + 1;
    if (deepest > MAX_NESTING_DEPTH) return deepest;
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return deepest;
}
