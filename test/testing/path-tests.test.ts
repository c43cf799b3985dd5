/**
 * Generated path tests on the example's machines: every path of `machine-routes paths` driven
 * against the real behaviors (client events sent, timers advanced, delegation outcomes faked).
 * The order's 3 paths, the checkout's 5, the fulfillment's 2 and the ticket's 1 all pass, their
 * payloads made from the events' schemas (none given); a path whose guard cannot pass fails
 * naming the step; none is left undriven; an event whose schema gives no example is listed.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineEvent, defineMachine, defineScenario } from '../../src/runtime/index.js';
import { checkoutMachine } from '../../fixtures/example/machines/checkout.js';
import { fulfillmentMachine } from '../../fixtures/example/machines/fulfillment.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { ticketMachine } from '../../fixtures/example/machines/ticket.js';
import { generatePathTests } from '../../src/testing/index.js';

// SUBMIT's payload comes from its schema's example (amount 2500, within the approval limit).
const order = generatePathTests(orderMachine);
const checkout = generatePathTests(checkoutMachine, {
  outputs: {
    payment: { amount: 40, cardLast4: '4242' },
    capturePayment: { paymentId: 'PAY-1', amount: 40 },
  },
});
const fulfillment = generatePathTests(fulfillmentMachine);
const ticket = generatePathTests(ticketMachine);

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

  it('should list a path whose event payload cannot be made from its schema, and drive it once given', async () => {
    const coded = defineMachine({
      config: {
        id: 'kitCoded',
        initial: 'waiting',
        states: { waiting: { on: { CODE: 'accepted' } }, accepted: { type: 'final' } },
      },
      behavior: {
        events: {
          CODE: defineEvent({
            type: 'CODE',
            payload: z.object({ code: z.string().regex(/^[A-Z]{3}-\d{4}$/) }),
          }),
        },
      },
    });
    const generated = generatePathTests(coded);
    expect(generated.tests).toEqual([]);
    expect(generated.undriven).toEqual([
      {
        name: 'kitCoded.waiting -CODE-> kitCoded.accepted',
        reason:
          'step 1 (CODE) needs a payload the kit cannot make from its schema (no example of its schema: pattern); give it in payloads.CODE',
      },
    ]);
    const given = generatePathTests(coded, { payloads: { CODE: { code: 'ABC-1234' } } });
    expect(given.undriven).toEqual([]);
    await given.tests[0]!.run();
  });

  it('should pass a guard no payload satisfies through the scenario named for the event', async () => {
    const loan = defineMachine({
      config: {
        id: 'kitLoanPath',
        initial: 'applied',
        states: {
          applied: { on: { CHECK: { target: 'granted', guards: 'bureauSaysYes' } } },
          granted: { type: 'final' },
        },
      },
      behavior: { guards: { bureauSaysYes: () => false } },
      scenarios: [
        defineScenario({
          slug: 'good-credit',
          description: 'The credit bureau says yes',
          source: 'applied',
          event: 'CHECK',
          plan: { guards: { bureauSaysYes: true } },
        }),
      ],
    });
    const real = generatePathTests(loan);
    await expect(real.tests[0]!.run()).rejects.toThrow(
      'after step 1 (CHECK) the instance is in kitLoanPath.applied',
    );
    const played = generatePathTests(loan, { scenarios: { CHECK: 'good-credit' } });
    expect(played.tests.map((test) => test.name)).toEqual([
      'kitLoanPath.applied -CHECK [bureauSaysYes]-> kitLoanPath.granted',
    ]);
    await played.tests[0]!.run();
  });

  it('should fail a path whose guard cannot pass, naming the step', async () => {
    const over = generatePathTests(orderMachine, { payloads: { SUBMIT: { amount: 20_000 } } });
    const approve = over.tests.find((test) => test.path.events.includes('APPROVE'))!;
    await expect(approve.run()).rejects.toThrow('Orders over 10000 need a manual approval.');
  });
});
