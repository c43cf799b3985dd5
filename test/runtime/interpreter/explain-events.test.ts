import { describe, expect, it } from 'vitest';
import {
  availableEvents,
  defineMachine,
  defineValidationGuard,
  explainAvailableEvents,
  initialize,
  transition,
  type MachineSnapshot,
} from '../../../src/runtime/index.js';

type Ctx = { total: number; owner: string | null; approvals: number };

const withinLimit = defineValidationGuard<Ctx>({
  check: ({ context }) => context.total <= 100,
  message: ({ context }) => `Total ${context.total} is over 100.`,
  field: 'total',
});

const order = defineMachine<Ctx>({
  config: {
    id: 'order',
    initial: 'open',
    context: { total: 50, owner: null, approvals: 0 },
    // An ancestor's guarded transition: listed for every leaf, evaluated like a send.
    on: { ARCHIVE: { target: 'archived', guards: 'hasOwner' } },
    states: {
      open: {
        initial: 'editing',
        on: {
          APPROVE: { target: 'approved', guards: 'withinLimit' },
          CLAIM: { actions: 'claim' },
          // Nearest declaration wins: the leaf's own ARCHIVE overrides the root's.
          NOTE: { guards: 'hasOwner' },
          PAY: { target: 'approved', guards: 'amountAtLeastTotal' },
          // First branch reads the payload, the second decides either way.
          RUSH: [{ target: 'approved', guards: 'amountAtLeastTotal' }, { target: 'approved' }],
          // First branch reads the payload, the second fails: only a send can tell.
          SPLIT: [{ target: 'approved', guards: 'amountAtLeastTotal' }, { guards: 'hasOwner' }],
          // A calculator's change is seen by the guards after it (on the probe's copy).
          COUNT: { guards: 'countedTwice', calculators: 'countApproval' },
          MUTATE: { guards: 'mutatesAndFails' },
        },
        states: {
          editing: { on: { ARCHIVE: { target: 'archived' } } },
        },
      },
      approved: { on: { ARCHIVE: { target: 'archived', guards: 'hasOwner' } } },
      archived: { type: 'final' },
    },
  },
  behavior: {
    guards: {
      withinLimit,
      hasOwner: ({ context }) => context.owner !== null,
      amountAtLeastTotal: ({ context, event }) =>
        Number(event.payload?.['amount']) >= context.total,
      countedTwice: ({ context }) => context.approvals >= 2,
      mutatesAndFails: ({ context }) => {
        context.owner = 'mutated';
        return false;
      },
    },
    calculators: {
      countApproval: ({ context }) => {
        context.approvals += 1;
      },
    },
    actions: {
      claim: ({ context }) => {
        context.owner = 'ann';
      },
    },
  },
});

function at(context: Partial<Ctx>, value = ['order.open.editing']): MachineSnapshot {
  const snapshot = initialize(order).snapshot;
  return { ...snapshot, value, context: { ...snapshot.context, ...context } };
}

function explain(snapshot: MachineSnapshot) {
  return explainAvailableEvents(order, snapshot, availableEvents(order, snapshot));
}

function entry(snapshot: MachineSnapshot, type: string) {
  return explain(snapshot).find((candidate) => candidate.type === type);
}

describe('explainAvailableEvents', () => {
  it('should keep the listing (order, types, sources) and add enabled to every entry', () => {
    const snapshot = at({});
    const plain = availableEvents(order, snapshot);
    const explained = explain(snapshot);

    expect(explained.map(({ type, source }) => ({ type, source }))).toEqual(plain);
    expect(explained.every((event) => 'enabled' in event)).toBe(true);
    // The plain listing is the spec's shape, untouched.
    expect(plain.every((event) => Object.keys(event).sort().join() === 'source,type')).toBe(true);
  });

  it('should say whether an ordinary guard passes now, without a reason', () => {
    expect(entry(at({ owner: null }), 'NOTE')).toEqual({
      type: 'NOTE',
      source: 'parent',
      enabled: false,
    });
    expect(entry(at({ owner: 'ann' }), 'NOTE')).toEqual({
      type: 'NOTE',
      source: 'parent',
      enabled: true,
    });
    expect(entry(at({}), 'CLAIM')).toMatchObject({ enabled: true });
  });

  it("should give a failing validation guard's message as the reason, as a send would answer", () => {
    expect(entry(at({ total: 500 }), 'APPROVE')).toEqual({
      type: 'APPROVE',
      source: 'parent',
      enabled: false,
      reason: 'Total 500 is over 100.',
    });
    expect(entry(at({ total: 80 }), 'APPROVE')).toEqual({
      type: 'APPROVE',
      source: 'parent',
      enabled: true,
    });
    // The message is the one a send answers with.
    const sent = transition(order, at({ total: 500 }), 'APPROVE');
    expect(sent.validationFailure?.message).toBe('Total 500 is over 100.');
  });

  it('should answer null when a guard needs the payload, unless another branch decides', () => {
    expect(entry(at({}), 'PAY')).toMatchObject({ enabled: null });
    expect(entry(at({}), 'RUSH')).toMatchObject({ enabled: true });
    expect(entry(at({ owner: null }), 'SPLIT')).toMatchObject({ enabled: null });
    expect(entry(at({ owner: 'ann' }), 'SPLIT')).toMatchObject({ enabled: true });
  });

  it('should resolve ancestors as a send does: the nearest declaration wins', () => {
    // In `editing` the leaf's unguarded ARCHIVE overrides the root's guarded one.
    expect(entry(at({ owner: null }), 'ARCHIVE')).toMatchObject({ enabled: true });
    // In `approved` the state's own guarded one applies.
    expect(entry(at({ owner: null }, ['order.approved']), 'ARCHIVE')).toMatchObject({
      enabled: false,
    });
    expect(entry(at({ owner: 'ann' }, ['order.approved']), 'ARCHIVE')).toMatchObject({
      enabled: true,
    });
  });

  it('should run calculators before guards on a copy, leaving the snapshot untouched', () => {
    const once = at({ approvals: 1 });
    expect(entry(once, 'COUNT')).toMatchObject({ enabled: true });
    expect(entry(at({ approvals: 0 }), 'COUNT')).toMatchObject({ enabled: false });
    expect(once.context).toEqual({ total: 50, owner: null, approvals: 1 });

    const snapshot = at({ owner: null });
    const before = structuredClone(snapshot);
    expect(entry(snapshot, 'MUTATE')).toMatchObject({ enabled: false });
    expect(snapshot).toEqual(before);
  });

  it('should answer null for a guard that throws, and for a validation message that needs the payload', () => {
    const odd = defineMachine({
      config: {
        id: 'odd',
        initial: 'idle',
        states: {
          idle: {
            on: {
              BROKEN: { guards: 'throws' },
              TOO_SMALL: {
                guards: defineValidationGuard({
                  name: 'neverEnough',
                  check: () => false,
                  message: ({ event }) =>
                    `Amount ${String(event.payload?.['amount'])} is too small.`,
                }),
              },
            },
          },
        },
      },
      behavior: {
        guards: {
          throws: () => {
            throw new Error('boom');
          },
        },
      },
    });
    const snapshot = initialize(odd).snapshot;
    expect(explainAvailableEvents(odd, snapshot, availableEvents(odd, snapshot))).toEqual([
      { type: 'BROKEN', source: 'parent', enabled: null },
      { type: 'TOO_SMALL', source: 'parent', enabled: null },
    ]);
  });

  it('should list nothing for a done instance', () => {
    const done = { ...at({}, ['order.archived']), status: 'done' as const };
    expect(explain(done)).toEqual([]);
  });
});

describe('explainAvailableEvents in parallel states', () => {
  const stopBoth = defineValidationGuard<{ locked: boolean }>({
    check: ({ context }) => !context.locked,
    message: 'The job is locked.',
  });
  const job = defineMachine<{ ready: boolean; locked: boolean }>({
    config: {
      id: 'job',
      initial: 'running',
      context: { ready: false, locked: false },
      states: {
        running: {
          type: 'parallel',
          states: {
            build: {
              initial: 'compiling',
              states: {
                compiling: {
                  on: { NEXT: { target: 'linking', guards: 'ready' }, STOP: 'linking' },
                },
                linking: {},
              },
            },
            test: {
              initial: 'queued',
              states: {
                queued: {
                  on: { NEXT: 'started', STOP: { target: 'started', guards: 'stopBoth' } },
                },
                started: {},
              },
            },
          },
        },
      },
    },
    behavior: { guards: { ready: ({ context }) => context.ready, stopBoth } },
  });

  function explainJob(context: { ready: boolean; locked: boolean }) {
    const snapshot = { ...initialize(job).snapshot, context };
    return explainAvailableEvents(job, snapshot, availableEvents(job, snapshot));
  }

  it("should answer each region's entry for its own transition", () => {
    expect(explainJob({ ready: false, locked: false })).toEqual([
      { type: 'NEXT', source: 'parent', region: 'build', enabled: false },
      { type: 'STOP', source: 'parent', region: 'build', enabled: true },
      { type: 'NEXT', source: 'parent', region: 'test', enabled: true },
      { type: 'STOP', source: 'parent', region: 'test', enabled: true },
    ]);
  });

  it('should refuse an event in every region when one region refuses it (a send is rejected whole)', () => {
    expect(explainJob({ ready: true, locked: true })).toEqual([
      { type: 'NEXT', source: 'parent', region: 'build', enabled: true },
      {
        type: 'STOP',
        source: 'parent',
        region: 'build',
        enabled: false,
        reason: 'The job is locked.',
      },
      { type: 'NEXT', source: 'parent', region: 'test', enabled: true },
      {
        type: 'STOP',
        source: 'parent',
        region: 'test',
        enabled: false,
        reason: 'The job is locked.',
      },
    ]);
  });
});

describe('explainAvailableEvents of forwarded events', () => {
  const card = defineMachine<{ attempts: number }>({
    config: {
      id: 'card',
      initial: 'waiting',
      context: { attempts: 0 },
      states: {
        waiting: { on: { PROVIDE_CARD: { target: 'done', guards: 'attemptsLeft' } } },
        done: { type: 'final' },
      },
    },
    behavior: {
      guards: {
        attemptsLeft: defineValidationGuard<{ attempts: number }>({
          check: ({ context }) => context.attempts < 3,
          message: 'No attempts left.',
        }),
      },
    },
  });
  const shop = defineMachine({
    config: {
      id: 'shop',
      initial: 'paying',
      states: {
        paying: { machine: card, queue: true, forward: ['PROVIDE_CARD'], on: { '@done': 'done' } },
        done: { type: 'final' },
      },
    },
  });
  const parent: MachineSnapshot = { ...initialize(shop).snapshot, value: ['shop.paying'] };
  const child = (attempts: number): MachineSnapshot => ({
    ...initialize(card).snapshot,
    context: { attempts },
  });
  const forwarded = [{ type: 'PROVIDE_CARD', source: 'forward' as const }];

  it("should evaluate the child's guards against the running child's snapshot", () => {
    expect(
      explainAvailableEvents(shop, parent, forwarded, new Map([['shop.paying', child(0)]])),
    ).toEqual([{ type: 'PROVIDE_CARD', source: 'forward', enabled: true }]);
    expect(
      explainAvailableEvents(shop, parent, forwarded, new Map([['shop.paying', child(3)]])),
    ).toEqual([
      { type: 'PROVIDE_CARD', source: 'forward', enabled: false, reason: 'No attempts left.' },
    ]);
  });

  it('should answer null without the child snapshot', () => {
    expect(explainAvailableEvents(shop, parent, forwarded)).toEqual([
      { type: 'PROVIDE_CARD', source: 'forward', enabled: null },
    ]);
  });
});
