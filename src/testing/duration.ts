/**
 * Durations as tests write them: `'30d'`, `'15m'`, `'1h30m'`, `'2s'`, `'250ms'`, or a number of
 * milliseconds.
 */
import { InvalidDurationException } from './errors.js';

/** A duration: milliseconds, or units `w` `d` `h` `m` `s` `ms` in a row (`'1d12h'`). */
export type Duration = number | string;

const UNIT_MS: Readonly<Record<string, number>> = {
  w: 7 * 86_400_000,
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
};
const PART = /(\d+(?:\.\d+)?)\s*(ms|w|d|h|m|s)/gy;

/** Milliseconds of `duration`; throws `InvalidDurationException` for anything else. */
export function toMilliseconds(duration: Duration): number {
  if (typeof duration === 'number') {
    if (Number.isFinite(duration) && duration >= 0) return duration;
    throw invalid(duration);
  }
  const text = duration.trim();
  PART.lastIndex = 0;
  let total = 0;
  let read = 0;
  for (let match = PART.exec(text); match !== null; match = PART.exec(text)) {
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    read = PART.lastIndex;
    while (text[read] === ' ') read += 1;
    PART.lastIndex = read;
  }
  if (read === 0 || read !== text.length) throw invalid(duration);
  return total;
}

function invalid(duration: Duration): InvalidDurationException {
  return new InvalidDurationException(
    `Duration ${JSON.stringify(duration)} is not one the test kit reads. Write milliseconds (1500) or units in a row: '30d', '15m', '1h30m', '250ms' (w, d, h, m, s, ms).`,
    { key: String(duration) },
  );
}
