/**
 * The `idempotency` option of a registration planned: its route settings and the events it
 * covers, with its problems reported through the planner's `fail`.
 */
import { eventTypeOfReference } from '../definition/endpoints.js';
import type { IdempotencyOptions, RegistrationOptions, RouteIdempotency } from './types.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';

// The idempotency keys the router knows are exactly the keys of IdempotencyOptions.
true satisfies ExactKeys<IdempotencyOptions, typeof KNOWN_KEYS.idempotency>;

/** Default lifetime of an Idempotency-Key record, in seconds (one day). */
export const DEFAULT_IDEMPOTENCY_TTL = 86_400;

/** The planned option: the settings of each covered route and the events it covers. */
export interface PlannedIdempotency {
  route: RouteIdempotency;
  /** `null`: every command route, create included. */
  events: string[] | null;
}

/**
 * The `idempotency` option: `null` when off, else the route settings and the events it covers
 * (`null`: every command route, create included).
 */
export function planIdempotency(
  value: RegistrationOptions['idempotency'],
  available: readonly string[],
  fail: (message: string, key: string) => void,
): PlannedIdempotency | null {
  if (value === undefined || value === null || value === false) return null;
  if (value === true) return { route: { ttl: DEFAULT_IDEMPOTENCY_TTL }, events: null };
  if (typeof value !== 'object' || Array.isArray(value)) {
    fail(`'idempotency' must be true or { events?, ttl? }, e.g. { ttl: 86400 }.`, 'idempotency');
    return null;
  }
  for (const unknown of findUnknownKeys(value, KNOWN_KEYS.idempotency)) {
    fail(
      `${describeUnknownKey(unknown)} in 'idempotency'. Known keys: ${KNOWN_KEYS.idempotency.join(', ')}.`,
      `idempotency.${unknown.key}`,
    );
  }
  const ttl = value.ttl ?? DEFAULT_IDEMPOTENCY_TTL;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl <= 0) {
    fail(
      `'idempotency.ttl' must be a positive whole number of seconds, e.g. 86400 (got ${String(ttl)}).`,
      'idempotency.ttl',
    );
  }
  let events: string[] | null = null;
  if (value.events !== undefined) {
    events = [];
    if (!Array.isArray(value.events)) {
      fail(`'idempotency.events' must be a list of event types.`, 'idempotency.events');
    } else {
      for (const ref of value.events as readonly unknown[]) {
        const type = eventTypeOfReference(ref);
        if (type === null || !available.includes(type)) {
          fail(
            `'idempotency.events' names ${type === null ? 'an entry that is not an event type' : `unknown event type '${type}'`}. Available: ${available.join(', ') || '(none)'}.`,
            'idempotency.events',
          );
        } else events.push(type);
      }
    }
  }
  return {
    route: { ttl: typeof ttl === 'number' && ttl > 0 ? ttl : DEFAULT_IDEMPOTENCY_TTL },
    events,
  };
}
