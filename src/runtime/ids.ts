/** Instance and record ids: ULIDs, generated cheaply and checked before any query. */
import { getRandomValues } from 'node:crypto';
import { monotonicFactory } from 'ulid';

// Crockford base32, 26 characters, first one <= 7 (48-bit timestamp). Checked before any query
// so malformed ids from URLs never reach the database.
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/** True when `id` has the shape of an instance id (an upper-case ULID). */
export function isInstanceId(id: string): boolean {
  return typeof id === 'string' && ULID_PATTERN.test(id);
}

// A crypto call per character (a ULID library's default random source) costs ~40 us for the first id of
// every millisecond, more than a SQLite commit. Drawing from a pooled buffer of crypto-random
// words makes an id cost well under 1 us.
const pool = new Uint32Array(1024);
let poolIndex = pool.length;
/** A uniform number in [0, 1) from a pooled buffer of crypto-random words. */
export function pooledRandom(): number {
  if (poolIndex === pool.length) {
    getRandomValues(pool);
    poolIndex = 0;
  }
  return pool[poolIndex++]! / 0x1_0000_0000;
}

const nextUlid = monotonicFactory(pooledRandom);

/** A new ULID (lock owners, job ids); monotonic within the process. */
export function newUlid(): string {
  return nextUlid();
}
