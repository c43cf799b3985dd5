import { describe, expect, it } from 'vitest';
import {
  availableEvents,
  defineMachine,
  initialize,
  transition,
} from '../../../src/runtime/index.js';

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
});
