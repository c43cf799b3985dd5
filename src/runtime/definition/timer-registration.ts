/**
 * Timer registration (spec 9.3.0: timers are registered explicitly, one registration per
 * machine with timers). A registered machine's timed transitions are swept by every worker of
 * the runtime; an unregistered machine's never fire, and `check` reports it.
 */
import {
  InvalidTimerDefinitionException,
  TimersNotRegisteredException,
  type MachineRoutesError,
} from '../errors.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';
import type { MachineDefinition } from './machine-definition.js';
import { checkSchedules, scheduledTransitions, type ScheduleConfig } from './schedules.js';
import { timedTransitions, type TimedTransition } from './timed-transitions.js';

/** What a sweep does with `every` boundaries that passed while no worker ran. */
export type MissedFirePolicy = 'once' | 'catch-up' | 'skip';

/** Every policy, in the order the docs list them. */
export const MISSED_FIRE_POLICIES: readonly MissedFirePolicy[] = ['once', 'catch-up', 'skip'];

/** One machine whose timers the runtime fires. */
export interface TimerRegistration {
  readonly machine: MachineDefinition;
  /**
   * Recurring (`every`) boundaries missed while no worker ran: `once` (default) fires one event
   * for all of them, `catch-up` one per boundary, `skip` none (the next boundary fires).
   */
  readonly missed?: MissedFirePolicy;
  /** Scheduled (cron) events sent to the machine's instances (see `ScheduleConfig`). */
  readonly schedules?: readonly ScheduleConfig[];
}

true satisfies ExactKeys<TimerRegistration, typeof KNOWN_KEYS.timers>;

/**
 * What a sweep runs for a registration: the machine's timed transitions, then its schedules.
 * `definition`: a version of the machine the registered definition keeps loaded (pinned,
 * docs/versioning.md), whose instances follow its own timed states; default the registered one.
 */
export function registrationTimers(
  registration: TimerRegistration,
  definition: MachineDefinition = registration.machine,
): readonly TimedTransition[] {
  const schedules = scheduledTransitions(definition, registration.schedules, registration.missed);
  const timers = timedTransitions(definition);
  return schedules.length === 0 ? timers : [...timers, ...schedules];
}

/**
 * Every timer a sweep looks for candidates of: the registered definition's and those of each
 * version it keeps loaded (pinned), once per state and key. A candidate found by one version's
 * timer is delivered with its own version's timers (timer-delivery.ts).
 */
export function sweptTimers(registration: TimerRegistration): readonly TimedTransition[] {
  const pinned = registration.machine.pinned;
  const own = registrationTimers(registration);
  if (pinned === undefined || pinned.size === 0) return own;
  // A schedule of each version selects that version's states (its key is the same).
  const identity = (timer: TimedTransition): string =>
    timer.selection?.kind === 'states'
      ? `${timer.key} ${timer.selection.stateIds.join(' ')}`
      : `${timer.stateId} ${timer.key}`;
  const seen = new Set(own.map(identity));
  const all = [...own];
  for (const old of pinned.values()) {
    for (const timer of registrationTimers(registration, old)) {
      const key = identity(timer);
      if (seen.has(key)) continue;
      seen.add(key);
      all.push(timer);
    }
  }
  return all;
}

/**
 * Problems of the timer registrations for `machines` (every machine the application runs,
 * children included): a machine with timed transitions and no registration, a machine
 * registered twice, an unknown key or `missed` policy, and the schedules' problems. Each
 * problem of an entry carries `path: 'config.timers[<i>]'` (`...schedules[<j>]` for a
 * schedule) and the key, so `check` points at the entry's own line of the config.
 */
export function checkTimerRegistrations(
  machines: Iterable<MachineDefinition>,
  registrations: readonly TimerRegistration[] = [],
): MachineRoutesError[] {
  const issues: MachineRoutesError[] = [];
  const registered = new Set<string>();
  registrations.forEach((registration, index) => {
    const id = registration.machine.id;
    const path = `config.timers[${index}]`;
    if (registered.has(id)) {
      issues.push(
        new InvalidTimerDefinitionException(
          `Machine '${id}' is registered for timers twice. Keep one entry for it in 'timers'.`,
          { machine: id, path, key: 'machine' },
        ),
      );
    }
    registered.add(id);
    for (const unknown of findUnknownKeys(registration, KNOWN_KEYS.timers)) {
      issues.push(
        new InvalidTimerDefinitionException(
          `The timer registration of '${id}' has ${describeUnknownKey(unknown)}. Known keys: ${KNOWN_KEYS.timers.join(', ')}.`,
          { machine: id, path, key: unknown.key },
        ),
      );
    }
    const { missed } = registration;
    if (missed !== undefined && !MISSED_FIRE_POLICIES.includes(missed)) {
      issues.push(
        new InvalidTimerDefinitionException(
          `The timer registration of '${id}' has missed: ${JSON.stringify(missed)}. Use one of: ${MISSED_FIRE_POLICIES.join(', ')}.`,
          { machine: id, path, key: 'missed' },
        ),
      );
    }
    issues.push(
      ...checkSchedules(registration.machine, registration.schedules ?? [], path, missed),
    );
  });
  for (const machine of machines) {
    const [first] = timedTransitions(machine);
    if (first === undefined || registered.has(machine.id)) continue;
    const route = first.stateId.slice(machine.id.length + 1);
    issues.push(
      new TimersNotRegisteredException(
        `Machine '${machine.id}' has timed transitions (state '${route}', event '${first.eventType}') but is not registered for timers, so they would never fire. ` +
          `Add { machine: <the ${machine.id} definition> } to 'timers' in the config (timers are registered explicitly since 9.3.0).`,
        { machine: machine.id, path: route, key: first.eventType },
      ),
    );
  }
  return issues;
}
