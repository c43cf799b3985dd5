/**
 * Transition tables on the example's machines: 22 rows, one per line, each from a state with
 * a context, one event, what must follow. A wrong row fails with the step's history.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorMachine } from '../../fixtures/example/machines/calculator.js';
import { checkoutMachine } from '../../fixtures/example/machines/checkout.js';
import { fulfillmentMachine } from '../../fixtures/example/machines/fulfillment.js';
import { invoiceMachine } from '../../fixtures/example/machines/invoice.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { ticketMachine } from '../../fixtures/example/machines/ticket.js';
import {
  assertTransitions,
  createTestRuntime,
  TransitionTableFailure,
  type TestRuntime,
} from '../../src/testing/index.js';

let t: TestRuntime;
beforeEach(async () => {
  t = await createTestRuntime({ store: 'sqlite' });
});
afterEach(async () => {
  await t.close();
});

const OVER_LIMIT = 'Orders over 10000 need a manual approval.';
const NOT_ACCEPTED = /cannot accept event/;

describe('assertTransitions on the example machines', () => {
  it('should hold for 22 rows over six machines', async () => {
    // prettier-ignore
    const results = [
      ...(await assertTransitions(t, orderMachine, [
        { from: 'draft', event: 'SUBMIT', payload: { amount: 500, note: 'gift' }, to: 'submitted', patch: { total: 500, note: 'gift' } },
        { from: 'draft', event: 'QUOTE', payload: { quantity: 2 }, to: 'draft', patch: { lastQuote: 50 } },
        { from: 'submitted', context: { total: 500 }, event: 'APPROVE', to: 'approved', output: { total: 500, approved: true } },
        { from: 'submitted', context: { total: 10_000 }, event: 'APPROVE', to: 'approved' },
        { from: 'submitted', context: { total: 10_001 }, event: 'APPROVE', rejects: OVER_LIMIT },
        { from: 'submitted', context: { total: 700 }, event: 'CANCEL', to: 'cancelled', output: { total: 700 } },
        { from: 'submitted', event: 'QUOTE', payload: { quantity: 4 }, to: 'submitted', patch: { lastQuote: 100 } },
        { from: 'draft', event: 'APPROVE', rejects: NOT_ACCEPTED },
      ])),
      ...(await assertTransitions(t, ticketMachine, [
        { from: 'open', event: 'COMMENT', payload: { text: 'hi' }, to: 'open', patch: { comments: 1 } },
        { from: 'assigned', context: { comments: 2 }, event: 'COMMENT', payload: { text: 'again' }, to: 'assigned', patch: { comments: 3 } },
        { from: 'open', event: 'ASSIGN', payload: { agent: 'ada' }, to: 'assigned', patch: { agent: 'ada' } },
        { from: 'assigned', event: 'RESOLVE', to: 'resolved' },
        { from: 'open', event: 'RESOLVE', rejects: NOT_ACCEPTED },
      ])),
      ...(await assertTransitions(t, invoiceMachine, [
        { from: 'open', event: 'PAY', payload: { amount: 12.5, method: 'card' }, to: 'paid', patch: { paid: 12.5, method: 'card' } },
        { from: 'open', event: 'VOID', to: 'voided' },
        { from: 'paid', event: 'PAY', payload: { amount: 1, method: 'card' }, rejects: 'it accepts no event' },
      ])),
      ...(await assertTransitions(t, fulfillmentMachine, [
        { from: ['processing.payment.pending', 'processing.packing.waiting'], event: 'CAPTURE', to: ['processing.payment.captured', 'processing.packing.waiting'] },
        { from: ['processing.payment.captured', 'processing.packing.waiting'], event: 'PACK', to: 'shipped' },
        { from: ['processing.payment.pending', 'processing.packing.packed'], event: 'CAPTURE', to: 'shipped' },
        { from: 'processing', event: 'PACK', to: ['processing.payment.pending', 'processing.packing.packed'] },
      ])),
      ...(await assertTransitions(t, calculatorMachine, [
        { from: 'ready', event: 'MULTIPLY', payload: { a: 6, b: 7 }, to: 'ready', patch: { result: 42 } },
      ])),
      ...(await assertTransitions(t, checkoutMachine, [
        { from: 'paying', event: 'CANCEL', to: 'cancelled' },
      ])),
    ];
    expect(results).toHaveLength(22);
    expect(results.every((result) => result.problems.length === 0)).toBe(true);
  });

  it("should fail a wrong row with the step's history, and still run the others", async () => {
    // prettier-ignore
    const run = assertTransitions(t, orderMachine, [
      { from: 'draft', event: 'SUBMIT', payload: { amount: 500 }, to: 'submitted' },
      { name: 'approval at the limit', from: 'submitted', context: { total: 10_001 }, event: 'APPROVE', to: 'approved' },
      { from: 'submitted', event: 'QUOTE', payload: { quantity: 1 }, patch: { lastQuote: 30 } },
    ]);
    await expect(run).rejects.toThrow(TransitionTableFailure);
    const message = await run.catch((error: Error) => error.message);
    expect(message).toContain("2 of 3 transition rows of 'order' failed");
    expect(message).toContain(
      [
        'row 2: approval at the limit',
        `  ✗ the event was refused: MachineValidationException: ${OVER_LIMIT}`,
        '  ✗ state: expected order.approved, got order.submitted',
        '  history of the step:',
        '    2. APPROVE [order.submitted]',
        '    3. order.transition.submitted.APPROVE.start [order.submitted]',
        `    4. order.guard.withinLimit.fail {"total":["${OVER_LIMIT}"]} [order.submitted]`,
      ].join('\n'),
    );
    expect(message).toContain(
      'row 3: submitted --QUOTE-->\n  ✗ context.lastQuote: expected 30, got 25',
    );
  });
});
