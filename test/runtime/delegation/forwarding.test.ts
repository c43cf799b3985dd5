import { describe, expect, it } from 'vitest';
import {
  MachineOutputInjectionException,
  activeForwardingStates,
  availableEventsWithForwards,
  childAccepts,
  defineChildOutput,
  defineMachine,
  forwardedChildData,
  initialize,
  recordForwardedEvent,
  resolveForward,
  resolveForwardOutput,
  transition,
  type MachineSnapshot,
} from '../../../src/runtime/index.js';
import { paymentMachine, plainChild } from '../../../fixtures/delegation/children.js';

const receipt = defineChildOutput<{ orderId: string }, { amount: number; cardLast4: string }>(
  ({ context, child }) => ({ orderId: context.orderId, card: child.output.cardLast4 }),
);

const parent = defineMachine({
  config: {
    id: 'shop',
    initial: 'processing',
    context: { orderId: 'O-1' },
    states: {
      processing: {
        machine: paymentMachine,
        queue: true,
        forward: [
          'PROVIDE_CARD',
          { CANCEL_PAYMENT: 'ABORT' },
          { CONFIRM_PAYMENT: { child_event: 'CONFIRM', output: receipt } },
        ],
        on: { '@done': 'done', CANCEL: 'done' },
      },
      done: { type: 'final' },
    },
  },
});

const split = defineMachine({
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
              paying: {
                machine: paymentMachine,
                queue: true,
                forward: ['PROVIDE_CARD'],
                on: { '@done': 'paid' },
              },
              paid: { type: 'final' },
            },
          },
          chat: {
            initial: 'open',
            states: {
              open: {
                machine: plainChild,
                queue: true,
                forward: [{ PING_CHAT: 'PING' }],
                on: { '@done': 'closed', NOTE: null },
              },
              closed: { type: 'final' },
            },
          },
        },
      },
    },
  },
});

function childAt(value: string, context = { amount: 10, cardLast4: '1111' }): MachineSnapshot {
  return {
    machineId: 'payment',
    id: 'CHILD1',
    value: [value],
    context,
    status: 'active',
    sequence: 3,
  };
}

describe('resolveForward', () => {
  it('should find the delegating state, the child and the child event type', () => {
    const snapshot = initialize(parent).snapshot;

    expect(resolveForward(parent, snapshot, 'CANCEL_PAYMENT')).toMatchObject({
      parentStateId: 'shop.processing',
      childMachineId: 'payment',
      childEventType: 'ABORT',
      child: paymentMachine,
      region: undefined,
      forward: expect.objectContaining({ parentEventType: 'CANCEL_PAYMENT' }),
    });
    expect(resolveForward(parent, snapshot, 'CANCEL')).toBeNull();
    expect(resolveForward(parent, snapshot, 'UNKNOWN')).toBeNull();
    const done = transition(parent, snapshot, 'CANCEL').snapshot;
    expect(resolveForward(parent, done, 'PROVIDE_CARD')).toBeNull();
  });

  it('should pick the region whose delegating state forwards the event', () => {
    const snapshot = initialize(split).snapshot;

    expect(resolveForward(split, snapshot, 'PING_CHAT')).toMatchObject({
      parentStateId: 'split.work.chat.open',
      childMachineId: 'plain',
      childEventType: 'PING',
      region: 'chat',
    });
    expect(resolveForward(split, snapshot, 'PROVIDE_CARD')).toMatchObject({ region: 'billing' });
    expect(
      activeForwardingStates(split, snapshot).map((state) => [state.parentStateId, state.region]),
    ).toEqual([
      ['split.work.billing.paying', 'billing'],
      ['split.work.chat.open', 'chat'],
    ]);
  });
});

describe('availableEventsWithForwards', () => {
  it('should list forwarded events the running child accepts now, after the parent own ones', () => {
    const snapshot = initialize(parent).snapshot;

    expect(
      availableEventsWithForwards(
        parent,
        snapshot,
        new Map([['shop.processing', childAt('payment.awaiting')]]),
      ),
    ).toEqual([
      { type: 'CANCEL', source: 'parent' },
      { type: 'PROVIDE_CARD', source: 'forward' },
      { type: 'CANCEL_PAYMENT', source: 'forward' },
    ]);
    expect(
      availableEventsWithForwards(
        parent,
        snapshot,
        new Map([['shop.processing', childAt('payment.charging')]]),
      ),
    ).toEqual([
      { type: 'CANCEL', source: 'parent' },
      { type: 'CONFIRM_PAYMENT', source: 'forward' },
    ]);
    // No running child (pending, finished or missing): nothing forwarded.
    expect(
      availableEventsWithForwards(parent, snapshot, new Map([['shop.processing', null]])),
    ).toEqual([{ type: 'CANCEL', source: 'parent' }]);
    expect(
      childAccepts(paymentMachine, { ...childAt('payment.paid'), status: 'done' }, 'CONFIRM'),
    ).toBe(false);
  });

  it('should tag forwarded events with their region in parallel states', () => {
    const snapshot = initialize(split).snapshot;
    const chat: MachineSnapshot = {
      machineId: 'plain',
      id: 'C2',
      value: ['plain.open'],
      context: {},
      status: 'active',
      sequence: 1,
    };

    expect(
      availableEventsWithForwards(
        split,
        snapshot,
        new Map([
          ['split.work.billing.paying', childAt('payment.awaiting')],
          ['split.work.chat.open', chat],
        ]),
      ),
    ).toEqual([
      { type: 'PROVIDE_CARD', source: 'forward', region: 'billing' },
      { type: 'NOTE', source: 'parent', region: 'chat' },
      { type: 'PING_CHAT', source: 'forward', region: 'chat' },
    ]);
  });
});

describe('recordForwardedEvent', () => {
  it('should add one external record of the parent-facing event and keep the state', () => {
    const snapshot = initialize(parent).snapshot;

    const result = recordForwardedEvent(parent, snapshot, {
      type: 'PROVIDE_CARD',
      payload: { card: '4111111111111111' },
    });

    expect(result.snapshot).toEqual({ ...snapshot, sequence: snapshot.sequence + 1 });
    expect(result.history).toEqual([
      expect.objectContaining({
        type: 'PROVIDE_CARD',
        source: 'external',
        sequence: snapshot.sequence + 1,
        payload: { card: '4111111111111111' },
        value: ['shop.processing'],
        context: snapshot.context,
      }),
    ]);
    expect(result.effects).toEqual([]);
  });
});

describe('forwarded outputs', () => {
  const forwardOf = (type: string) =>
    parent.forwards.find((forward) => forward.parentEventType === type)!;

  it('should show the child state and context, filtered by a key-list output', () => {
    const keys = {
      ...forwardOf('PROVIDE_CARD'),
      output: { kind: 'keys' as const, keys: ['cardLast4', 'missing'] },
    };

    expect(
      forwardedChildData(forwardOf('PROVIDE_CARD'), paymentMachine, childAt('payment.charging')),
    ).toEqual({
      state: ['payment.charging'],
      output: { amount: 10, cardLast4: '1111' },
    });
    expect(forwardedChildData(keys, paymentMachine, childAt('payment.charging')).output).toEqual({
      cardLast4: '1111',
    });
  });

  it('should hand the child output to a defineChildOutput behavior', () => {
    const snapshot = initialize(parent).snapshot;
    const child = { ...childAt('payment.paid'), status: 'done' as const };

    expect(
      resolveForwardOutput({
        definition: parent,
        snapshot,
        forward: forwardOf('CONFIRM_PAYMENT'),
        child: paymentMachine,
        childSnapshot: child,
      }),
    ).toEqual({ orderId: 'O-1', card: '1111' });
    expect(
      resolveForwardOutput({
        definition: parent,
        snapshot,
        forward: forwardOf('PROVIDE_CARD'),
        child: paymentMachine,
        childSnapshot: child,
      }),
    ).toBeUndefined();
  });

  it('should throw MachineOutputInjectionException when the child state defines no output', () => {
    const snapshot = initialize(parent).snapshot;
    const forward = forwardOf('CONFIRM_PAYMENT');

    expect(() =>
      resolveForwardOutput({
        definition: parent,
        snapshot,
        forward,
        child: paymentMachine,
        childSnapshot: childAt('payment.charging'),
      }),
    ).toThrow(MachineOutputInjectionException);
    expect(() =>
      resolveForwardOutput({
        definition: parent,
        snapshot,
        forward,
        child: paymentMachine,
        childSnapshot: null,
      }),
    ).toThrow(/there is no running child/);
  });
});
