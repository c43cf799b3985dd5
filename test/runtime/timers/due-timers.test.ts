/**
 * The pure due-timer rules: deadlines, recurring counts, `max`/`then`, stays, missed periods.
 */
import { describe, expect, it } from 'vitest';
import {
  checkTimerRegistrations,
  registrationTimers,
  timedTransitions,
} from '../../../src/runtime/definition/index.js';
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
  const hourly = (missed?: 'once' | 'catch-up' | 'skip') =>
    registrationTimers({
      machine: remindedMachine,
      schedules: [
        { cron: '0 * * * *', event: 'REMIND', states: ['open'], ...(missed ? { missed } : {}) },
      ],
    })[0]!;

  it('should select the named states, or every leaf state handling the event', () => {
    expect(
      registrationTimers({
        machine: remindedMachine,
        schedules: [{ cron: '0 * * * *', event: 'REMIND' }],
      }).map((timer) => timer.key),
    ).toEqual(['reminded.open:REMIND:cron:REMIND', 'reminded.snoozed:REMIND:cron:REMIND']);
    expect(hourly().key).toBe('reminded.open:REMIND:cron:REMIND');
  });

  it('should be due at the first tick after the stay began, then at each tick', () => {
    const entered = '2026-01-01T00:10:00.000Z';
    expect(dueFire(hourly(), entered, null, new Date('2026-01-01T00:59:59.999Z'))).toBeNull();
    const first = dueFire(hourly(), entered, null, new Date('2026-01-01T01:00:00.000Z'));
    expect(first?.next).toEqual({
      fireCount: 1,
      lastFiredAt: '2026-01-01T01:00:00.000Z',
      status: 'active',
    });
    expect(
      dueFire(hourly(), entered, first!.next, new Date('2026-01-01T01:59:00.000Z')),
    ).toBeNull();
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
    const ticks: string[] = [];
    let record = null;
    for (let round = 0; round < 10; round += 1) {
      const fire = dueFire(hourly(missed), '2026-01-01T00:10:00.000Z', record, now);
      if (fire === null) break;
      ticks.push(fire.next.lastFiredAt);
      record = fire.next;
    }
    expect(ticks).toEqual(expected);
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
