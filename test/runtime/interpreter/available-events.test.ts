import { describe, expect, it } from 'vitest';
import {
  availableEvents,
  defineMachine,
  initialize,
  resolveOutput,
  transition,
} from '../../../src/runtime/index.js';
import { MachineNotFoundException } from '../../../src/runtime/errors.js';

const order = defineMachine({
  config: {
    id: 'order',
    initial: 'draft',
    on: { CANCEL: 'cancelled', ARCHIVE: 'cancelled' },
    states: {
      draft: {
        initial: 'editing',
        on: { SUBMIT: 'fulfillment', CANCEL: 'cancelled' },
        states: {
          editing: {
            on: {
              SAVE: 'editing',
              '@always': [{ target: 'editing', guards: 'never' }],
              CANCEL: 'editing',
            },
          },
        },
      },
      fulfillment: {
        type: 'parallel',
        on: { HOLD: 'draft' },
        states: {
          payment: {
            initial: 'pending',
            states: { pending: { on: { PAY: 'paid' } }, paid: { type: 'final' } },
          },
          shipping: {
            initial: 'waiting',
            states: { waiting: { on: { SHIP: 'sent', PAY: 'waiting' } }, sent: { type: 'final' } },
          },
        },
      },
      delegating: { machine: 'child', on: { '@done': 'cancelled', NUDGE: 'delegating' } },
      cancelled: { type: 'final' },
    },
  },
  behavior: { guards: { never: () => false } },
});

describe('availableEvents', () => {
  it('should list the leaf events first, then ancestors, in insertion order, without duplicates or @ events', () => {
    expect(availableEvents(order, initialize(order).snapshot)).toEqual([
      { type: 'SAVE', source: 'parent' },
      { type: 'CANCEL', source: 'parent' },
      { type: 'SUBMIT', source: 'parent' },
      { type: 'ARCHIVE', source: 'parent' },
    ]);
  });

  it('should tag events with their region in parallel states, de-duplicated per region', () => {
    const snapshot = transition(order, initialize(order).snapshot, 'SUBMIT').snapshot;

    expect(availableEvents(order, snapshot)).toEqual([
      { type: 'PAY', source: 'parent', region: 'payment' },
      { type: 'HOLD', source: 'parent', region: 'payment' },
      { type: 'CANCEL', source: 'parent', region: 'payment' },
      { type: 'ARCHIVE', source: 'parent', region: 'payment' },
      { type: 'SHIP', source: 'parent', region: 'shipping' },
      { type: 'PAY', source: 'parent', region: 'shipping' },
      { type: 'HOLD', source: 'parent', region: 'shipping' },
      { type: 'CANCEL', source: 'parent', region: 'shipping' },
      { type: 'ARCHIVE', source: 'parent', region: 'shipping' },
    ]);
  });

  it('should list nothing once the machine is done', () => {
    const done = transition(order, initialize(order).snapshot, 'ARCHIVE').snapshot;

    expect(availableEvents(order, done)).toEqual([]);
  });

  it('should append forwarded events of active delegating states from the extension point', () => {
    const snapshot = { ...initialize(order).snapshot, value: ['order.delegating'] };
    const asked: unknown[] = [];

    const events = availableEvents(order, snapshot, {
      forwardedEvents: (state) => (asked.push(state), ['CONFIRM_PAYMENT']),
    });

    expect(asked).toEqual([{ stateId: 'order.delegating', region: undefined }]);
    expect(events).toEqual([
      { type: 'NUDGE', source: 'parent' },
      { type: 'CANCEL', source: 'parent' },
      { type: 'ARCHIVE', source: 'parent' },
      { type: 'CONFIRM_PAYMENT', source: 'forward' },
    ]);
  });

  it('should refuse a value naming a state that is not a leaf of the machine, first id first', () => {
    const start = initialize(order).snapshot;
    const unknown = { ...start, value: ['order.draft.gone'] };
    const notLeaf = { ...start, value: ['order.draft'] };
    const both = { ...start, value: ['order.nope', 'order.fulfillment.shipping.gone'] };
    for (const read of [
      (snapshot: typeof start) => availableEvents(order, snapshot),
      (snapshot: typeof start) => resolveOutput(order, snapshot),
    ]) {
      expect(() => read(unknown)).toThrow(MachineNotFoundException);
      expect(() => read(notLeaf)).toThrow("State 'order.draft' does not belong");
      expect(() => read(both)).toThrow("State 'order.nope' does not belong");
    }
    // In a parallel configuration a later id is checked too.
    const parallel = transition(order, start, 'SUBMIT').snapshot;
    const badSecond = { ...parallel, value: [parallel.value[0]!, 'order.gone'] };
    expect(() => availableEvents(order, badSecond)).toThrow("State 'order.gone' does not belong");
    expect(() => resolveOutput(order, badSecond)).toThrow("State 'order.gone' does not belong");
  });
});
