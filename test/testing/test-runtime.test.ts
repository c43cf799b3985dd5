/**
 * The test runtime: virtual time runs every timer, schedule and delayed job in due order,
 * instances start anywhere, and fakes replace job actors and child machines per test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineJob, defineMachine, defineScenario } from '../../src/runtime/index.js';
import { checkoutMachine } from '../../fixtures/example/machines/checkout.js';
import { fulfillmentMachine } from '../../fixtures/example/machines/fulfillment.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import {
  createTestRuntime,
  hang,
  ImpossibleConfigurationException,
  InvalidDurationException,
  reject,
  resolve,
  type TestRuntime,
} from '../../src/testing/index.js';
import { reportMachine, subscriptionMachine } from './fixtures/machines.js';

let t: TestRuntime | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('advance', () => {
  it('should fire a daily every-timer exactly 30 times when 30 days pass in one call, in under 100 ms of CPU', async () => {
    // The process's first advance also compiles the delivery path: a throwaway runtime takes
    // that cost, the measured call is steady state. CPU time, not wall time: on a shared
    // machine (load 20 on 2 cores) the wall clock measures the neighbours.
    const warmUp = await createTestRuntime({ timers: [{ machine: subscriptionMachine }] });
    await warmUp.create(subscriptionMachine);
    await warmUp.advance('2d');
    await warmUp.close();
    t = await createTestRuntime({ timers: [{ machine: subscriptionMachine }] });
    const subscription = await t.create(subscriptionMachine);
    const cpu = process.cpuUsage();
    const report = await t.advance('30d');
    const used = process.cpuUsage(cpu);
    const elapsed = (used.user + used.system) / 1000;
    expect(await subscription.context()).toEqual({ renewals: 30 });
    expect(report.fires).toBe(30);
    const renewals = (await subscription.history()).filter((r) => r.type === 'RENEW');
    // Each fire at its own boundary, not all at the end.
    expect(renewals.map((r) => r.createdAt)).toEqual(
      Array.from({ length: 30 }, (_, day) =>
        new Date(Date.parse('2026-01-01T00:00:00Z') + (day + 1) * 86_400_000).toISOString(),
      ),
    );
    expect(elapsed).toBeLessThan(100);
  });

  it('should expire a submitted order at 15 minutes, not a millisecond before', async () => {
    t = await createTestRuntime({ timers: [{ machine: orderMachine }] });
    const order = await t.create(orderMachine);
    await order.send('SUBMIT', { amount: 500 });
    await t.advance('14m59s999ms');
    expect(await order.state()).toEqual(['order.submitted']);
    await t.advance(1);
    expect(await order.state()).toEqual(['order.expired']);
  });

  it('should run a delayed job (@timeout) and a timer in due order across one advance', async () => {
    t = await createTestRuntime({ machines: [reportMachine], timers: [{ machine: orderMachine }] });
    t.fakes.job('buildReport', hang());
    const report = await t.create(reportMachine);
    await report.send('BUILD');
    await t.advance('2m');
    const order = await t.create(orderMachine);
    await order.send('SUBMIT', { amount: 5 });
    // The report times out at 5 min, the order expires at 2 + 15 = 17 min.
    await t.advance('20m');
    expect(await report.state()).toEqual(['report.timed_out']);
    expect(await order.state()).toEqual(['order.expired']);
    const timedOutAt = (await report.history()).find((r) =>
      r.type.endsWith('.state.timed_out.enter'),
    );
    const expiredAt = (await order.history()).find((r) => r.type === 'EXPIRE');
    expect(timedOutAt?.createdAt).toBe('2026-01-01T00:05:00.000Z');
    expect(expiredAt?.createdAt).toBe('2026-01-01T00:17:00.000Z');
  });

  it('should refuse a duration it cannot read, naming the forms it reads', async () => {
    t = await createTestRuntime();
    await expect(t.advance('3 days')).rejects.toThrow(InvalidDurationException);
    await expect(t.advance('3 days')).rejects.toThrow(/'30d', '15m', '1h30m'/);
  });
});

describe('startAt', () => {
  it('should start an order submitted with a given total, ready for APPROVE', async () => {
    t = await createTestRuntime({ timers: [{ machine: orderMachine }] });
    const order = await t.startAt(orderMachine, 'submitted', { context: { total: 20_000 } });
    expect(await order.state()).toEqual(['order.submitted']);
    await expect(order.send('APPROVE')).rejects.toThrow(
      'Orders over 10000 need a manual approval.',
    );
    // Its timer counts from the start.
    await t.advance('15m');
    expect(await order.state()).toEqual(['order.expired']);
  });

  it('should start a parallel configuration, filling a region left open with its initial state', async () => {
    t = await createTestRuntime();
    const both = await t.startAt(fulfillmentMachine, [
      'processing.payment.captured',
      'processing.packing.waiting',
    ]);
    expect(await both.state()).toEqual([
      'fulfillment.processing.payment.captured',
      'fulfillment.processing.packing.waiting',
    ]);
    await both.send('PACK');
    expect(await both.state()).toEqual(['fulfillment.shipped']);
    const open = await t.startAt(fulfillmentMachine, 'processing.payment.captured');
    expect(await open.state()).toEqual([
      'fulfillment.processing.payment.captured',
      'fulfillment.processing.packing.waiting',
    ]);
  });

  it('should refuse an impossible configuration with a named error', async () => {
    t = await createTestRuntime();
    const attempt = t.startAt(fulfillmentMachine, [
      'processing.payment.pending',
      'processing.payment.captured',
    ]);
    await expect(attempt).rejects.toThrow(ImpossibleConfigurationException);
    await expect(attempt).rejects.toThrow(
      "States 'processing.payment.pending' and 'processing.payment.captured' are children of the compound state 'processing.payment': only one of them can be active.",
    );
    await expect(
      t.startAt(fulfillmentMachine, ['processing.payment.captured', 'shipped']),
    ).rejects.toThrow(
      "States 'processing' and 'shipped' are children of the compound state 'fulfillment'",
    );
    await expect(t.startAt(orderMachine, 'sent')).rejects.toThrow(
      "Machine 'order' has no state 'sent'. Its states: draft, submitted, approved, cancelled, expired.",
    );
  });
});

describe('fakes', () => {
  it("should route @fail when a fake job actor rejects, recording the job's input", async () => {
    t = await createTestRuntime({ machines: [reportMachine] });
    t.fakes.job('buildReport', reject('printer on fire'));
    const report = await t.create(reportMachine);
    await report.send('BUILD');
    expect(await report.state()).toEqual(['report.failed']);
    expect(t.fakes.callsOf('buildReport')).toEqual([
      expect.objectContaining({ kind: 'job', input: { pages: 3 }, faked: true }),
    ]);
    const fail = (await report.history()).find((r) => r.type === 'report.child.buildReport.fail');
    expect(fail?.payload).toMatchObject({ error: { message: 'printer on fire' } });
  });

  it("should route @done with a fake job's output, checked by nothing else", async () => {
    t = await createTestRuntime({ machines: [reportMachine] });
    t.fakes.job('buildReport', resolve({ url: 'https://example.test/r.pdf' }));
    const report = await t.create(reportMachine);
    await report.send('BUILD');
    expect(await report.context()).toEqual({ pages: 3, url: 'https://example.test/r.pdf' });
  });

  it('should fake the checkout: its payment child resolves paid, then its capture job rejects', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    t.fakes.child('payment', resolve({ amount: 40, cardLast4: '4242' }, { final: 'paid' }));
    t.fakes.job('capturePayment', (call) =>
      (call.input['amount'] as number) > 10
        ? reject('declined')
        : resolve({ paymentId: 'P', amount: 1 }),
    );
    const checkout = await t.create(checkoutMachine);
    expect(await checkout.state()).toEqual(['checkout.payment_failed']);
    expect(await checkout.context()).toMatchObject({ paidWith: '4242', paymentId: null });
    expect(t.fakes.calls.map((call) => [call.kind, call.name, call.input])).toEqual([
      ['child', 'payment', { amount: 40 }],
      ['job', 'capturePayment', { orderId: 'ORD-1', amount: 40, paidWith: '4242' }],
    ]);
  });

  it('should leave a hanging child running until the parent is cancelled', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    t.fakes.child('payment', hang());
    const checkout = await t.create(checkoutMachine);
    await t.advance('1d');
    expect(await checkout.state()).toEqual(['checkout.paying']);
    await checkout.send('CANCEL');
    expect(await checkout.state()).toEqual(['checkout.cancelled']);
  });

  it('should route @fail when a fake child rejects', async () => {
    t = await createTestRuntime({ machines: [checkoutMachine] });
    t.fakes.child('payment', reject('card network down'));
    const checkout = await t.create(checkoutMachine);
    // The checkout has no @fail on paying: the failure is recorded, the state stays.
    const records = (await checkout.history()).map((r) => r.type);
    expect(records).toContain('checkout.child.payment.fail');
  });
});

describe('fakes under a scenario', () => {
  const shipped: string[] = [];
  const parcel = defineMachine({
    config: {
      id: 'kitParcel',
      initial: 'idle',
      states: {
        idle: { on: { BUY: 'charging' } },
        charging: {
          job: defineJob({ name: 'charge', run: async () => ({}) }),
          on: { '@done': 'shipping', '@fail': 'declined' },
        },
        shipping: {
          job: defineJob({
            name: 'ship',
            run: async () => {
              shipped.push('shipped a parcel');
              return {};
            },
          }),
          on: { '@done': 'shipped', '@fail': 'held' },
        },
        shipped: { type: 'final' },
        held: { type: 'final' },
        declined: { type: 'final' },
      },
    },
    scenarios: [
      defineScenario({
        slug: 'qa',
        description: 'Nothing is shipped for QA',
        source: 'idle',
        event: 'BUY',
        plan: {},
        continuation: { children: { shipping: '@fail' } },
      }),
    ],
  });

  it("should play the scenario in the completion step of a fake's answer, so the next job keeps it", async () => {
    t = await createTestRuntime({ machines: [parcel], scenarios: true });
    t.fakes.job('charge', resolve({}));
    const order = await t.create(parcel);
    await order.send('BUY', undefined, { scenario: { kind: 'play', slug: 'qa', params: {} } });
    expect(await order.state()).toEqual(['kitParcel.held']);
    expect(shipped).toEqual([]);
    // Without the scenario the same fake leads to the real shipping job.
    const real = await t.create(parcel);
    await real.send('BUY');
    expect(await real.state()).toEqual(['kitParcel.shipped']);
    expect(shipped).toEqual(['shipped a parcel']);
  });
});
