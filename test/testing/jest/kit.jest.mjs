// The test kit under jest, as a user's project runs it: installed from the packed tarball with
// jest 30 in a fresh project outside this repository, native ES modules (jest's
// --experimental-vm-modules; machine-routes is an ES module package). Copied there and run by
// test/testing/jest.test.ts.
import { defineJob, defineMachine } from 'machine-routes/runtime';
import { assertTransitions, createTestRuntime, reject } from 'machine-routes/testing';

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
      charging: { job: charge, input: ['amount'], on: { '@done': 'paid', '@fail': 'declined' } },
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

test('a daily every-timer fires 30 times in one advance of 30 days', async () => {
  t = await createTestRuntime({ timers: [{ machine: subscription }] });
  const instance = await t.create(subscription);
  const report = await t.advance('30d');
  expect(report.fires).toBe(30);
  expect(await instance.context()).toEqual({ renewals: 30 });
});

test('an instance started at a state with a context, on a SQLite file, routes @fail from a fake job', async () => {
  t = await createTestRuntime({ machines: [invoice], store: 'sqlite' });
  t.fakes.job('charge', reject('card declined'));
  const instance = await t.startAt(invoice, 'open', { context: { amount: 25 } });
  await instance.send('PAY');
  expect(await instance.state()).toEqual(['invoice.declined']);
  expect(t.fakes.callsOf('charge').map((call) => call.input)).toEqual([{ amount: 25 }]);
});

test('a transition table', async () => {
  t = await createTestRuntime({ machines: [invoice] });
  const results = await assertTransitions(t, invoice, [
    { from: 'open', event: 'VOID', to: 'voided' },
    { from: 'paid', event: 'VOID', rejects: 'it accepts no event' },
  ]);
  expect(results).toHaveLength(2);
});
