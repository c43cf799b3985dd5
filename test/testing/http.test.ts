/**
 * The kit over HTTP, in process, on the virtual clock: the generated example's Fastify plugin
 * driven with `inject` (middleware, validation and the envelope included), and an Express
 * application through a real server on 127.0.0.1.
 */
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import config from '../../fixtures/example/machine-routes.config.js';
import { checkoutMachine } from '../../fixtures/example/machines/checkout.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { machineRoutes } from '../../generated-example/app.gen.js';
import { configMachines } from '../../generated-example/machines.gen.js';
import { mountExpress } from '../../src/express.js';
import { MachineRouter } from '../../src/runtime/index.js';
import {
  createTestRuntime,
  hang,
  httpDriver,
  resolve,
  type HttpDriver,
  type TestRuntime,
} from '../../src/testing/index.js';

let t: TestRuntime | undefined;
let app: FastifyInstance | undefined;
let driver: HttpDriver | undefined;
afterEach(async () => {
  await driver?.close();
  await app?.close();
  await t?.close();
  t = undefined;
  app = undefined;
  driver = undefined;
});

/** The generated example's routes on a test runtime. */
async function exampleApp(): Promise<HttpDriver> {
  t = await createTestRuntime({
    machines: configMachines(),
    timers: config.timers ?? [],
    store: 'sqlite',
  });
  app = Fastify();
  await app.register(machineRoutes, { runtime: t.runtime, notFound: true });
  return (driver = await httpDriver(t, app));
}

describe('the generated Fastify app, injected', () => {
  it('should create, submit and expire an order on the virtual clock, through validation and the envelope', async () => {
    const http = await exampleApp();
    const created = await http.post('/orders/create');
    expect(created.status).toBe(201);
    const id = (created.body as { data: { id: string } }).data.id;
    const invalid = await http.post(`/orders/${id}/submit`, { body: { payload: { amount: 0 } } });
    expect(invalid).toMatchObject({
      status: 422,
      body: { errors: { 'payload.amount': [expect.stringContaining('>=1')] } },
    });
    const submitted = await http.post(`/orders/${id}/submit`, {
      body: { payload: { amount: 500 } },
    });
    expect(submitted.body).toMatchObject({ data: { state: ['order.submitted'] } });
    await t!.advance('15m');
    const status = await http.get(`/orders/${id}/status`);
    expect(status.body).toMatchObject({ data: { state: ['order.expired'] } });
  });

  it('should answer 401 without a token on a protected route', async () => {
    const http = await exampleApp();
    const ticket = await http.post('/tickets/create');
    const id = (ticket.body as { data: { id: string } }).data.id;
    expect((await http.post(`/staff/tickets/${id}/resolve`)).status).toBe(401);
  });

  it('should forward to a faked child and report what the fake recorded', async () => {
    const http = await exampleApp();
    t!.fakes.child('payment', hang());
    const created = await http.post('/checkouts/create');
    const id = (created.body as { data: { id: string } }).data.id;
    expect(t!.fakes.callsOf('payment')).toEqual([
      expect.objectContaining({ input: { amount: 40 }, faked: true }),
    ]);
    expect((await http.post(`/checkouts/${id}/cancel`)).body).toMatchObject({
      data: { state: ['checkout.cancelled'] },
    });
  });

  it('should pay a checkout whose child resolves paid and whose capture job resolves', async () => {
    const http = await exampleApp();
    t!.fakes.child('payment', resolve({ amount: 40, cardLast4: '1111' }, { final: 'paid' }));
    t!.fakes.job('capturePayment', resolve({ paymentId: 'PAY-T', amount: 40 }));
    const created = await http.post('/checkouts/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const instance = t!.instance(checkoutMachine, id);
    expect(await instance.context()).toMatchObject({ paidWith: '1111', paymentId: 'PAY-T' });
  });
});

describe('an Express app on 127.0.0.1', () => {
  it('should serve the same order script, the timer included', async () => {
    t = await createTestRuntime({ machines: [orderMachine], timers: [{ machine: orderMachine }] });
    const router = new MachineRouter({ runtime: t.runtime });
    router.register(orderMachine, { prefix: 'orders', create: true, machineIdFor: ['SUBMIT'] });
    const server = express();
    mountExpress(server, router);
    const http = (driver = await httpDriver(t, server));
    const created = await http.post('/orders/create');
    const id = (created.body as { data: { id: string } }).data.id;
    expect(
      (await http.post(`/orders/${id}/submit`, { body: { payload: { amount: -1 } } })).status,
    ).toBe(422);
    await http.post(`/orders/${id}/submit`, { body: { payload: { amount: 42 } } });
    await t.advance('15m');
    expect(await t.instance(orderMachine, id).state()).toEqual(['order.expired']);
  });
});
