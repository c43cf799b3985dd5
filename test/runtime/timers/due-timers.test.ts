/**
 * The pure due-timer rules: deadlines, recurring counts, `max`/`then`, stays, missed periods.
 */
import { describe, expect, it } from 'vitest';
import {
  checkTimerRegistrations,
  registrationTimers,
  timedTransitions,
} from '../../../src/runtime/definition/index.js';
import type { ScheduleConfig } from '../../../src/runtime/definition/schedules.js';
import type { TimedTransition } from '../../../src/runtime/definition/timed-transitions.js';
import { dueScheduledTick } from '../../../src/runtime/interpreter/due-ticks.js';
import type { TimerFireState } from '../../../src/runtime/interpreter/due-timers.js';
import { dueFire, dueTimers, nextFireAt } from '../../../src/runtime/interpreter/index.js';
import { expiringMachine, pollingMachine, remindedMachine } from './fixtures/machines.js';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

const [expire] = timedTransitions(expiringMachine);
const [poll, tick] = timedTransitions(pollingMachine);

describe('timedTransitions', () => {
  it('should list leaf timers with their keys, leaving out reserved events', () => {
    expect(timedTransitions(expiringMachine).map((timer) => timer.key)).toEqual([
      'expiring.pending:EXPIRE:60',
    ]);
    expect(timedTransitions(pollingMachine).map((timer) => timer.key)).toEqual([
      'polling.polling:POLL:10',
      'polling.steady:TICK:10',
    ]);
  });
});

describe('after', () => {
  it('should be due once the stay reaches the duration, at the deadline', () => {
    expect(dueFire(expire!, T0, null, at(59.999))).toBeNull();
    expect(dueFire(expire!, T0, null, at(60))).toMatchObject({
      eventType: 'EXPIRE',
      expected: null,
      next: { fireCount: 1, lastFiredAt: iso(60), status: 'fired' },
    });
  });

  it('should fire once per stay, even long after the deadline', () => {
    expect(dueFire(expire!, T0, null, at(86_400))?.next.fireCount).toBe(1);
    const fired = { fireCount: 1, lastFiredAt: iso(60), status: 'fired' as const };
    expect(dueFire(expire!, T0, fired, at(86_400))).toBeNull();
  });

  it('should ignore the record of an earlier stay and restart from the new entry', () => {
    const earlier = {
      stateEnteredAt: T0,
      fireCount: 1,
      lastFiredAt: iso(60),
      status: 'fired' as const,
    };
    const fires = new Map([[expire!.key, earlier]]);
    const stays = [{ stateId: 'expiring.pending', enteredAt: iso(100) }];
    expect(dueTimers(timedTransitions(expiringMachine), stays, fires, at(159))).toEqual([]);
    expect(dueTimers(timedTransitions(expiringMachine), stays, fires, at(160))).toMatchObject([
      { eventType: 'EXPIRE', expected: null, stateEnteredAt: iso(100) },
    ]);
  });

  it('should not be due when its state is not active', () => {
    const stays = [{ stateId: 'expiring.away', enteredAt: T0 }];
    expect(dueTimers(timedTransitions(expiringMachine), stays, new Map(), at(1000))).toEqual([]);
  });
});

describe('every', () => {
  it('should fire at each boundary, counting, then send `then` one period after the last', () => {
    const first = dueFire(poll!, T0, null, at(10));
    expect(first).toMatchObject({
      eventType: 'POLL',
      next: { fireCount: 1, lastFiredAt: iso(10), status: 'active' },
    });
    expect(dueFire(poll!, T0, first!.next, at(19.9))).toBeNull();
    const second = dueFire(poll!, T0, first!.next, at(20));
    const third = dueFire(poll!, T0, second!.next, at(30));
    expect(third?.next).toEqual({ fireCount: 3, lastFiredAt: iso(30), status: 'active' });
    expect(dueFire(poll!, T0, third!.next, at(39))).toBeNull();
    const then = dueFire(poll!, T0, third!.next, at(40));
    expect(then).toMatchObject({ eventType: 'GIVE_UP', expected: third!.next });
    expect(then?.next).toEqual({ fireCount: 3, lastFiredAt: iso(40), status: 'exhausted' });
    expect(dueFire(poll!, T0, then!.next, at(1000))).toBeNull();
  });

  it('should exhaust at the last fire when there is no `then`', () => {
    const first = dueFire(tick!, T0, null, at(10));
    const second = dueFire(tick!, T0, first!.next, at(20));
    expect(second?.next.status).toBe('exhausted');
    expect(dueFire(tick!, T0, second!.next, at(1000))).toBeNull();
  });

  it.each([
    ['once', [{ count: 1, at: 50 }]],
    [
      'catch-up',
      [
        { count: 1, at: 10 },
        { count: 2, at: 20 },
        { count: 3, at: 30 },
      ],
    ],
    ['skip', []],
  ] as const)('should follow missed: %s after five missed boundaries', (missed, expected) => {
    // Down from the start to t=55 (boundaries 10..50 missed); repeat until nothing is due.
    const fires: { count: number; at: number }[] = [];
    let record = null;
    for (let round = 0; round < 10; round += 1) {
      const fire = dueFire(poll!, T0, record, at(55), missed);
      if (fire === null || fire.eventType !== 'POLL') break;
      fires.push({
        count: fire.next.fireCount,
        at: (Date.parse(fire.next.lastFiredAt) - Date.parse(T0)) / 1000,
      });
      record = fire.next;
    }
    expect(fires).toEqual(expected);
  });

  it('should fire a boundary that just passed under missed: skip, and the next one after an outage', () => {
    expect(dueFire(poll!, T0, null, at(10.5), 'skip')?.next.lastFiredAt).toBe(iso(10));
    // Down from 10 to 55: boundaries 10..50 dropped, 60 fires.
    expect(dueFire(poll!, T0, null, at(55), 'skip')).toBeNull();
    expect(dueFire(poll!, T0, null, at(60), 'skip')?.next).toEqual({
      fireCount: 1,
      lastFiredAt: iso(60),
      status: 'active',
    });
  });
});

describe('schedules', () => {
  const CREATED = '2026-01-01T00:00:00.000Z';
  const schedule = (extra: Partial<ScheduleConfig> = {}) =>
    registrationTimers({
      machine: remindedMachine,
      schedules: [{ cron: '0 * * * *', event: 'REMIND', states: ['open'], ...extra }],
    })[0]!;
  const open = (enteredAt: string) => [{ stateId: 'reminded.open', enteredAt }];
  /** The ticks delivered one after the other at `now`, each recorded before the next. */
  const ticks = (
    timer: TimedTransition,
    stays: { stateId: string; enteredAt: string }[],
    now: Date,
    resolved?: Map<string, string>,
  ): string[] => {
    const delivered: string[] = [];
    let record: (TimerFireState & { stateEnteredAt: string }) | null = null;
    for (let round = 0; round < 10; round += 1) {
      const instance = { createdAt: CREATED, stays, ...(resolved ? { resolved } : {}) };
      const fire = dueScheduledTick(timer, instance, record, now);
      if (fire === null) break;
      delivered.push(fire.next.lastFiredAt);
      record = { ...fire.next, stateEnteredAt: fire.stateEnteredAt };
    }
    return delivered;
  };

  it('should be one timer of the root state per schedule, one key per instance', () => {
    const timers = registrationTimers({
      machine: remindedMachine,
      schedules: [
        { cron: '0 * * * *', event: 'REMIND' },
        { name: 'all', cron: '0 * * * *', event: 'REMIND', instances: 'all' },
        { name: 'some', cron: '0 * * * *', event: 'REMIND', resolver: () => [] },
      ],
    });
    expect(timers.map((timer) => [timer.stateId, timer.key, timer.selection?.kind])).toEqual([
      ['reminded', 'reminded:REMIND:cron:REMIND', 'states'],
      ['reminded', 'reminded:REMIND:cron:all', 'all'],
      ['reminded', 'reminded:REMIND:cron:some', 'resolver'],
    ]);
    expect(timers[0]!.selection).toEqual({
      kind: 'states',
      stateIds: ['reminded.open', 'reminded.snoozed'],
    });
  });

  it('should be due at the first tick after the stay began, then at each tick', () => {
    const entered = '2026-01-01T00:10:00.000Z';
    const instance = { createdAt: CREATED, stays: open(entered) };
    expect(
      dueScheduledTick(schedule(), instance, null, new Date('2026-01-01T00:59:59.999Z')),
    ).toBeNull();
    const first = dueScheduledTick(schedule(), instance, null, new Date('2026-01-01T01:00:00Z'));
    expect(first).toMatchObject({
      stateEnteredAt: CREATED,
      next: { fireCount: 1, lastFiredAt: '2026-01-01T01:00:00.000Z', status: 'active' },
    });
    const row = { ...first!.next, stateEnteredAt: CREATED };
    expect(
      dueScheduledTick(schedule(), instance, row, new Date('2026-01-01T01:59:00.000Z')),
    ).toBeNull();
    // Not in a selected state: nothing.
    const away = {
      createdAt: CREATED,
      stays: [{ stateId: 'reminded.closed', enteredAt: entered }],
    };
    expect(dueScheduledTick(schedule(), away, null, new Date('2026-01-01T05:00:00Z'))).toBeNull();
  });

  it('should deliver a tick once to an instance in several selected states', () => {
    const both = registrationTimers({
      machine: remindedMachine,
      schedules: [{ cron: '0 * * * *', event: 'REMIND', states: ['open', 'snoozed'] }],
    })[0]!;
    const stays = [
      { stateId: 'reminded.open', enteredAt: '2026-01-01T00:10:00.000Z' },
      { stateId: 'reminded.snoozed', enteredAt: '2026-01-01T00:20:00.000Z' },
    ];
    expect(ticks(both, stays, new Date('2026-01-01T01:30:00Z'))).toEqual([
      '2026-01-01T01:00:00.000Z',
    ]);
  });

  it('should not deliver again a tick recorded under the per-state keys of before', () => {
    const stays = open('2026-01-01T00:10:00.000Z');
    const legacy = new Map([
      [
        'reminded.open:REMIND:cron:REMIND',
        {
          fireCount: 1,
          lastFiredAt: '2026-01-01T01:00:00.000Z',
          status: 'active' as const,
          stateEnteredAt: '2026-01-01T00:10:00.000Z',
        },
      ],
    ]);
    const now = new Date('2026-01-01T01:30:00Z');
    const instance = { createdAt: CREATED };
    expect(dueTimers([schedule()], stays, legacy, now, 'once', instance)).toEqual([]);
    expect(
      dueTimers([schedule()], stays, legacy, new Date('2026-01-01T02:00:00Z'), 'once', instance),
    ).toHaveLength(1);
    // Without the instance (a caller that knows nothing of schedules), schedules are left out.
    expect(dueTimers([schedule()], stays, new Map(), new Date('2026-01-01T02:00:00Z'))).toEqual([]);
  });

  it('should reach every instance created before the tick with instances: all', () => {
    const all = schedule({ states: undefined, instances: 'all' });
    expect(ticks(all, [], new Date('2026-01-01T00:59:00Z'))).toEqual([]);
    expect(ticks(all, [], new Date('2026-01-01T01:00:00Z'))).toEqual(['2026-01-01T01:00:00.000Z']);
  });

  it('should reach an instance with a resolver only for the tick it was named for', () => {
    const some = schedule({ states: undefined, resolver: () => [] });
    const now = new Date('2026-01-01T03:10:00Z');
    expect(ticks(some, [], now)).toEqual([]);
    const named = new Map([[some.key, '2026-01-01T03:00:00.000Z']]);
    expect(ticks(some, [], now, named)).toEqual(['2026-01-01T03:00:00.000Z']);
    // skip: a tick named too late is dropped.
    const late = schedule({ states: undefined, resolver: () => [], missed: 'skip' });
    const stale = new Map([[late.key, '2026-01-01T03:00:00.000Z']]);
    expect(ticks(late, [], now, stale)).toEqual([]);
  });

  it.each([
    ['once', ['2026-01-01T04:00:00.000Z']],
    [
      'catch-up',
      [
        '2026-01-01T01:00:00.000Z',
        '2026-01-01T02:00:00.000Z',
        '2026-01-01T03:00:00.000Z',
        '2026-01-01T04:00:00.000Z',
      ],
    ],
    ['skip', []],
  ] as const)('should follow missed: %s for ticks missed during an outage', (missed, expected) => {
    const now = new Date('2026-01-01T04:40:00.000Z');
    expect(ticks(schedule({ missed }), open('2026-01-01T00:10:00.000Z'), now)).toEqual(expected);
  });

  it('should report invalid schedules', () => {
    const issues = checkTimerRegistrations(
      [remindedMachine],
      [
        {
          machine: remindedMachine,
          schedules: [
            { cron: 'every day', event: 'REMIND' },
            { cron: '0 * * * *', event: 'NUDGE' },
            { name: 'x', cron: '0 * * * *', event: 'REMIND', states: ['closed', 'nowhere'] },
          ],
        },
      ],
    );
    expect(issues.map((issue) => [issue.code, issue.message])).toEqual([
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        `Schedule 'REMIND' of machine 'reminded': cron "every day" is not a valid expression. Use 5 fields (minute hour day month weekday) or 6 with seconds first, e.g. '0 9 * * 1-5'.`,
      ],
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        "Schedule 'NUDGE' of machine 'reminded': Schedule references undefined event type `NUDGE`. Add a transition for it under 'on' in the states that should receive it.",
      ],
      [
        'MR_INVALID_SCHEDULE_DEFINITION',
        "Schedule 'x' of machine 'reminded': states 'closed', 'nowhere' are not leaf states of the machine that handle 'REMIND'.",
      ],
    ]);
  });
});

describe('nextFireAt', () => {
  it('should name the first instant dueFire returns a fire, and null once the stay has none left', () => {
    expect(nextFireAt(expire!, T0, null)).toEqual(at(60));
    expect(dueFire(expire!, T0, null, at(59.999))).toBeNull();
    expect(
      nextFireAt(expire!, T0, { fireCount: 1, lastFiredAt: iso(60), status: 'fired' }),
    ).toBeNull();
    const polled = { fireCount: 2, lastFiredAt: iso(20), status: 'active' as const };
    expect(nextFireAt(poll!, T0, polled)).toEqual(at(30));
    expect(dueFire(poll!, T0, polled, at(29.999))).toBeNull();
    expect(dueFire(poll!, T0, polled, at(30))).not.toBeNull();
    expect(
      nextFireAt(tick!, T0, { fireCount: 2, lastFiredAt: iso(20), status: 'exhausted' }),
    ).toBeNull();
  });
});
