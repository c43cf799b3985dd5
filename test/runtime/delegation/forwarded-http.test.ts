/**
 * Forwarded endpoints over HTTP: real listening servers of both adapters, a real SQLite file
 * store, and the in-memory job queue run in-process (`runDue`) so children start and parents
 * complete deterministically.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { shopMachine } from '../../../fixtures/delegation/shop-machine.js';
import {
  InMemoryJobQueue,
  InvalidEndpointDefinitionException,
  InvalidRouterConfigException,
  MachineRouter,
  MachineRuntime,
  SqliteStore,
  defineMachine,
  planRoutes,
  tableModelBinder,
  type RegistrationOptions,
} from '../../../src/runtime/index.js';
import { paymentMachine } from '../../../fixtures/delegation/children.js';
import { CHILD_START_WAIT_MS } from '../../../src/runtime/engine/forwarded-send.js';
import { send, startServer, type AdapterName, type TestServer } from '../http/support/servers.js';

const SHOPS: RegistrationOptions = { prefix: 'shops', create: true, machineIdFor: ['CANCEL'] };
const CARTS: RegistrationOptions = {
  prefix: 'carts',
  name: 'cart',
  model: 'Cart',
  attribute: 'machine_id',
  only: ['PROVIDE_CARD', 'CONFIRM_PAYMENT'],
};
const LITE: RegistrationOptions = {
  prefix: 'lite',
  name: 'lite',
  create: true,
  except: ['DECLINE_PAYMENT', 'CONFIRM_PAYMENT', 'CANCEL'],
};
const CARD = { body: { payload: { card: '4111111111111111' } } };

describe.each<AdapterName>(['fastify', 'express'])('forwarded endpoints over %s', (adapter) => {
  let dir: string;
  let store: SqliteStore;
  let queue: InMemoryJobQueue;
  let runtime: MachineRuntime;
  let router: MachineRouter;
  let server: TestServer;
  const logged: unknown[] = [];

  const call = (method: string, path: string, options?: Parameters<typeof send>[3]) =>
    send(server.url, method, path, options);
  /** A shop with its payment child started (the start job run). */
  const shop = async (prefix = '/shops'): Promise<string> => {
    const response = await call('POST', `${prefix}/create`);
    expect(response.status).toBe(201);
    await queue.runDue();
    return (response.body as { data: { id: string } }).data.id;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'machine-routes-forward-'));
    store = new SqliteStore({ filename: join(dir, 'machines.db') });
    queue = new InMemoryJobQueue();
    runtime = new MachineRuntime({
      store,
      jobs: queue,
      onDeferredError: (error) => logged.push(error),
    });
    store.database.exec('CREATE TABLE carts (id TEXT PRIMARY KEY, machine_id TEXT)');
    store.database.exec("INSERT INTO carts (id, machine_id) VALUES ('c-1', NULL)");
    router = new MachineRouter({
      runtime,
      models: { Cart: tableModelBinder({ store, table: 'carts', key: 'id' }) },
      logger: { error: (_message, meta) => logged.push(meta.error) },
    });
    router.register(shopMachine, SHOPS);
    router.register(shopMachine, CARTS);
    router.register(shopMachine, LITE);
    server = await startServer(adapter, [{ routes: router.routes, bodyLimit: router.bodyLimit }], {
      error: (_message, meta) => logged.push(meta.error),
    });
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    logged.length = 0;
  });

  it('should plan forwarded routes bound like the registration, filtered by only/except', () => {
    expect(
      router.routes.map(
        ({ route }) => `${route.method} ${route.path} ${route.handler} ${route.name}`,
      ),
    ).toEqual([
      'POST /shops/create create shop.create',
      'POST /shops/{machineId}/cancel machineIdBound shop.cancel',
      'POST /shops/{machineId}/provide-card forwardedMachineIdBound shop.provide_card',
      'POST /shops/{machineId}/cancel-payment forwardedMachineIdBound shop.cancel_payment',
      'POST /shops/{machineId}/confirm forwardedMachineIdBound shop.confirm_payment',
      'PATCH /shops/{machineId}/decline-payment forwardedMachineIdBound shop.decline_payment',
      'POST /carts/{cart}/provide-card forwardedModelBound cart.provide_card',
      'POST /carts/{cart}/confirm forwardedModelBound cart.confirm_payment',
      'POST /lite/create create lite.create',
      'POST /lite/{machineId}/provide-card forwardedMachineIdBound lite.provide_card',
      'POST /lite/{machineId}/cancel-payment forwardedMachineIdBound lite.cancel_payment',
    ]);
    expect(router.routes.map(({ route }) => route)).toEqual([
      ...planRoutes(shopMachine, SHOPS),
      ...planRoutes(shopMachine, CARTS),
      ...planRoutes(shopMachine, LITE),
    ]);
  });

  it('should forward a list entry: validate with the child schema, send the child, answer parent and child', async () => {
    const id = await shop();

    const response = await call('POST', `/shops/${id}/provide-card`, CARD);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: {
        id,
        state: ['shop.paying'],
        availableEvents: [
          { type: 'CANCEL', source: 'parent' },
          { type: 'CONFIRM_PAYMENT', source: 'forward' },
          { type: 'DECLINE_PAYMENT', source: 'forward' },
        ],
        child: { state: ['payment.charging'], output: { amount: 40, cardLast4: '1111' } },
        isProcessing: false,
      },
    });
    const history = await runtime.history(shopMachine, id);
    expect(history.at(-1)).toMatchObject({
      type: 'PROVIDE_CARD',
      source: 'external',
      payload: CARD.body.payload,
    });
  });

  it("should answer 422 from the child's event schema", async () => {
    const id = await shop();

    const response = await call('POST', `/shops/${id}/provide-card`, {
      body: { payload: { card: 'x' } },
    });

    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      message: expect.any(String),
      errors: { 'payload.card': [expect.any(String)] },
    });
  });

  it('should run a custom output behavior with the child output, then complete the parent', async () => {
    const id = await shop();
    await call('POST', `/shops/${id}/provide-card`, CARD);

    const response = await call('POST', `/shops/${id}/confirm`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: {
        id,
        state: ['shop.paying'],
        availableEvents: [{ type: 'CANCEL', source: 'parent' }],
        output: { orderId: 'ORD-7', paid: 40, card: '1111' },
        child: { state: ['payment.paid'], output: { amount: 40, cardLast4: '1111' } },
        isProcessing: false,
      },
    });
    await queue.runDue();
    expect((await runtime.restore(shopMachine, id)).value).toEqual(['shop.paid']);
  });

  it('should forward a rename (CANCEL_PAYMENT -> ABORT) and route the child outcome', async () => {
    const id = await shop();

    const response = await call('POST', `/shops/${id}/cancel-payment`);

    expect(response.status).toBe(200);
    expect((response.body as { data: { child: unknown } }).data.child).toEqual({
      state: ['payment.declined'],
      output: { amount: 40, cardLast4: null },
    });
    await queue.runDue();
    expect((await runtime.restore(shopMachine, id)).value).toEqual(['shop.failed']);
  });

  it('should honour an options entry: method, key-list output over the child, no availableEvents', async () => {
    const id = await shop();
    await call('POST', `/shops/${id}/provide-card`, CARD);

    const response = await call('PATCH', `/shops/${id}/decline-payment`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      data: {
        id,
        state: ['shop.paying'],
        child: { state: ['payment.declined'], output: { cardLast4: '1111' } },
        isProcessing: false,
      },
    });
  });

  it('should wait for a child that is still starting, then answer 409 once the child does not accept the event', async () => {
    const created = await call('POST', '/shops/create');
    const id = (created.body as { data: { id: string } }).data.id;

    // The start job has not run: the forwarded request waits for it instead of failing.
    const early = call('POST', `/shops/${id}/provide-card`, CARD);
    await sleep(100);
    await queue.runDue();
    const answered = await early;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({
      data: { id, state: ['shop.paying'], child: { state: ['payment.charging'] } },
    });

    const again = await call('POST', `/shops/${id}/provide-card`, CARD);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      message: expect.stringContaining("does not accept 'PROVIDE_CARD' now"),
    });
    // Refused forwards write nothing.
    expect(
      (await runtime.history(shopMachine, id)).filter((record) => record.type === 'PROVIDE_CARD'),
    ).toHaveLength(1);
    expect(logged).toEqual([]);
  });

  it('should answer 409 naming the queued start when the child does not start in time', async () => {
    const created = await call('POST', '/shops/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const sent = Date.now();

    const late = await call('POST', `/shops/${id}/provide-card`, CARD);

    expect(late.status).toBe(409);
    expect(late.body).toEqual({
      message: expect.stringContaining(
        `but the child has not started within ${CHILD_START_WAIT_MS} ms (its start job is still queued). Retry shortly.`,
      ),
    });
    // It waited for the start before giving up.
    expect(Date.now() - sent).toBeGreaterThanOrEqual(CHILD_START_WAIT_MS - 10);
    expect(
      (await runtime.history(shopMachine, id)).filter((record) => record.type === 'PROVIDE_CARD'),
    ).toEqual([]);
    await queue.runDue();
  });

  it('should answer 423 with the parent state and isProcessing while the parent is locked', async () => {
    const id = await shop();

    const response = await runtime.withLock(id, () =>
      call('POST', `/shops/${id}/provide-card`, CARD),
    );

    expect(response.status).toBe(423);
    expect(response.body).toEqual({
      data: {
        id,
        state: ['shop.paying'],
        availableEvents: [
          { type: 'CANCEL', source: 'parent' },
          { type: 'PROVIDE_CARD', source: 'forward' },
          { type: 'CANCEL_PAYMENT', source: 'forward' },
        ],
        child: { state: ['payment.awaiting'], output: { amount: 40, cardLast4: null } },
        isProcessing: true,
      },
    });
    expect(
      (await runtime.history(shopMachine, id)).some((record) => record.type === 'PROVIDE_CARD'),
    ).toBe(false);
  });

  it('should bind forwarded endpoints by model when the registration has a model', async () => {
    // The cart has no machine: one is created, and the forward waits for its child's start.
    const first = call('POST', '/carts/c-1/provide-card', CARD);
    await sleep(100);
    await queue.runDue();

    const response = await first;

    expect(response.status).toBe(200);
    const machineId = (
      store.database.prepare("SELECT machine_id FROM carts WHERE id = 'c-1'").get() as {
        machine_id: string;
      }
    ).machine_id;
    expect(response.body).toMatchObject({
      data: { id: machineId, state: ['shop.paying'], child: { state: ['payment.charging'] } },
    });
    expect((await call('POST', '/carts/c-404/provide-card', CARD)).status).toBe(404);
  });

  it('should not expose forwarded events filtered out by only/except', async () => {
    const id = await shop('/lite');

    expect((await call('POST', `/lite/${id}/confirm`)).status).toBe(404);
    expect((await call('POST', `/lite/${id}/cancel-payment`)).status).toBe(200);
  });
});

describe('forwarded endpoint registration and definition errors', () => {
  const router = new MachineRouter({
    runtime: new MachineRuntime({ store: new SqliteStore({ filename: ':memory:' }) }),
    models: {
      Cart: { find: () => null, readMachineId: () => null, writeMachineId: () => undefined },
    },
  });

  it.each<[string, RegistrationOptions, RegExp]>([
    [
      'a forwarded event in machineIdFor',
      { prefix: 'x', machineIdFor: ['PROVIDE_CARD'] },
      /'machineIdFor' cannot reference forwarded endpoints .*PROVIDE_CARD/,
    ],
    [
      'a forwarded event in modelFor',
      { prefix: 'x', model: 'Cart', attribute: 'machine_id', modelFor: ['CONFIRM_PAYMENT'] },
      /'modelFor' cannot reference forwarded endpoints .*CONFIRM_PAYMENT/,
    ],
    [
      'an unknown type in only',
      { prefix: 'x', only: ['PROVIDE'] },
      /unknown event types in 'only': PROVIDE/,
    ],
  ])('should reject %s with InvalidRouterConfigException', (_case, options, message) => {
    expect(() => router.register(shopMachine, options)).toThrow(InvalidRouterConfigException);
    expect(() => router.register(shopMachine, options)).toThrow(message);
  });

  it('should reject a forwarded event also declared in the parent endpoints', () => {
    expect(() =>
      defineMachine({
        config: {
          id: 'dup',
          initial: 'paying',
          states: {
            paying: {
              machine: paymentMachine,
              queue: true,
              forward: ['PROVIDE_CARD'],
              on: { '@done': 'paying', PROVIDE_CARD: null },
            },
          },
        },
        endpoints: ['PROVIDE_CARD'],
      }),
    ).toThrow(InvalidEndpointDefinitionException);
  });
});
