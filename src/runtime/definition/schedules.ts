/**
 * Scheduled (cron) events (spec "Events" 7): a cron expression that sends an event to the
 * instances of a machine in given states, registered with the machine's timer registration.
 * Each (schedule, state) pair is swept like a timer of that state whose boundaries are the
 * cron ticks (croner evaluates the expression), so it shares the timers' stays, claims and
 * missed-tick policy.
 */
import { createRequire } from 'node:module';
import type { Cron } from 'croner';
import { InvalidScheduleDefinitionException, type MachineRoutesError } from '../errors.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';
import type { MachineDefinition } from './machine-definition.js';
import { isLeaf } from './state-node.js';
import type { TimedTransition } from './timed-transitions.js';
import type { MissedFirePolicy } from './timer-registration.js';

/** One scheduled event of a machine, as written in its timer registration. */
export interface ScheduleConfig {
  /** Unique per machine; part of the fire records' key. Default: the event type. */
  readonly name?: string;
  /** Cron expression: 5 fields, or 6 with seconds first (croner syntax, e.g. `0 9 * * 1-5`). */
  readonly cron: string;
  /** The event sent to each selected instance at each tick. */
  readonly event: string;
  /**
   * Leaf states (relative to the machine, or full ids) whose instances receive it. Default:
   * every leaf state that handles the event (the original's auto-detection).
   */
  readonly states?: readonly string[];
  /** IANA time zone of the expression (default UTC). */
  readonly timezone?: string;
  /** Ticks missed while no worker ran (default: the registration's `missed`, else `once`). */
  readonly missed?: MissedFirePolicy;
}

true satisfies ExactKeys<ScheduleConfig, typeof KNOWN_KEYS.schedule>;

/** The cron boundaries of a scheduled transition. */
export interface CronTimer {
  readonly kind: 'cron';
  readonly expression: string;
  /** Evaluation only (never started). */
  readonly cron: Cron;
}

// By schedules, then by definition: one registration's schedules select states in each version
// it keeps loaded (pinned, docs/versioning.md).
const cache = new WeakMap<
  readonly ScheduleConfig[],
  WeakMap<MachineDefinition, readonly TimedTransition[]>
>();

/**
 * The (schedule, state) pairs of a machine's schedules, swept like timers. Keys:
 * `<stateId>:<event>:cron:<name>`. Throws nothing: invalid schedules are left out here and
 * reported by {@link checkSchedules}.
 */
export function scheduledTransitions(
  definition: MachineDefinition,
  schedules: readonly ScheduleConfig[] = [],
  missed?: MissedFirePolicy,
): readonly TimedTransition[] {
  let byDefinition = cache.get(schedules);
  if (byDefinition === undefined) {
    byDefinition = new WeakMap();
    cache.set(schedules, byDefinition);
  }
  const known = byDefinition.get(definition);
  if (known !== undefined) return known;
  const found: TimedTransition[] = [];
  for (const schedule of schedules) {
    const cron = parseCron(schedule);
    if (cron === null) continue;
    const name = schedule.name ?? schedule.event;
    const policy = schedule.missed ?? missed;
    for (const stateId of selectedStates(definition, schedule).found) {
      found.push(
        Object.freeze({
          stateId,
          eventType: schedule.event,
          timer: Object.freeze({ kind: 'cron', expression: schedule.cron, cron }),
          key: `${stateId}:${schedule.event}:cron:${name}`,
          ...(policy === undefined ? {} : { missed: policy }),
        }),
      );
    }
  }
  const frozen = Object.freeze(found);
  byDefinition.set(definition, frozen);
  return frozen;
}

/**
 * Problems of a machine's schedules (an unknown key, a bad expression or time zone, an unknown
 * event or state, a duplicate name). `path` is the registration's (`config.timers[0]`); each
 * problem carries its schedule's (`config.timers[0].schedules[1]`) and the key at fault.
 */
export function checkSchedules(
  definition: MachineDefinition,
  schedules: readonly ScheduleConfig[],
  path: string,
): MachineRoutesError[] {
  const issues: MachineRoutesError[] = [];
  const names = new Set<string>();
  schedules.forEach((schedule, index) => {
    const fail = (key: string, message: string): void => {
      issues.push(
        new InvalidScheduleDefinitionException(
          `Schedule '${schedule.name ?? schedule.event}' of machine '${definition.id}': ${message}`,
          { machine: definition.id, path: `${path}.schedules[${index}]`, key },
        ),
      );
    };
    for (const unknown of findUnknownKeys(schedule, KNOWN_KEYS.schedule)) {
      fail(
        unknown.key,
        `${describeUnknownKey(unknown)}. Known keys: ${KNOWN_KEYS.schedule.join(', ')}.`,
      );
    }
    const name = schedule.name ?? schedule.event;
    if (names.has(name)) {
      fail(
        schedule.name === undefined ? 'event' : 'name',
        `the name is used twice. Give each schedule a distinct 'name'.`,
      );
    }
    names.add(name);
    if (parseCron(schedule) === null) {
      // The time zone is at fault when the expression parses without it.
      const utc =
        schedule.timezone !== undefined && parseCron({ ...schedule, timezone: undefined });
      fail(
        utc ? 'timezone' : 'cron',
        `cron ${JSON.stringify(schedule.cron)}${schedule.timezone === undefined ? '' : ` (time zone ${JSON.stringify(schedule.timezone)})`} is not a valid expression. Use 5 fields (minute hour day month weekday) or 6 with seconds first, e.g. '0 9 * * 1-5'.`,
      );
    }
    const handled = [...definition.idMap.values()].some((node) =>
      node.handlers.has(schedule.event),
    );
    if (!handled) {
      fail(
        'event',
        `Schedule references undefined event type \`${schedule.event}\`. Add a transition for it under 'on' in the states that should receive it.`,
      );
      return;
    }
    const { found, unknown } = selectedStates(definition, schedule);
    if (unknown.length > 0) {
      fail(
        'states',
        `states ${unknown.map((state) => `'${state}'`).join(', ')} are not leaf states of the machine that handle '${schedule.event}'.`,
      );
    } else if (found.length === 0) {
      fail('event', `no leaf state handles '${schedule.event}', so no instance could receive it.`);
    }
  });
  return issues;
}

// croner on first use (CommonJS, so a definition stays synchronous): most machines have no
// schedules, and a server whose machines have none never loads it.
let croner: typeof import('croner') | undefined;

function parseCron(schedule: ScheduleConfig): Cron | null {
  if (typeof schedule.cron !== 'string') return null;
  croner ??= createRequire(import.meta.url)('croner') as typeof import('croner');
  try {
    return new croner.Cron(schedule.cron, {
      paused: true,
      ...(schedule.timezone === undefined ? { timezone: 'UTC' } : { timezone: schedule.timezone }),
    });
  } catch {
    return null;
  }
}

// Leaf states the schedule sends to (full ids), and names in `states` that are not such a state.
function selectedStates(
  definition: MachineDefinition,
  schedule: ScheduleConfig,
): { found: string[]; unknown: string[] } {
  const handles = (stateId: string): boolean => {
    const node = definition.idMap.get(stateId);
    return node !== undefined && isLeaf(node) && node.handlers.has(schedule.event);
  };
  if (schedule.states === undefined) {
    return { found: [...definition.idMap.keys()].filter(handles), unknown: [] };
  }
  const found: string[] = [];
  const unknown: string[] = [];
  for (const state of schedule.states) {
    const full = state.startsWith(`${definition.id}.`) ? state : `${definition.id}.${state}`;
    if (handles(full)) found.push(full);
    else unknown.push(state);
  }
  return { found, unknown };
}
