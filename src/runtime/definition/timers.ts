/**
 * Validation of `after` / `every` timer specs: durations in seconds, `max` and `then` of
 * recurring timers. The sweep that fires them is `engine/timers/timer-sweep.ts` (see docs/timers.md).
 */
import { InvalidTimerDefinitionException } from '../errors.js';
import { isUserEventType } from './event-type.js';
import type { IssueCollector, IssueLocation } from './issues.js';
import type { TimerSpec, TransitionConfig } from './types.js';

/** A normalized timed transition. */
export interface TimerDefinition {
  readonly kind: 'after' | 'every';
  readonly seconds: number;
  /** `every` only: stop after this many fires. */
  readonly max: number | undefined;
  /** `every` with `max`: the event sent once when `max` is reached. */
  readonly then: string | undefined;
}

const UNIT_SECONDS: Record<string, number> = {
  seconds: 1,
  minutes: 60,
  hours: 3600,
  days: 86_400,
  weeks: 604_800,
};

function toSeconds(
  spec: unknown,
  field: string,
  where: IssueLocation,
  issues: IssueCollector,
): number | undefined {
  const fix = `Use a positive number of seconds or an object such as { minutes: 5 }.`;
  if (typeof spec === 'number') {
    if (Number.isFinite(spec) && spec > 0) return spec;
    issues.add(
      InvalidTimerDefinitionException,
      where,
      `transition '${where.key}': '${field}' must be positive, got ${spec}.`,
      fix,
    );
    return undefined;
  }
  if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) {
    const entries = Object.entries(spec);
    const unknown = entries.filter(([unit]) => !(unit in UNIT_SECONDS)).map(([unit]) => unit);
    if (entries.length === 0 || unknown.length > 0) {
      const what = entries.length === 0 ? 'is empty' : `has unknown units: ${unknown.join(', ')}`;
      issues.add(
        InvalidTimerDefinitionException,
        where,
        `transition '${where.key}': '${field}' ${what}.`,
        `Allowed units: ${Object.keys(UNIT_SECONDS).join(', ')}.`,
      );
      return undefined;
    }
    let seconds = 0;
    for (const [unit, amount] of entries) {
      if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0) {
        issues.add(
          InvalidTimerDefinitionException,
          where,
          `transition '${where.key}': '${field}.${unit}' must be a non-negative number, got ${JSON.stringify(amount)}.`,
          fix,
        );
        return undefined;
      }
      seconds += amount * (UNIT_SECONDS[unit] ?? 0);
    }
    if (seconds > 0) return seconds;
    issues.add(
      InvalidTimerDefinitionException,
      where,
      `transition '${where.key}': '${field}' must be positive, got 0 seconds.`,
      fix,
    );
    return undefined;
  }
  issues.add(
    InvalidTimerDefinitionException,
    where,
    `transition '${where.key}': '${field}' must be a number or a duration object, got ${JSON.stringify(spec)}.`,
    fix,
  );
  return undefined;
}

/** Checks the timer keys of one transition; `null` when it has none or they are invalid. */
export function normalizeTimer(
  config: TransitionConfig,
  where: IssueLocation,
  issues: IssueCollector,
): TimerDefinition | null {
  const { after, every, max, then } = config;
  if (after === undefined && every === undefined) {
    if (max !== undefined || then !== undefined) {
      issues.add(
        InvalidTimerDefinitionException,
        where,
        `transition '${where.key}': '${max !== undefined ? 'max' : 'then'}' is set without 'every'.`,
        `Add { every: <duration> } or remove it.`,
      );
    }
    return null;
  }
  if (after !== undefined && every !== undefined) {
    issues.add(
      InvalidTimerDefinitionException,
      where,
      `transition '${where.key}': a transition cannot have both 'after' and 'every'.`,
      'Split it into two transitions.',
    );
    return null;
  }
  if (after !== undefined) {
    if (max !== undefined || then !== undefined) {
      issues.add(
        InvalidTimerDefinitionException,
        where,
        `transition '${where.key}': 'max'/'then' only apply to 'every', not 'after'.`,
        `Use { every: ..., max: n, then: 'EVENT' }.`,
      );
      return null;
    }
    const seconds = toSeconds(after satisfies TimerSpec, 'after', where, issues);
    return seconds === undefined
      ? null
      : Object.freeze({ kind: 'after', seconds, max: undefined, then: undefined });
  }
  const seconds = toSeconds(every, 'every', where, issues);
  let valid = seconds !== undefined;
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) {
    issues.add(
      InvalidTimerDefinitionException,
      where,
      `transition '${where.key}': 'max' must be a positive integer, got ${JSON.stringify(max)}.`,
    );
    valid = false;
  }
  if (
    then !== undefined &&
    (max === undefined || typeof then !== 'string' || !isUserEventType(then))
  ) {
    const problem =
      max === undefined
        ? `'then' requires 'max'.`
        : `'then' must be a user event type, got ${JSON.stringify(then)}.`;
    issues.add(
      InvalidTimerDefinitionException,
      where,
      problem,
      `Use { every: ..., max: 3, then: 'GIVE_UP' }.`,
    );
    valid = false;
  }
  return valid && seconds !== undefined
    ? Object.freeze({ kind: 'every', seconds, max, then })
    : null;
}
