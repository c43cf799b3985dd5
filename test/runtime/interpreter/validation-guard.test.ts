import { describe, expect, it } from 'vitest';
import {
  MachineValidationException,
  createMachine,
  defineEvent,
  defineMachine,
  defineValidationGuard,
  initialize,
  throwIfValidationFailed,
  toValidationException,
  transition,
  validateMachine,
} from '../../../src/runtime/index.js';
import { z } from 'zod';
import { typesOf } from './helpers.js';

const isAmountValid = defineValidationGuard({
  check: ({ event }) => Number(event.payload?.amount) >= 100,
  message: ({ event }) => `Amount ${String(event.payload?.amount)} is below 100`,
});

const payment = defineMachine({
  config: {
    id: 'payment',
    initial: 'open',
    context: { attempts: 0 },
    states: {
      open: {
        on: {
          PAY: { target: 'paid', guards: ['countAttempt', 'isAmountValid'] },
          REFUND: {
            target: 'refunded',
            guards: defineValidationGuard({
              name: 'refundable',
              check: () => false,
              message: 'Not refundable',
              field: 'payload.reason',
            }),
          },
        },
      },
      paid: {},
      refunded: {},
    },
  },
  behavior: {
    guards: {
      isAmountValid,
      countAttempt: ({ context }) => ((context.attempts as number) += 1) > 0,
    },
  },
});

describe('transition (validation guards)', () => {
  it('should pass the transition when the check passes', () => {
    expect(
      transition(payment, initialize(payment).snapshot, { type: 'PAY', payload: { amount: 150 } })
        .snapshot.value,
    ).toEqual(['payment.paid']);
  });

  it('should return the failure with the default error key and keep the snapshot', () => {
    const initial = initialize(payment).snapshot;

    const result = transition(payment, initial, { type: 'PAY', payload: { amount: 5 } });

    expect(result.validationFailure).toEqual({
      message: 'Amount 5 is below 100',
      errors: { 'payment.guard.isAmountValid.fail': ['Amount 5 is below 100'] },
    });
    expect(result.snapshot).toEqual({ ...initial, sequence: initial.sequence + 5 });
    expect(result.history.map((record) => [record.type, record.payload])).toEqual([
      ['PAY', { amount: 5 }],
      ['payment.transition.open.PAY.start', null],
      ['payment.guard.countAttempt.pass', null],
      [
        'payment.guard.isAmountValid.fail',
        { 'payment.guard.isAmountValid.fail': ['Amount 5 is below 100'] },
      ],
      ['payment.transition.open.PAY.fail', null],
    ]);
    expect(result.history.at(-1)?.context).toEqual({ attempts: 0 });
  });

  it('should use the field and name of a directly referenced guard', () => {
    const result = transition(payment, initialize(payment).snapshot, 'REFUND');

    expect(result.validationFailure).toEqual({
      message: 'Not refundable',
      errors: { 'payload.reason': ['Not refundable'] },
    });
    expect(typesOf(result.history)).toContain('payment.guard.refundable.fail');
  });
});

describe('validation guards written inline under behavior.guards', () => {
  const PayEvent = defineEvent({ type: 'PAY', payload: z.object({ amount: z.number() }) });
  const inline = defineMachine({
    config: {
      id: 'inline',
      initial: 'open',
      states: { open: { on: { PAY: { target: 'paid', guards: 'atLeast100' } } }, paid: {} },
    },
    behavior: {
      events: { PAY: PayEvent },
      guards: {
        atLeast100: {
          check: ({ event }) => event.payload.amount >= 100,
          message: ({ event }) => `Amount ${event.payload.amount} is below 100`,
          field: 'payload.amount',
        },
      },
    },
  });

  it('should reject with the inline message and field, as defineValidationGuard does', () => {
    const initial = initialize(inline).snapshot;

    expect(
      transition(inline, initial, { type: 'PAY', payload: { amount: 150 } }).snapshot.value,
    ).toEqual(['inline.paid']);
    const refused = transition(inline, initial, { type: 'PAY', payload: { amount: 5 } });
    expect(refused.validationFailure).toEqual({
      message: 'Amount 5 is below 100',
      errors: { 'payload.amount': ['Amount 5 is below 100'] },
    });
    expect(typesOf(refused.history)).toContain('inline.guard.atLeast100.fail');
  });

  it('should refuse an object without check and message as a guard', () => {
    expect(
      validateMachine({
        config: { id: 'bad', initial: 'a', states: { a: { on: { GO: { guards: 'nope' } } } } },
        behavior: { guards: { nope: { message: 'no check' } as never } },
      }).map((issue) => issue.message),
    ).toEqual([expect.stringContaining('has an invalid guard reference (an object)')]);
  });
});

describe('toValidationException', () => {
  it('should build a 422 MachineValidationException from a failure', () => {
    const error = toValidationException({ message: 'Bad', errors: { field: ['Bad'] } }, 'payment');

    expect(error).toBeInstanceOf(MachineValidationException);
    expect([error.message, error.errors, error.statusCode, error.details]).toEqual([
      'Bad',
      { field: ['Bad'] },
      422,
      { machine: 'payment' },
    ]);
  });
});

describe('throwIfValidationFailed', () => {
  it('should throw the failure and return results without one', () => {
    const initial = initialize(payment).snapshot;
    const ok = transition(payment, initial, { type: 'PAY', payload: { amount: 100 } });

    expect(throwIfValidationFailed(ok)).toBe(ok);
    expect(() => throwIfValidationFailed(transition(payment, initial, 'REFUND'))).toThrow(
      MachineValidationException,
    );
  });

  it('should make the in-memory actor throw while keeping the history of the attempt', () => {
    const actor = createMachine(payment).start();

    expect(() => actor.send({ type: 'PAY', payload: { amount: 1 } })).toThrow(
      expect.objectContaining({
        code: 'MR_VALIDATION_FAILED',
        errors: { 'payment.guard.isAmountValid.fail': ['Amount 1 is below 100'] },
      }),
    );
    expect(actor.snapshot().value).toEqual(['payment.open']);
    expect(typesOf(actor.history).at(-1)).toBe('payment.transition.open.PAY.fail');
  });
});
