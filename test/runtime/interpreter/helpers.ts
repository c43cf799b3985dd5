import type { HistoryRecord } from '../../../src/runtime/index.js';

/** Types of history records, in order. */
export function typesOf(history: readonly HistoryRecord[]): string[] {
  return history.map((record) => record.type);
}

/** A clock frozen at one instant. */
export const fixedClock = { now: () => new Date('2026-01-02T03:04:05.678Z') };
