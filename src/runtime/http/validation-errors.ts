/**
 * Event payload validation: zod issues become the 422 body `{ message, errors }` through one
 * function, and GET query strings are coerced where the schema asks for another type.
 */
import { core, type ZodType } from 'zod';
import type { FieldErrors } from '../errors.js';

/** A failed validation: the field errors and the summary message of the 422 body. */
export interface ValidationErrorBody {
  message: string;
  errors: FieldErrors;
}

/**
 * Maps zod issues to field errors keyed by dotted path under `root`
 * (`['amount']` -> `payload.amount`), keeping every message of a field in issue order.
 */
export function fieldErrorsFromIssues(
  issues: readonly core.$ZodIssue[],
  root = 'payload',
): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    const key = [root, ...issue.path.map(String)].filter((part) => part !== '').join('.');
    (errors[key] ??= []).push(issue.message);
  }
  return errors;
}

/**
 * The 422 body for field errors. The message is the first error, with a count of the others,
 * like Laravel's summary: `"Too small: expected number to be >=100 (and 1 more error)"`.
 */
export function validationErrorBody(errors: FieldErrors): ValidationErrorBody {
  const messages = Object.values(errors).flat();
  const first = messages[0] ?? 'The given data was invalid.';
  const more = messages.length - 1;
  return {
    message: more > 0 ? `${first} (and ${more} more error${more === 1 ? '' : 's'})` : first,
    errors,
  };
}

/** The top-level keys of an event body the layer reads; any other key is event data misplaced. */
const BODY_KEYS: ReadonlySet<string> = new Set(['type', 'payload', 'scenario', 'scenarioParams']);

/**
 * What to add to the 422 of a body that put its event data beside `payload` instead of in it
 * (`{"amount": 250}` for `{"payload": {"amount": 250}}`): a sentence naming the keys and the
 * form to send, or `undefined` when every top-level key is one the layer reads. Read on the
 * refusal path only; keys are quoted and cut to 40 characters (they come from the client).
 */
export function payloadPlacementHint(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const stray = Object.keys(body).filter((key) => !BODY_KEYS.has(key));
  if (stray.length === 0) return undefined;
  const shown = stray.slice(0, 3).map((key) => JSON.stringify(key.slice(0, 40)));
  const more = stray.length > shown.length ? ', ...' : '';
  const one = stray.length === 1;
  return (
    `Event data goes under "payload": send {"payload": {${shown.map((key) => `${key}: ...`).join(', ')}${more}}}; ` +
    `the top-level ${one ? 'key' : 'keys'} ${shown.join(', ')}${more} ${one ? 'is' : 'are'} not read.`
  );
}

/** Result of validating a payload. */
export type PayloadValidation =
  { ok: true; payload: Record<string, unknown> } | { ok: false; errors: FieldErrors };

/**
 * Validates an event payload. Without a schema any object passes. With `coerce` (query
 * strings), string values the schema rejects as the wrong type are converted (`'42'` to a
 * number, `'true'` to a boolean, one value to a one-element list) and validated again, so the
 * same schema serves bodies and query strings without `z.coerce` in user code.
 */
export async function validatePayload(
  schema: ZodType | undefined,
  payload: unknown,
  options: { coerce: boolean },
): Promise<PayloadValidation> {
  return checkPayload(schema, payload, options);
}

/**
 * {@link validatePayload}, answered synchronously unless the schema is async: the request
 * lifecycle takes no promise round trip for the common synchronous schema.
 */
export function checkPayload(
  schema: ZodType | undefined,
  payload: unknown,
  options: { coerce: boolean },
): PayloadValidation | Promise<PayloadValidation> {
  const input = payload === undefined || payload === null ? {} : payload;
  if (schema === undefined) {
    return isRecord(input)
      ? { ok: true, payload: input }
      : { ok: false, errors: { payload: ['The payload must be an object.'] } };
  }
  if (asyncSchemas.has(schema)) return checkAsync(schema, input, options);
  let candidate: unknown = input;
  // Each round fixes at least one value or stops; the bound guards against schemas whose
  // issues never settle (e.g. a union that keeps asking for another type).
  for (let round = 0; round < MAX_COERCION_ROUNDS; round += 1) {
    let result: ReturnType<ZodType['safeParse']>;
    try {
      result = schema.safeParse(candidate);
    } catch (error) {
      // An async refinement or transform: this schema is parsed asynchronously from now on.
      if (!(error instanceof core.$ZodAsyncError)) throw error;
      asyncSchemas.add(schema);
      return checkAsync(schema, candidate, options);
    }
    const outcome = roundOutcome(result, candidate, options);
    if (outcome.done) return outcome.validation;
    candidate = outcome.candidate;
  }
  return notSettled();
}

const MAX_COERCION_ROUNDS = 25;
const notSettled = (): PayloadValidation => ({
  ok: false,
  errors: { payload: ['The payload could not be validated.'] },
});

// Schemas with async refinements or transforms: synchronous parsing throws $ZodAsyncError on
// them, so they are parsed asynchronously from their first request on.
const asyncSchemas = new WeakSet<ZodType>();

/** {@link checkPayload} with `safeParseAsync` (schemas with async refinements or transforms). */
async function checkAsync(
  schema: ZodType,
  input: unknown,
  options: { coerce: boolean },
): Promise<PayloadValidation> {
  let candidate = input;
  for (let round = 0; round < MAX_COERCION_ROUNDS; round += 1) {
    const outcome = roundOutcome(await schema.safeParseAsync(candidate), candidate, options);
    if (outcome.done) return outcome.validation;
    candidate = outcome.candidate;
  }
  return notSettled();
}

/** One parse: the validation when it is decided, else the coerced candidate to parse again. */
function roundOutcome(
  result: ReturnType<ZodType['safeParse']>,
  candidate: unknown,
  options: { coerce: boolean },
): { done: true; validation: PayloadValidation } | { done: false; candidate: unknown } {
  if (result.success) {
    return {
      done: true,
      validation: isRecord(result.data)
        ? { ok: true, payload: result.data }
        : { ok: false, errors: { payload: ['The payload must be an object.'] } },
    };
  }
  const coerced = options.coerce ? coerceFromIssues(candidate, result.error.issues) : null;
  if (coerced === null)
    return {
      done: true,
      validation: { ok: false, errors: fieldErrorsFromIssues(result.error.issues) },
    };
  return { done: false, candidate: coerced };
}

/** A copy of `input` with the strings that `invalid_type` issues point at converted, or `null`. */
function coerceFromIssues(input: unknown, issues: readonly core.$ZodIssue[]): unknown {
  const copy = structuredClone(input);
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type') continue;
    const path = issue.path;
    const current = readPath(copy, path);
    if (current === undefined) continue;
    const next = coerceValue(current, issue.expected);
    if (next === NO_COERCION) continue;
    if (path.length === 0) return next;
    writePath(copy, path, next);
    changed = true;
  }
  return changed ? copy : null;
}

const NO_COERCION = Symbol('no coercion');

function coerceValue(value: unknown, expected: string): unknown {
  if (expected === 'array' && !Array.isArray(value)) return [value];
  if (typeof value !== 'string') return NO_COERCION;
  const text = value.trim();
  switch (expected) {
    case 'number':
    case 'int':
      return text !== '' && Number.isFinite(Number(text)) ? Number(text) : NO_COERCION;
    case 'bigint':
      return /^-?\d+$/.test(text) ? BigInt(text) : NO_COERCION;
    case 'boolean':
      if (['true', '1', 'on', 'yes'].includes(text.toLowerCase())) return true;
      if (['false', '0', 'off', 'no'].includes(text.toLowerCase())) return false;
      return NO_COERCION;
    case 'null':
      return text === '' || text === 'null' ? null : NO_COERCION;
    case 'date': {
      const date = new Date(text);
      return text !== '' && !Number.isNaN(date.getTime()) ? date : NO_COERCION;
    }
    default:
      return NO_COERCION;
  }
}

function readPath(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isRecord(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function writePath(root: unknown, path: readonly PropertyKey[], value: unknown): void {
  const parent = readPath(root, path.slice(0, -1));
  if (isRecord(parent) || Array.isArray(parent)) {
    (parent as Record<PropertyKey, unknown>)[path[path.length - 1]!] = value;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
