/**
 * The contention policy of an endpoint (docs/http.md "Contention policy"): what a request does
 * when another request holds its instance's lock. `'reject'` (the default) answers the spec's
 * contention response at once (423, GET 200, with the last committed state); `{ wait: ms }`
 * queues for the lock up to that bound, then answers normally or with the same contention
 * response. One rule, shared by the endpoint option (definition time) and the registration's
 * default (router time).
 */
import type { ContentionConfig } from './endpoint-config.js';

/** Longest wait a policy may ask for, in ms: the bound of `waitFor` reads, within the lock TTL. */
export const MAX_CONTENTION_WAIT_MS = 60_000;

/** The example every message shows. */
const EXAMPLE = `'reject' or { wait: 5000 } (milliseconds, 1 to ${MAX_CONTENTION_WAIT_MS})`;

/**
 * What is wrong with a `contention` value, as the end of a sentence (`must be ...`); `null`
 * when it is valid. `undefined` and `null` are valid (no policy: the default applies).
 */
export function contentionProblem(value: unknown): string | null {
  if (value === undefined || value === null || value === 'reject') return null;
  if (typeof value !== 'object' || Array.isArray(value))
    return `must be ${EXAMPLE}, got ${describe(value)}`;
  const keys = Object.keys(value);
  const unknown = keys.filter((key) => key !== 'wait');
  if (unknown.length > 0)
    return `has unknown key${unknown.length === 1 ? '' : 's'} ${unknown.map((key) => `'${key}'`).join(', ')}: use ${EXAMPLE}`;
  const wait: unknown = (value as { wait?: unknown }).wait;
  if (
    typeof wait !== 'number' ||
    !Number.isInteger(wait) ||
    wait < 1 ||
    wait > MAX_CONTENTION_WAIT_MS
  )
    return `must be ${EXAMPLE}; 'wait' got ${describe(wait)}`;
  return null;
}

/** The wait of a valid policy in ms, `0` for `'reject'`; `null` when none is set. */
export function contentionWaitMs(value: ContentionConfig | null | undefined): number | null {
  if (value === undefined || value === null) return null;
  return value === 'reject' ? 0 : value.wait;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return `'${value}'`;
  // JSON.stringify spells NaN and the infinities null, and refuses a bigint.
  if (typeof value === 'number') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
