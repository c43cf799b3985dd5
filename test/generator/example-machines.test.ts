/**
 * The example's machines tested with machine-routes/testing, as an application would test its
 * own: tables of transitions, the order's 15-minute expiry on virtual time, the checkout's
 * payment flow with the real payment provider and with fakes, and the same over the generated
 * Fastify app in process. No wall-clock waits, no polling.
 */
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import config from '../../fixtures/example/machine-routes.config.js';
import { calculatorMachine } from '../../fixtures/example/machines/calculator.js';
import { checkoutMachine, paymentMachine } from '../../fixtures/example/machines/checkout.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { machineRoutes } from '../../generated-example/app.gen.js';
import { configMachines } from '../../generated-example/machines.gen.js';
import {
  assertTransitions,
  createTestRuntime,
  hang,
  httpDriver,
  reject,
  resolve,
  type TestRuntime,
} from '../../src/testing/index.js';

let t: TestRuntime | undefined;
const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  await t?.close();
  t = undefined;
});

const OVER_LIMIT = 'Orders over 10000 need a manual approval.';

describe('order', () => {
  it('should approve up to the limit and refuse above it', async () => {
    t = await createTestRuntime();
    // prettier-ignore
    await assertTransitions(t, orderMachine, [
      { from: 'draft', event: 'SUBMIT', payload: { amount: 500, note: 'gift' }, to: 'submitted', patch: { total: 500, note: 'gift' } },
      { from: 'submitted', context: { total: 10_000 }, event: 'APPROVE', to: 'approved', output: { total: 10_000, approved: true } },
      { from: 'submitted', context: { total: 10_001 }, event: 'APPROVE', to: 'submitted', rejects: OVER_LIMIT },
      { from: 'submitted', context: { total: 700 }, event: 'CANCEL', to: 'cancelled', output: { total: 700 } },
      { from: ['submitted'], event: 'QUOTE', payload: { quantity: 3 }, to: 'submitted', patch: { lastQuote: 75 } },
    ]);
  });

  it('should expire 15 minutes after submission, and refuse a late approval', async () => {
    t = await createTestRuntime({ timers: [{ machine: orderMachine }] });
    const order = await t.startAt(orderMachine, 'submitted', { context: { total: 20 } });
    await t.advance('14m59s');
    expect(await order.state()).toEqual(['order.submitted']);
    await t.advance('1s');
    expect(await order.state()).toEqual(['order.expired']);
    await expect(order.send('APPROVE')).rejects.toThrow('it accepts no event');
  });

  it('should not expire an order approved in time', async () => {
    t = await createTestRuntime({ timers: [{ machine: orderMachine }] });
    const order = await t.startAt(orderMachine, 'submitted', { context: { total: 20 } });
    await t.advance('10m');
    await order.send('APPROVE');
    await t.advance('1d');
    expect(await order.state()).toEqual(['order.approved']);
  });
});

describe('checkout', () => {
  it('should pay with the real payment child and the real provider', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    const checkout = await t.create(checkoutMachine);
    const [payment] = await t.runtime.children(checkout.id);
    await t.send(checkoutMachine, checkout.id, {
      type: 'PROVIDE_CARD',
      payload: { card: '4111111111111111' },
    });
    await t.send(checkoutMachine, checkout.id, { type: 'CONFIRM_PAYMENT' });
    expect(payment?.childMachineId).toBe('payment');
    expect(await checkout.context()).toMatchObject({
      paidWith: '1111',
      paymentId: expect.stringMatching(/^PAY-\d{4}$/),
    });
    expect(await checkout.state()).toEqual(['checkout.paid']);
  });

  it('should end payment_failed when the provider declines (the capture job routes @fail)', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    t.fakes.child('payment', resolve({ amount: 40, cardLast4: '4242' }, { final: 'paid' }));
    t.fakes.job('capturePayment', reject('Payment of 40 for ORD-1 declined.'));
    const checkout = await t.create(checkoutMachine);
    expect(await checkout.state()).toEqual(['checkout.payment_failed']);
    expect(t.fakes.callsOf('capturePayment').map((call) => call.input)).toEqual([
      { orderId: 'ORD-1', amount: 40, paidWith: '4242' },
    ]);
  });

  it('should give up capturing after 2 minutes (@timeout)', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    t.fakes.child('payment', resolve({ amount: 40, cardLast4: '4242' }, { final: 'paid' }));
    t.fakes.job('capturePayment', hang());
    const checkout = await t.create(checkoutMachine);
    await t.advance('1m59s');
    expect(await checkout.state()).toEqual(['checkout.capturing']);
    await t.advance('1s');
    expect(await checkout.state()).toEqual(['checkout.payment_failed']);
  });

  it('should be cancelled when the payment child is aborted', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    t.fakes.child('payment', resolve({ amount: 40 }, { final: 'aborted' }));
    const checkout = await t.create(checkoutMachine);
    expect(await checkout.state()).toEqual(['checkout.cancelled']);
  });
});

describe('payment and calculator', () => {
  it('should take a card, confirm, and abort until paid', async () => {
    t = await createTestRuntime();
    // prettier-ignore
    await assertTransitions(t, paymentMachine, [
      { from: 'awaiting_card', event: 'PROVIDE_CARD', payload: { card: '4111111111114242' }, to: 'authorizing', patch: { cardLast4: '4242' } },
      { from: 'awaiting_card', event: 'ABORT', to: 'aborted' },
      { from: 'authorizing', context: { amount: 40, cardLast4: '4242' }, event: 'CONFIRM', to: 'paid', output: { amount: 40, cardLast4: '4242' } },
      { from: 'authorizing', context: { amount: 40 }, event: 'ABORT', to: 'aborted', output: { amount: 40 } },
      { from: 'aborted', event: 'CONFIRM', rejects: /accepts no event/ },
    ]);
  });

  it('should add and multiply without keeping an instance', async () => {
    t = await createTestRuntime();
    // prettier-ignore
    await assertTransitions(t, calculatorMachine, [
      { from: 'ready', event: 'ADD', payload: { a: 2, b: 3 }, to: 'ready', patch: { result: 5 } },
      { from: 'ready', event: 'MULTIPLY', payload: { a: 2, b: 3 }, to: 'ready', patch: { result: 6 } },
    ]);
  });
});

describe('over HTTP (the generated Fastify app, in process)', () => {
  it('should expire a submitted order and answer a late approval 409', async () => {
    t = await createTestRuntime({
      machines: configMachines(),
      timers: config.timers ?? [],
      store: 'sqlite',
    });
    const app = Fastify();
    closing.push(() => app.close());
    await app.register(machineRoutes, { runtime: t.runtime, notFound: true });
    const http = await httpDriver(t, app);
    const created = await http.post('/orders/create');
    const id = (created.body as { data: { id: string } }).data.id;
    await http.post(`/orders/${id}/submit`, { body: { payload: { amount: 20 } } });
    await t.advance('15m');
    expect((await http.get(`/orders/${id}/status`)).body).toMatchObject({
      data: { state: ['order.expired'] },
    });
    expect((await http.patch(`/orders/${id}/approve`)).status).toBe(409);
  });
});
