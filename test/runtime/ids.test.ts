/**
 * The runtime's ULIDs (src/runtime/ids.ts): the `ulid` package's monotonic factory over a pooled
 * crypto-random source.
 */
import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import { isInstanceId, newUlid, pooledRandom } from '../../src/runtime/ids.js';

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
