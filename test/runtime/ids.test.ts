/**
 * The runtime's ULIDs (src/runtime/ids.ts) over a pooled crypto-random source: the same ids as
 * the `ulid` package (a devDependency now) gives for the same random source and times.
 */
import fc from 'fast-check';
import { decodeTime, monotonicFactory, ulid as packageUlid } from 'ulid';
import { describe, expect, it } from 'vitest';
import {
  isInstanceId,
  monotonicUlidFactory,
  newUlid,
  pooledRandom,
  ulid,
} from '../../src/runtime/ids.js';

/** A repeatable random source (a linear congruential generator) in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 0x1_0000_0000;
  };
}

describe('monotonicUlidFactory', () => {
  it("should give the ulid package's monotonic ids for the same random source and times", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.array(fc.oneof(fc.integer({ min: 1, max: 2 ** 48 - 1 }), fc.constantFrom(5, 6, 7)), {
          maxLength: 40,
        }),
        (seed, times) => {
          const ours = monotonicUlidFactory(seeded(seed));
          const theirs = monotonicFactory(seeded(seed));
          expect(times.map((time) => ours(time))).toEqual(times.map((time) => theirs(time)));
        },
      ),
    );
  });

  it('should increase within one millisecond and refuse a time outside 48 bits', () => {
    const next = monotonicUlidFactory(() => 0.5);
    const first = next(1000);
    expect(next(1000) > first).toBe(true);
    expect(next(999) > first).toBe(true);
    expect(decodeTime(next(999))).toBe(1000);
    expect(() => monotonicUlidFactory(Math.random)(2 ** 48)).toThrow(RangeError);
    expect(() => monotonicUlidFactory(Math.random)(-1)).toThrow(RangeError);
  });
});

describe('ulid', () => {
  it('should carry the given time, as the package encodes it', () => {
    for (const time of [1, 1_700_000_000_000, 2 ** 48 - 1]) {
      expect(ulid(time).slice(0, 10)).toBe(packageUlid(time).slice(0, 10));
      expect(isInstanceId(ulid(time))).toBe(true);
    }
  });
});

describe('newUlid', () => {
  it('should make instance-shaped ids, strictly increasing within the process', () => {
    const ids = Array.from({ length: 1000 }, () => newUlid());
    expect(ids.every(isInstanceId)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('should carry the time of its making', () => {
    const before = Date.now();
    const id = newUlid();
    expect(decodeTime(id)).toBeGreaterThanOrEqual(before);
    expect(decodeTime(id)).toBeLessThanOrEqual(Date.now());
  });
});

describe('pooledRandom', () => {
  it('should draw uniform numbers in [0, 1) across more than one pool', () => {
    const draws = Array.from({ length: 5000 }, () => pooledRandom());
    expect(draws.every((draw) => draw >= 0 && draw < 1)).toBe(true);
    // 5000 draws over ten buckets: each holds about 500; 350 is far outside chance.
    const buckets = new Array<number>(10).fill(0);
    for (const draw of draws) buckets[Math.floor(draw * 10)]! += 1;
    expect(Math.min(...buckets)).toBeGreaterThan(350);
  });
});
