/**
 * Generated path tests on the example's machines: every path of `machine-routes paths` driven
 * against the real behaviors (client events sent, timers advanced, delegation outcomes faked).
 * The order's 3 paths, the checkout's 5 and the fulfillment's 2 all pass; a path whose guard
 * cannot pass fails naming the step; none is left undriven.
 */
import { describe, expect, it } from 'vitest';
import { checkoutMachine } from '../../fixtures/example/machines/checkout.js';
import { fulfillmentMachine } from '../../fixtures/example/machines/fulfillment.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { ticketMachine } from '../../fixtures/example/machines/ticket.js';
import { generatePathTests } from '../../src/testing/index.js';

const order = generatePathTests(orderMachine, { payloads: { SUBMIT: { amount: 500 } } });
const checkout = generatePathTests(checkoutMachine, {
  outputs: {
    payment: { amount: 40, cardLast4: '4242' },
    capturePayment: { paymentId: 'PAY-1', amount: 40 },
  },
});
const fulfillment = generatePathTests(fulfillmentMachine);
const ticket = generatePathTests(ticketMachine, { payloads: { ASSIGN: { agent: 'ada' } } });

describe('generated path tests of the example', () => {
  for (const generated of [order, checkout, fulfillment, ticket])
    for (const test of generated.tests) it(test.name, test.run);

  it('should generate every path and leave none undriven', () => {
    expect(order.tests.map((test) => test.path.events)).toEqual([
      ['SUBMIT', 'APPROVE'],
      ['SUBMIT', 'CANCEL'],
      ['SUBMIT', 'EXPIRE'],
    ]);
    expect(checkout.tests).toHaveLength(5);
    expect(fulfillment.tests).toHaveLength(2);
    expect(ticket.tests).toHaveLength(1);
    expect([order, checkout, fulfillment, ticket].flatMap((g) => g.undriven)).toEqual([]);
  });

  it('should fail a path whose guard cannot pass, naming the step', async () => {
    const over = generatePathTests(orderMachine, { payloads: { SUBMIT: { amount: 20_000 } } });
    const approve = over.tests.find((test) => test.path.events.includes('APPROVE'))!;
    await expect(approve.run()).rejects.toThrow('Orders over 10000 need a manual approval.');
  });
});
