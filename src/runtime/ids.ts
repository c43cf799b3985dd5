/** Instance and record ids: ULIDs, generated cheaply and checked before any query. */
import { getRandomValues } from 'node:crypto';

// Crockford base32, 26 characters, first one <= 7 (48-bit timestamp). Checked before any query
// so malformed ids from URLs never reach the database.
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/** True when `id` has the shape of an instance id (an upper-case ULID). */
export function isInstanceId(id: string): boolean {
  return typeof id === 'string' && ULID_PATTERN.test(id);
}

// A crypto call per character (ulidx's default random source) costs ~40 us for the first id of
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

const ENCODING = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_LENGTH = 10;
const RANDOM_LENGTH = 16;

/** The 10 time characters of a ULID: `time` (ms since the epoch, < 2^48) in base32. */
function encodeTime(time: number): string {
  let encoded = '';
  let rest = time;
  for (let index = 0; index < TIME_LENGTH; index++) {
    const digit = rest % 32;
    encoded = ENCODING.charAt(digit) + encoded;
    rest = (rest - digit) / 32;
  }
  return encoded;
}

/** Adds one to a base32 string; throws when every digit is already the largest. */
function incrementBase32(value: string): string {
  for (let index = value.length - 1; index >= 0; index--) {
    const digit = ENCODING.indexOf(value.charAt(index));
    if (digit < 31) {
      return (
        value.slice(0, index) + ENCODING.charAt(digit + 1) + '0'.repeat(value.length - index - 1)
      );
    }
  }
  throw new RangeError('ULID random part exhausted within one millisecond.');
}

/**
 * A monotonic ULID generator over `random` (uniform in [0, 1)), as ulidx's `monotonicFactory`
 * makes it, id for id (test/runtime/ids.test.ts compares them): a new millisecond draws 16
 * random characters, an id within the same or an earlier millisecond adds one to the last
 * random part. Written here because importing ulidx (and its error library, 7 modules) cost
 * every server start about 15 ms of CPU.
 */
export function monotonicUlidFactory(random: () => number): (time?: number) => string {
  let lastTime = 0;
  let lastRandom = '';
  return (time = Date.now()) => {
    if (time <= lastTime) {
      lastRandom = incrementBase32(lastRandom);
      return encodeTime(lastTime) + lastRandom;
    }
    let drawn = '';
    for (let index = 0; index < RANDOM_LENGTH; index++) {
      drawn = ENCODING.charAt(Math.min(Math.floor(random() * 32), 31)) + drawn;
    }
    lastTime = time;
    lastRandom = drawn;
    return encodeTime(time) + drawn;
  };
}

const nextUlid = monotonicUlidFactory(pooledRandom);

/** A new ULID (lock owners, job ids); monotonic within the process. */
export function newUlid(): string {
  return nextUlid();
}
