import { describe, expect, it } from 'vitest';
import {
  completeChild,
  defineMachine,
  initialize,
  transition,
  type BehaviorArgs,
  type CancelChildEffect,
  type EventObject,
  type MachineDefinition,
  type PersistChildEffect,
  type StartChildEffect,
} from '../../../src/runtime/index.js';
import { paymentMachine } from '../../../fixtures/delegation/children.js';
import { fixedClock, typesOf } from '../interpreter/helpers.js';

/** A child that finishes at once, in `approved` or `rejected` depending on its input. */
const reviewChild = defineMachine({
  config: {
    id: 'review',
    initial: 'deciding',
    context: { score: 0 },
    states: {
      deciding: {
        on: {
          '@always': [{ target: 'approved', guards: 'highScore' }, { target: 'rejected' }],
        },
      },
      approved: { type: 'final', output: ['score'] },
      rejected: { type: 'final' },
    },
  },
  behavior: { guards: { highScore: ({ context }) => (context.score as number) >= 50 } },
});

/** A child that throws while starting. */
const brokenChild = defineMachine({
  config: { id: 'broken', initial: 'a', entry: 'explode', states: { a: {} } },
  behavior: {
    actions: {
      explode: () => {
        throw new Error('boom');
      },
    },
  },
});

const seen: EventObject[] = [];
const remember = ({ event }: BehaviorArgs) => void seen.push(event);

function parentOf(
  child: MachineDefinition,
  on: Record<string, unknown>,
  extra = {},
): MachineDefinition {
  return defineMachine({
    config: {
      id: 'parent',
      initial: 'idle',
      context: { score: 0, label: 'x' },
      states: {
        idle: { on: { START: { target: 'reviewing', actions: 'setScore' } } },
        reviewing: { machine: child, input: ['score'], on: on as never, ...extra },
        accepted: { type: 'final' },
        declined: { type: 'final' },
        failed: { type: 'final' },
        waiting: { on: { RETRY: 'reviewing' } },
      },
    },
    behavior: {
      actions: {
        setScore: ({ context, event }) => {
          context.score = event.payload?.score as number;
        },
        remember,
      },
      guards: {
        isHigh: ({ event }) => (event.payload?.output as { score?: number })?.score === 99,
      },
    },
  });
}

function start(definition: MachineDefinition, score: number) {
  const initial = initialize(definition, fixedClock).snapshot;
  return transition(definition, initial, { type: 'START', payload: { score } }, fixedClock);
}

describe('synchronous child machines', () => {
  it('should run the child inside the macrostep and route @done with its output', () => {
    seen.length = 0;
    const parent = parentOf(reviewChild, { '@done': { target: 'accepted', actions: 'remember' } });

    const { snapshot, history, effects } = start(parent, 70);

    expect(snapshot.value).toEqual(['parent.accepted']);
    expect(seen).toEqual([
      {
        type: '@done',
        payload: {
          childId: expect.any(String),
          childMachineId: 'review',
          finalState: 'approved',
          output: { score: 70 },
        },
        actor: null,
      },
    ]);
    expect(typesOf(history)).toEqual([
      'START',
      'parent.transition.idle.START.start',
      'parent.state.idle.exit',
      'parent.action.setScore.start',
      'parent.action.setScore.finish',
      'parent.transition.idle.START.finish',
      'parent.state.reviewing.enter',
      'parent.child.review.start',
      'parent.child.review.done',
      'parent.transition.reviewing.@done.start',
      'parent.state.reviewing.exit',
      'parent.action.remember.start',
      'parent.action.remember.finish',
      'parent.transition.reviewing.@done.finish',
      'parent.state.accepted.enter',
      'parent.finish',
    ]);
    const persist = effects.find((effect) => effect.kind === 'persistChild') as PersistChildEffect;
    expect(persist).toMatchObject({
      kind: 'persistChild',
      parentMachineId: 'parent',
      parentId: snapshot.id,
      parentStateId: 'parent.reviewing',
      childMachineId: 'review',
      status: 'completed',
      snapshot: {
        machineId: 'review',
        value: ['review.approved'],
        context: { score: 70 },
        status: 'done',
        parent: { machineId: 'parent', id: snapshot.id },
      },
    });
    expect(persist.childId).toBe(persist.snapshot.id);
    expect(persist.history[0]).toMatchObject({ id: persist.childId, type: 'review.start' });
    // Routed in the same macrostep: leaving the state has nothing to cancel.
    expect(effects.map((effect) => effect.kind)).toEqual(['persistChild']);
  });

  it('should route @done.<final_state> before @done', () => {
    const parent = parentOf(reviewChild, { '@done.rejected': 'declined', '@done': 'accepted' });

    expect(start(parent, 10).snapshot.value).toEqual(['parent.declined']);
    expect(start(parent, 90).snapshot.value).toEqual(['parent.accepted']);
  });

  it('should take guarded @done branches in order, the last unguarded one as the fallback', () => {
    const parent = parentOf(reviewChild, {
      '@done': [{ target: 'failed', guards: 'isHigh' }, { target: 'accepted' }],
    });

    expect(start(parent, 99).snapshot.value).toEqual(['parent.failed']);
    expect(start(parent, 60).snapshot.value).toEqual(['parent.accepted']);
    expect(typesOf(start(parent, 60).history)).toContain('parent.guard.isHigh.fail');
  });

  it('should route @fail with the error when the child throws, and rethrow without @fail', () => {
    seen.length = 0;
    const parent = parentOf(brokenChild, {
      '@done': 'accepted',
      '@fail': { target: 'failed', actions: 'remember' },
    });

    const { snapshot, history, effects } = start(parent, 1);

    expect(snapshot.value).toEqual(['parent.failed']);
    expect(seen[0]).toEqual({
      type: '@fail',
      payload: {
        childId: expect.any(String),
        childMachineId: 'broken',
        error: { name: 'Error', code: null, message: 'boom' },
      },
      actor: null,
    });
    expect(typesOf(history)).toContain('parent.child.broken.fail');
    expect(effects).toEqual([]);

    const strict = parentOf(brokenChild, { '@done': 'accepted' });
    expect(() => start(strict, 1)).toThrow('boom');
  });

  it('should hand over the input: a list of keys, a rename map, or a function', () => {
    const input = (config: unknown) =>
      (
        start(parentOf(paymentMachine, { '@done': 'accepted' }, { input: config }), 5)
          .effects[0] as PersistChildEffect
      ).snapshot.context;

    expect(input(['score'])).toEqual({ amount: 0, cardLast4: null, score: 5 });
    expect(input({ amount: 'score' })).toEqual({ amount: 5, cardLast4: null });
    expect(
      input(({ context, event }: { context: Record<string, unknown>; event: EventObject }) => ({
        amount: (context.score as number) * 10,
        cardLast4: event.type,
      })),
    ).toEqual({ amount: 50, cardLast4: 'START' });
  });

  it('should keep a child that does not finish at once as a running, tracked child', () => {
    const parent = parentOf(paymentMachine, { '@done.paid': 'accepted', '@done': 'declined' });

    const { snapshot, effects } = start(parent, 5);

    expect(snapshot.value).toEqual(['parent.reviewing']);
    expect(effects).toEqual([
      expect.objectContaining({
        kind: 'persistChild',
        status: 'running',
        snapshot: expect.objectContaining({ value: ['payment.awaiting'], status: 'active' }),
      }),
    ]);
    // Its completion later comes through completeChild, like an asynchronous child's.
    const done = completeChild(parent, snapshot, {
      parentStateId: 'parent.reviewing',
      outcome: 'done',
      finalStateId: 'payment.paid',
      output: { amount: 5 },
    });
    expect(done?.snapshot.value).toEqual(['parent.accepted']);
  });
});

describe('asynchronous child machines', () => {
  const asyncParent = parentOf(
    paymentMachine,
    {
      '@done.paid': { target: 'accepted', actions: 'remember' },
      '@done': 'declined',
      '@fail': { target: 'failed', actions: 'remember' },
      '@timeout': { target: 'waiting', after: { minutes: 5 }, actions: 'remember' },
      CANCEL: 'declined',
    },
    { queue: true },
  );

  it('should emit startChild on entry and stay in the delegating state', () => {
    const { snapshot, history, effects } = start(asyncParent, 12);

    expect(snapshot.value).toEqual(['parent.reviewing']);
    expect(effects).toEqual([
      {
        kind: 'startChild',
        parentMachineId: 'parent',
        parentId: snapshot.id,
        parentStateId: 'parent.reviewing',
        childMachineId: 'payment',
        childId: expect.any(String),
        input: { score: 12 },
        queue: null,
        fireAndForget: false,
        timeoutSeconds: 300,
      } satisfies StartChildEffect,
    ]);
    const start_ = history.find((record) => record.type === 'parent.child.payment.start');
    expect(start_?.payload).toEqual({ childId: (effects[0] as StartChildEffect).childId });
  });

  it('should route completions with completeChild: done.<final>, done, fail and timeout', () => {
    const { snapshot } = start(asyncParent, 12);
    const complete = (completion: Parameters<typeof completeChild>[2]) =>
      completeChild(asyncParent, snapshot, completion, fixedClock);
    seen.length = 0;

    const paid = complete({
      parentStateId: 'parent.reviewing',
      outcome: 'done',
      childId: 'C1',
      finalStateId: 'payment.paid',
      output: { amount: 12 },
    });
    const declined = complete({
      parentStateId: 'parent.reviewing',
      outcome: 'done',
      finalStateId: 'declined',
    });
    const failed = complete({
      parentStateId: 'parent.reviewing',
      outcome: 'fail',
      error: new Error('card service down'),
    });
    const timedOut = complete({
      parentStateId: 'parent.reviewing',
      outcome: 'timeout',
      childId: 'C1',
    });

    expect(paid?.snapshot.value).toEqual(['parent.accepted']);
    expect(declined?.snapshot.value).toEqual(['parent.declined']);
    expect(failed?.snapshot.value).toEqual(['parent.failed']);
    expect(timedOut?.snapshot.value).toEqual(['parent.waiting']);
    expect(seen.map((event) => [event.type, event.payload])).toEqual([
      [
        '@done',
        { childId: 'C1', childMachineId: 'payment', finalState: 'paid', output: { amount: 12 } },
      ],
      [
        '@fail',
        {
          childId: null,
          childMachineId: 'payment',
          error: { name: 'Error', code: null, message: 'card service down' },
        },
      ],
      ['@timeout', { childId: 'C1', childMachineId: 'payment', after: 300 }],
    ]);
    expect(typesOf(paid?.history ?? []).slice(0, 3)).toEqual([
      'parent.child.payment.done',
      'parent.transition.reviewing.@done.paid.start',
      'parent.state.reviewing.exit',
    ]);
    expect(paid?.history[0]?.sequence).toBe(snapshot.sequence + 1);
    // The outcome was routed: leaving the state cancels nothing.
    expect(paid?.effects).toEqual([]);
  });

  it('should be idempotent: no-op when the parent is no longer in the delegating state', () => {
    const { snapshot } = start(asyncParent, 12);
    const moved = transition(asyncParent, snapshot, 'CANCEL').snapshot;

    expect(
      completeChild(asyncParent, moved, {
        parentStateId: 'parent.reviewing',
        outcome: 'done',
        finalStateId: 'paid',
      }),
    ).toBeNull();
    expect(
      completeChild(asyncParent, snapshot, { parentStateId: 'parent.idle', outcome: 'done' }),
    ).toBeNull();
  });

  it('should emit cancelChild when the delegating state is left before its child finished', () => {
    const { snapshot } = start(asyncParent, 12);

    const { effects } = transition(asyncParent, snapshot, 'CANCEL');

    expect(effects).toEqual([
      {
        kind: 'cancelChild',
        parentMachineId: 'parent',
        parentId: snapshot.id,
        parentStateId: 'parent.reviewing',
        childMachineId: 'payment',
      } satisfies CancelChildEffect,
    ]);
  });

  it('should start fire-and-forget children without cancelling them on exit', () => {
    const parent = parentOf(paymentMachine, { CANCEL: 'declined' }, { queue: 'emails' });
    const { snapshot, effects } = start(parent, 3);

    expect(effects).toEqual([
      expect.objectContaining({
        kind: 'startChild',
        queue: 'emails',
        fireAndForget: true,
        timeoutSeconds: null,
      }),
    ]);
    expect(transition(parent, snapshot, 'CANCEL').effects).toEqual([]);
  });

  it('should start a child in each parallel region that delegates', () => {
    const parent = defineMachine({
      config: {
        id: 'split',
        initial: 'work',
        states: {
          work: {
            type: 'parallel',
            states: {
              billing: {
                initial: 'paying',
                states: {
                  paying: { machine: paymentMachine, queue: true, on: { '@done': 'paid' } },
                  paid: { type: 'final' },
                },
              },
              shipping: {
                initial: 'packing',
                states: {
                  packing: { machine: reviewChild, on: { '@done': 'packed' } },
                  packed: { type: 'final' },
                },
              },
            },
          },
        },
      },
    });

    const { snapshot, effects } = initialize(parent);

    expect(snapshot.value).toEqual(['split.work.billing.paying', 'split.work.shipping.packed']);
    expect(
      effects.map((effect) => [
        effect.kind,
        'parentStateId' in effect ? effect.parentStateId : null,
      ]),
    ).toEqual([
      ['startChild', 'split.work.billing.paying'],
      ['persistChild', 'split.work.shipping.packing'],
    ]);
    const done = completeChild(parent, snapshot, {
      parentStateId: 'split.work.billing.paying',
      outcome: 'done',
      finalStateId: 'paid',
    });
    expect(done?.snapshot).toMatchObject({
      value: ['split.work.billing.paid', 'split.work.shipping.packed'],
    });
  });
});
