// The test kit under node:test, against the built package (dist/, as an application installs
// it): plain JavaScript, no loader. Run by test/testing/node-test.test.ts as `node --test`.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { defineJob, defineMachine } from 'machine-routes/runtime';
import {
  assertTransitions,
  createTestRuntime,
  ImpossibleConfigurationException,
  reject,
} from 'machine-routes/testing';

const subscription = defineMachine({
  config: {
    id: 'subscription',
    initial: 'active',
    context: { renewals: 0 },
    states: {
      active: {
        on: {
          RENEW: { target: null, every: { days: 1 }, actions: 'countRenewal' },
          CANCEL: 'cancelled',
        },
      },
      cancelled: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      countRenewal: ({ context }) => {
        context.renewals += 1;
      },
    },
  },
});

const charge = defineJob({
  name: 'charge',
  run: async () => {
    throw new Error('the real charge ran');
  },
});

const invoice = defineMachine({
  config: {
    id: 'invoice',
    initial: 'open',
    context: { amount: 10 },
    states: {
      open: { on: { PAY: 'charging', VOID: 'voided' } },
      charging: {
        job: charge,
        input: ['amount'],
        on: { '@done': 'paid', '@fail': 'declined' },
      },
      paid: { type: 'final' },
      declined: { type: 'final' },
      voided: { type: 'final' },
    },
  },
});

let t;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('machine-routes/testing under node:test', () => {
  it('fires a daily every-timer 30 times in one advance of 30 days', async () => {
    t = await createTestRuntime({ timers: [{ machine: subscription }] });
    const instance = await t.create(subscription);
    const report = await t.advance('30d');
    assert.equal(report.fires, 30);
    assert.deepEqual(await instance.context(), { renewals: 30 });
  });

  it("routes @fail when a fake job actor rejects, recording the job's input", async () => {
    t = await createTestRuntime({ machines: [invoice], store: 'sqlite' });
    t.fakes.job('charge', reject('card declined'));
    const instance = await t.create(invoice);
    await instance.send('PAY');
    assert.deepEqual(await instance.state(), ['invoice.declined']);
    assert.deepEqual(
      t.fakes.callsOf('charge').map((call) => call.input),
      [{ amount: 10 }],
    );
  });

  it('asserts a transition table', async () => {
    t = await createTestRuntime({ machines: [invoice] });
    const results = await assertTransitions(t, invoice, [
      { from: 'open', event: 'VOID', to: 'voided' },
      { from: 'paid', event: 'VOID', rejects: 'it accepts no event' },
    ]);
    assert.equal(results.length, 2);
  });

  it('refuses an impossible start with a named error', async () => {
    t = await createTestRuntime();
    await assert.rejects(t.startAt(invoice, ['paid', 'voided']), ImpossibleConfigurationException);
  });
});
