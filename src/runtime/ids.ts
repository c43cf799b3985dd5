/** Instance and record ids: ULIDs, generated cheaply and checked before any query. */
import { getRandomValues } from 'node:crypto';

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

// ULIDs (ulid/spec): 10 characters of millisecond time and 16 random ones, in Crockford base32.
// The few lines of the `ulid` package the runtime used, and the same ids for the same random
// source (test/runtime/ids.test.ts compares them with that package, a devDependency).
const ENCODING = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const TIME_MAX = 2 ** 48 - 1;

function encodeTime(time: number): string {
  if (!Number.isInteger(time) || time < 0 || time > TIME_MAX) {
    throw new RangeError(`A ULID's time is an integer from 0 to ${TIME_MAX}, not ${time}.`);
  }
  let text = '';
  for (let left = time, index = 0; index < 10; index++) {
    const digit = left % 32;
    text = ENCODING.charAt(digit) + text;
    left = (left - digit) / 32;
  }
  return text;
}

function encodeRandom(random: () => number): string {
  let text = '';
  for (let index = 0; index < 16; index++) {
    text = ENCODING.charAt(Math.floor(random() * 32) % 32) + text;
  }
  return text;
}

/** `digits` plus one, in base32; throws when every digit is the last. */
function incrementBase32(digits: string): string {
  for (let index = digits.length - 1; index >= 0; index--) {
    const digit = ENCODING.indexOf(digits.charAt(index));
    if (digit < 31) {
      return (
        digits.slice(0, index) + ENCODING.charAt(digit + 1) + '0'.repeat(digits.length - index - 1)
      );
    }
  }
  throw new RangeError('A ULID overflowed its random part within one millisecond.');
}

/**
 * A ULID generator whose ids increase within the process: an id at or before the last one's
 * time takes that time and the last random part plus one (the `ulid` package's
 * `monotonicFactory`). `seedTime` defaults to now.
 */
export function monotonicUlidFactory(random: () => number): (seedTime?: number) => string {
  let lastTime = 0;
  let lastRandom = '';
  return (seedTime) => {
    const seed =
      seedTime === undefined || seedTime === 0 || Number.isNaN(seedTime) ? Date.now() : seedTime;
    if (seed <= lastTime) {
      lastRandom = incrementBase32(lastRandom);
      return encodeTime(lastTime) + lastRandom;
    }
    lastTime = seed;
    lastRandom = encodeRandom(random);
    return encodeTime(seed) + lastRandom;
  };
}

/** A ULID of `seedTime` (default now), not ordered with other ids made in the same millisecond. */
export function ulid(seedTime?: number): string {
  const seed =
    seedTime === undefined || seedTime === 0 || Number.isNaN(seedTime) ? Date.now() : seedTime;
  return encodeTime(seed) + encodeRandom(pooledRandom);
}

const nextUlid = monotonicUlidFactory(pooledRandom);

/** A new ULID (lock owners, job ids); monotonic within the process. */
export function newUlid(): string {
  return nextUlid();
}
