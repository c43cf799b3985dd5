/**
 * Scheduled (cron) events (spec "Events" 7): a cron expression that sends an event to instances
 * of a machine, registered with the machine's timer registration. A schedule selects the
 * instances of each tick by their states (the default), as every running instance of the
 * machine (`instances: 'all'`), or by a resolver function the worker calls (`resolver`).
 * Each schedule is swept like a timer of the machine's root state, whose stay is the instance's
 * life (from its creation) and whose boundaries are the cron ticks (croner evaluates the
 * expression): one fire row per instance and schedule, so a tick reaches an instance once,
 * however many of its states match.
 */
import type { Cron } from 'croner';
import { InvalidScheduleDefinitionException, type MachineRoutesError } from '../errors.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';
import { requireVendored } from '../own-root.js';
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
  /**
   * `'all'`: every running (not finished, not paused) instance of the machine receives each
   * tick, whatever its state (created before the tick). Not with `states` or `resolver`.
   */
  readonly instances?: 'all';
  /**
   * The instances a tick reaches, decided by the application (e.g. a query of its own tables):
   * called by the worker's timer sweep once per tick and process, outside any lock or
   * transaction, and may be async. Its answer only selects: each instance still receives the
   * tick at most once (the fire row's claim), so it may be called again for the same tick (a
   * restarted or second worker) and must answer the same. Ids of other machines, unknown,
   * finished or paused instances are skipped. Not with `states`, `instances` or
   * `missed: 'catch-up'` (it answers for the latest tick only).
   */
  readonly resolver?: ScheduleResolver;
}

/** A schedule's `resolver`: the ids of the instances `tick` reaches. */
export type ScheduleResolver = (
  tick: ScheduleTick,
) => Iterable<string> | AsyncIterable<string> | Promise<Iterable<string>>;

/** What a resolver is told. */
export interface ScheduleTick {
  readonly machineId: string;
  /** The schedule's name (default: its event). */
  readonly schedule: string;
  readonly event: string;
  /** The tick (the latest at or before now). */
  readonly at: Date;
}

/** How a schedule selects the instances of a tick. */
export type ScheduleSelection =
  | { readonly kind: 'states'; readonly stateIds: readonly string[] }
  | { readonly kind: 'all' }
  | { readonly kind: 'resolver'; readonly resolver: ScheduleResolver; readonly name: string };

true satisfies ExactKeys<ScheduleConfig, typeof KNOWN_KEYS.schedule>;

/**
 * What the runtime asks of a parsed cron expression: croner's `Cron`, named by its members so
 * the published declarations need no croner (the package ships its own copy, scripts/vendor.js).
 */
export interface CronEvaluation {
  /** The first tick after `from`, or null when there is none. */
  nextRun(from?: Date): Date | null;
  /** The `count` latest ticks before `from`, latest first. */
  previousRuns(count: number, from?: Date): Date[];
}

/** The cron boundaries of a scheduled transition. */
export interface CronTimer {
  readonly kind: 'cron';
  readonly expression: string;
  /** Evaluation only (never started). */
  readonly cron: CronEvaluation;
}

// The policies (timer-registration.ts imports this module, so the list is not imported back).
const MISSED_POLICIES: readonly MissedFirePolicy[] = ['once', 'catch-up', 'skip'];

// By schedules, then by definition: one registration's schedules select states in each version
// it keeps loaded (pinned, docs/versioning.md).
const cache = new WeakMap<
  readonly ScheduleConfig[],
  WeakMap<MachineDefinition, readonly TimedTransition[]>
>();

/**
 * The schedules of a machine, swept like timers of its root state (`stateId` is the machine id;
 * the stay is the instance's life). Keys: `<machineId>:<event>:cron:<name>`, one fire row per
 * instance and schedule. Throws nothing: invalid schedules are left out here and reported by
 * {@link checkSchedules}.
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
    let selection: ScheduleSelection;
    if (typeof schedule.resolver === 'function')
      selection = Object.freeze({ kind: 'resolver', resolver: schedule.resolver, name });
    else if (schedule.instances === 'all') selection = Object.freeze({ kind: 'all' });
    else {
      const stateIds = selectedStates(definition, schedule).found;
      if (stateIds.length === 0) continue;
      selection = Object.freeze({ kind: 'states', stateIds: Object.freeze(stateIds) });
    }
    found.push(
      Object.freeze({
        stateId: definition.id,
        eventType: schedule.event,
        timer: Object.freeze({ kind: 'cron', expression: schedule.cron, cron }),
        key: `${definition.id}:${schedule.event}:cron:${name}`,
        selection,
        ...(policy === undefined ? {} : { missed: policy }),
      }),
    );
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
  missed?: MissedFirePolicy,
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
    const selectors = (['states', 'instances', 'resolver'] as const).filter(
      (key) => schedule[key] !== undefined,
    );
    if (selectors.length > 1) {
      fail(
        selectors[1]!,
        `'${selectors.join("' and '")}' both select instances. Keep one of 'states', 'instances' or 'resolver'.`,
      );
    }
    if (schedule.instances !== undefined && schedule.instances !== 'all') {
      fail(
        'instances',
        `instances: ${JSON.stringify(schedule.instances)} is not a selection. Use 'all' (every running instance), or 'states' or 'resolver'.`,
      );
    }
    if (schedule.resolver !== undefined) {
      if (typeof schedule.resolver !== 'function') {
        fail(
          'resolver',
          `resolver is ${typeof schedule.resolver}, not a function. Give a function of the tick returning instance ids.`,
        );
      } else if ((schedule.missed ?? missed) === 'catch-up') {
        fail(
          schedule.missed === undefined ? 'resolver' : 'missed',
          `missed: 'catch-up'${schedule.missed === undefined ? " (the registration's)" : ''} needs one answer per missed tick, and a resolver answers for the latest tick only. Give the schedule missed: 'once' or 'skip'.`,
        );
      }
    }
    if (schedule.missed !== undefined && !MISSED_POLICIES.includes(schedule.missed)) {
      fail(
        'missed',
        `missed: ${JSON.stringify(schedule.missed)} is not a policy. Use one of: ${MISSED_POLICIES.join(', ')}.`,
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
    if (schedule.instances !== undefined || schedule.resolver !== undefined) return;
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
// schedules, and a server whose machines have none never loads it. The published package carries
// its own copy (requireVendored).
let croner: typeof import('croner') | undefined;

function parseCron(schedule: ScheduleConfig): Cron | null {
  if (typeof schedule.cron !== 'string') return null;
  croner ??= requireVendored<typeof import('croner')>('croner');
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
