/**
 * The runtime's own ULIDs (src/runtime/ids.ts), checked against ulidx, which the runtime used
 * before: the same random draws and times give the same ids.
 */
import { monotonicFactory } from 'ulidx';
import { describe, expect, it } from 'vitest';
import { isInstanceId, monotonicUlidFactory, newUlid } from '../../src/runtime/ids.js';

/** A repeatable source in [0, 1): a linear congruential sequence from `seed`. */
function sequence(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('monotonicUlidFactory', () => {
  it('should make the ids ulidx makes from the same draws and times', () => {
    const ours = monotonicUlidFactory(sequence(7));
    const theirs = monotonicFactory(sequence(7));
    // New milliseconds, repeats (increments), a clock going back, the largest time.
    const times = [1, 1, 1, 2, 1_700_000_000_000, 1_700_000_000_000, 1_699_999_999_999];
    times.push(1_700_000_000_001, 2 ** 48 - 1, 2 ** 48 - 1);
    for (let draw = 0; draw < 200; draw++) times.push(1_800_000_000_000 + Math.floor(draw / 7));
    expect(times.map((time) => ours(time))).toEqual(times.map((time) => theirs(time)));
  });

  it('should carry an increment into the digits before the last', () => {
    // 31.9 / 32 draws the largest digit, Z: the first increment carries through all but none.
    const next = monotonicUlidFactory(() => 31.9 / 32);
    const seed = next(5);
    expect(seed.slice(10)).toBe('Z'.repeat(16));
    expect(() => next(5)).toThrow(RangeError);
    const carrying = monotonicUlidFactory(sequence(3));
    const first = carrying(9);
    const following = Array.from({ length: 40 }, () => carrying(9));
    expect([first, ...following]).toEqual([first, ...following].sort());
    expect(new Set(following).size).toBe(40);
  });

  it('should encode the time in the first 10 characters', () => {
    const next = monotonicUlidFactory(sequence(1));
    expect(next(1).slice(0, 10)).toBe('0000000001');
    expect(next(2 ** 48 - 1).slice(0, 10)).toBe('7ZZZZZZZZZ');
  });
});

describe('newUlid', () => {
  it('should make instance-shaped ids, strictly increasing within the process', () => {
    const ids = Array.from({ length: 1000 }, () => newUlid());
    expect(ids.every(isInstanceId)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
