/**
 * The HTTP suite: every route shape, status and lifecycle hook, against real listening
 * servers of both adapters and a real SQLite file store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearerAuth } from '../../../fixtures/http/auth.js';
import { checkoutMachine } from '../../../fixtures/http/checkout-machine.js';
import { createOrderFixture } from '../../../fixtures/http/order-machine.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { tableModelBinder } from '../../../src/runtime/http/model-binder.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';

const REGISTRATIONS = {
  public: {
    prefix: 'orders',
    create: true,
    machineIdFor: ['SUBMIT', 'SEARCH', 'APPROVE', 'CANCEL', 'HOLD', 'EXPLODE'],
    middleware: ['trace:registration'],
  },
  stateless: { prefix: 'quotes', name: 'quote', only: ['SUBMIT', 'SEARCH', 'EXPLODE'] },
  model: {
    prefix: 'shops',
    name: 'shop_order',
    model: 'Order',
    attribute: 'machine_id',
    modelFor: ['SUBMIT', 'SEARCH'],
    only: ['SUBMIT', 'SEARCH'],
  },
  protected: {
    prefix: 'secure/orders',
    name: 'secure_order',
    create: true,
    machineIdFor: ['SUBMIT', 'SEARCH', 'APPROVE', 'CANCEL'],
    except: ['HOLD', 'EXPLODE'],
    middleware: ['auth:api'],
  },
} satisfies Record<string, RegistrationOptions>;

const CHECKOUTS: RegistrationOptions = {
  prefix: 'checkouts',
  create: true,
  machineIdFor: ['CANCEL'],
};
const UNKNOWN_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = { authorization: 'Bearer api-token' };
const IDLE_EVENTS = [
  { type: 'SUBMIT', source: 'parent' },
  { type: 'SEARCH', source: 'parent' },
  { type: 'HOLD', source: 'parent' },
  { type: 'EXPLODE', source: 'parent' },
];
const SUBMITTED_EVENTS = [
  { type: 'APPROVE', source: 'parent' },
  { type: 'CANCEL', source: 'parent' },
  { type: 'SEARCH', source: 'parent' },
];
const INITIAL_OUTPUT = { total: 0, label: 'initial', lastSearch: null, isLarge: false };

describe.each<AdapterName>(['fastify', 'express'])('HTTP endpoints over %s', (adapter) => {
  let dir: string;
  let store: SqliteStore;
  let runtime: MachineRuntime;
  let server: TestServer;
  let router: MachineRouter;
  const fixture = createOrderFixture();
  const logged: unknown[] = [];

  const call = (method: string, path: string, options?: Parameters<typeof send>[3]) =>
    send(server.url, method, path, options);
  const create = async (
    prefix = '/orders',
    headers: Record<string, string> = {},
  ): Promise<string> => {
    const response = await call('POST', `${prefix}/create`, { headers });
    expect(response.status).toBe(201);
    // Tests assert the calls of the request under test only.
    fixture.calls.length = 0;
    return (response.body as { data: { id: string } }).data.id;
  };
  const submitted = async (amount: number): Promise<string> => {
    const id = await create();
    expect(
      (await call('POST', `/orders/${id}/submit`, { body: { payload: { amount } } })).status,
    ).toBe(200);
    return id;
  };
  const instanceCount = (): number =>
    (store.database.prepare('SELECT COUNT(*) AS n FROM machine_instances').get() as { n: number })
      .n;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'machine-routes-http-'));
    store = new SqliteStore({ filename: join(dir, 'machines.db') });
    runtime = new MachineRuntime({ store });
    store.database.exec('CREATE TABLE orders (id TEXT PRIMARY KEY, machine_id TEXT)');
    store.database.exec("INSERT INTO orders (id, machine_id) VALUES ('o-1', NULL), ('o-2', NULL)");
    router = new MachineRouter({
      runtime,
      middleware: { auth: bearerAuth({ 'api-token': ['api'] }), trace: fixture.trace },
      models: { Order: tableModelBinder({ store, table: 'orders', key: 'id' }) },
      logger: { error: (_message, meta) => logged.push(meta.error) },
      bodyLimit: 4096,
      payloadLimit: 2048,
    });
    for (const options of Object.values(REGISTRATIONS))
      router.register(fixture.orderMachine, options);
    router.register(checkoutMachine, CHECKOUTS);
    // Mounted in two calls, as generated code mounts one registration at a time.
    const byMachine = (id: string) => ({
      routes: router.routes.filter(({ route }) => route.machineId === id),
      bodyLimit: router.bodyLimit,
    });
    server = await startServer(adapter, [byMachine('order'), byMachine('checkout')], {
      error: (_message, meta) => logged.push(meta.error),
    });
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    fixture.calls.length = 0;
    logged.length = 0;
  });

  describe('routes', () => {
    it('should mount exactly the table planRoutes gives for each registration', () => {
      const planned = [
        ...Object.values(REGISTRATIONS).flatMap((options) =>
          planRoutes(fixture.orderMachine, options),
        ),
        ...planRoutes(checkoutMachine, CHECKOUTS),
      ];
      expect(router.routes.map((mounted) => mounted.route)).toEqual(planned);
      if (server.hasRoute) {
        for (const route of planned) {
          expect(server.hasRoute(route.method, route.path.replace(/\{(\w+)\}/g, ':$1'))).toBe(true);
        }
      }
    });

    it('should name the routes of repeated registrations after each registration', () => {
      expect(
        router.routes.map(({ route }) => `${route.method} ${route.path} ${route.name}`),
      ).toEqual([
        'POST /orders/create order.create',
        'POST /orders/{machineId}/submit order.submit',
        'GET /orders/{machineId}/search order.search',
        'PATCH /orders/{machineId}/approve order.approve',
        'DELETE /orders/{machineId}/cancel order.cancel',
        'POST /orders/{machineId}/hold order.hold',
        'POST /orders/{machineId}/explode order.explode',
        'POST /quotes/submit quote.submit',
        'GET /quotes/search quote.search',
        'POST /quotes/explode quote.explode',
        'POST /shops/{order}/submit shop_order.submit',
        'GET /shops/{order}/search shop_order.search',
        'POST /secure/orders/create secure_order.create',
        'POST /secure/orders/{machineId}/submit secure_order.submit',
        'GET /secure/orders/{machineId}/search secure_order.search',
        'PATCH /secure/orders/{machineId}/approve secure_order.approve',
        'DELETE /secure/orders/{machineId}/cancel secure_order.cancel',
        'POST /checkouts/create checkout.create',
        'POST /checkouts/{machineId}/cancel checkout.cancel',
        'POST /checkouts/{machineId}/provide-card checkout.provide_card',
        'DELETE /checkouts/{machineId}/cancel-payment checkout.cancel_payment',
      ]);
    });
  });

  describe('create', () => {
    it('should answer 201 with id, state and output only', async () => {
      const response = await call('POST', '/orders/create');
      expect(response.status).toBe(201);
      expect(response.body).toEqual({
        data: { id: expect.any(String), state: ['order.idle'], output: INITIAL_OUTPUT },
      });
      const id = (response.body as { data: { id: string } }).data.id;
      expect(await runtime.restore(fixture.orderMachine, id)).toMatchObject({
        id,
        value: ['order.idle'],
      });
    });
  });

  describe('machineId-bound endpoints', () => {
    it('should send the event and answer the envelope in field order', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 250 } },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.submitted'],
          availableEvents: SUBMITTED_EVENTS,
          output: { total: 250, isLarge: false },
          isProcessing: false,
        },
      });
      expect(Object.keys((response.body as { data: object }).data)).toEqual([
        'id',
        'state',
        'availableEvents',
        'output',
        'isProcessing',
      ]);
    });

    it('should accept a body type naming the route event', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { type: 'SUBMIT', payload: { amount: 7 } },
      });
      expect(response.status).toBe(200);
    });

    it.each(['nope', UNKNOWN_ID])('should answer 404 for the unknown machine id %s', async (id) => {
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 1 } },
      });
      expect(response).toMatchObject({ status: 404, body: { message: 'Machine not found.' } });
      expect(response.body).toEqual({ message: 'Machine not found.' });
    });

    // The instance is loaded by `send` on routes without before()/onException: an unknown id
    // must still win over a bad body, as when it was loaded first.
    it.each([
      ['POST', `/orders/${UNKNOWN_ID}/hold`, { type: 'CANCEL' }],
      ['POST', `/orders/${UNKNOWN_ID}/hold`, []],
      ['GET', `/orders/${UNKNOWN_ID}/search?code=A&limit=x`, undefined],
    ])(
      'should answer 404 for an unknown machine id before looking at the input (%s %s)',
      async (method, path, body) => {
        const response = await call(method, path, body === undefined ? {} : { body });
        expect(response).toMatchObject({ status: 404, body: { message: 'Machine not found.' } });
      },
    );
  });

  describe('validation', () => {
    it('should answer 422 with field errors keyed by payload path', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 0, note: 5 } },
      });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message: 'Too small: expected number to be >=1 (and 1 more error)',
        errors: {
          'payload.amount': ['Too small: expected number to be >=1'],
          'payload.note': ['Invalid input: expected string, received number'],
        },
      });
      expect(fixture.calls).toEqual(['middleware:registration']);
    });

    it('should say that event data goes under payload when the body has it at the top level', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/submit`, { body: { amount: 250 } });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message:
          'Invalid input: expected number, received undefined. Event data goes under "payload": ' +
          'send {"payload": {"amount": ...}}; the top-level key "amount" is not read.',
        errors: { 'payload.amount': ['Invalid input: expected number, received undefined'] },
      });
      const several = await call('POST', '/quotes/submit', {
        body: { type: 'SUBMIT', payload: {}, amount: 1, note: 'n', a: 1, b: 2 },
      });
      expect(several.status).toBe(422);
      expect((several.body as { message: string }).message).toMatch(
        /\. Event data goes under "payload": send \{"payload": \{"amount": \.\.\., "note": \.\.\., "a": \.\.\., \.\.\.\}\}; the top-level keys "amount", "note", "a", \.\.\. are not read\.$/,
      );
      // A body of the layer's own keys only gets no hint.
      const plain = await call('POST', '/quotes/submit', { body: { type: 'SUBMIT', payload: {} } });
      expect(plain.body).toEqual({
        message: 'Invalid input: expected number, received undefined',
        errors: { 'payload.amount': ['Invalid input: expected number, received undefined'] },
      });
    });

    it('should answer 422 when the body type names another event', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { type: 'CANCEL', payload: { amount: 1 } },
      });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message: "The type must be 'SUBMIT' (the event of this route).",
        errors: { type: ["The type must be 'SUBMIT' (the event of this route)."] },
      });
    });

    it('should answer 422 when a validation guard fails, leaving the state unchanged', async () => {
      const id = await submitted(2000);
      const response = await call('PATCH', `/orders/${id}/approve`);
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message: 'The total exceeds the approval limit.',
        errors: { total: ['The total exceeds the approval limit.'] },
      });
      expect((await runtime.restore(fixture.orderMachine, id)).value).toEqual(['order.submitted']);
    });

    it('should answer 200 with the unchanged state when a regular guard fails', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/hold`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.idle'],
          availableEvents: IDLE_EVENTS,
          output: INITIAL_OUTPUT,
          isProcessing: false,
        },
      });
    });

    it('should answer 409 when the current state does not accept the event', async () => {
      const id = await submitted(10);
      const response = await call('POST', `/orders/${id}/hold`);
      expect(response.status).toBe(409);
      // What happened and what the client can send now; nothing about editing the definition.
      expect(response.body).toEqual({
        message:
          "Machine 'order' cannot accept event 'HOLD' in its current state ('order.submitted'). " +
          'Events it accepts now: APPROVE, CANCEL, SEARCH (its availableEvents).',
      });
    });
  });

  describe('GET endpoints', () => {
    // GET data is the query (spec "GET endpoints"); a body sent with a GET means nothing (RFC
    // 9110) and is not read: no 413 or 415, which no GET operation documents.
    it.each<[string, Record<string, string>, string]>([
      ['over the body limit', { 'content-type': 'application/json' }, `"${'x'.repeat(6000)}"`],
      ['not JSON', { 'content-type': 'text/plain' }, 'hello'],
      ['malformed JSON', { 'content-type': 'application/json' }, '{'],
    ])(
      'should answer a GET whose body is %s from its query alone',
      async (_name, headers, body) => {
        const id = await create();
        const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const url = new URL(`${server.url}/orders/${id}/search?code=ABC&limit=1`);
          // Node's client frames a GET body only when told its length.
          const framed = { ...headers, 'content-length': String(Buffer.byteLength(body)) };
          const outgoing = httpRequest(url, { method: 'GET', headers: framed }, (incoming) => {
            let text = '';
            incoming.setEncoding('utf8');
            incoming.on('data', (chunk: string) => (text += chunk));
            incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, body: text }));
          });
          outgoing.on('error', reject);
          outgoing.end(body);
        });
        expect(response.status).toBe(200);
        expect(JSON.parse(response.body)).toMatchObject({
          data: { id, output: { lastSearch: { code: 'ABC', limit: 1 } } },
        });
      },
    );

    it('should wrap query parameters into the payload and coerce them', async () => {
      const id = await create();
      const response = await call(
        'GET',
        `/orders/${id}/search?code=ABC&limit=10&urgent=true&tags[]=a&tags[]=b`,
      );
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.idle'],
          availableEvents: IDLE_EVENTS,
          output: {
            ...INITIAL_OUTPUT,
            lastSearch: { code: 'ABC', limit: 10, urgent: true, tags: ['a', 'b'] },
          },
          isProcessing: false,
        },
      });
    });

    it('should not wrap the bracket form payload[key]=', async () => {
      const id = await create();
      const response = await call('GET', `/orders/${id}/search?payload[code]=XYZ&payload[limit]=5`);
      expect(response.status).toBe(200);
      expect((response.body as { data: { output: unknown } }).data.output).toEqual({
        ...INITIAL_OUTPUT,
        lastSearch: { code: 'XYZ', limit: 5 },
      });
    });

    it('should validate query strings like bodies', async () => {
      const id = await create();
      const response = await call('GET', `/orders/${id}/search?code=AB&limit=many`);
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message: 'Too small: expected string to have >=3 characters (and 1 more error)',
        errors: {
          'payload.code': ['Too small: expected string to have >=3 characters'],
          'payload.limit': ['Invalid input: expected number, received string'],
        },
      });
    });
  });

  describe('output', () => {
    it('should use the endpoint output behavior and run registration then endpoint middleware', async () => {
      const id = await submitted(300);
      fixture.calls.length = 0;
      const response = await call('PATCH', `/orders/${id}/approve`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.approved'],
          availableEvents: [],
          output: { summary: 'submitted:300' },
          isProcessing: false,
        },
      });
      expect(fixture.calls).toEqual(['middleware:registration', 'middleware:endpoint']);
    });

    it('should filter context keys, use the endpoint status and omit availableEvents', async () => {
      const id = await submitted(300);
      const response = await call('DELETE', `/orders/${id}/cancel`);
      expect(response.status).toBe(202);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.cancelled'],
          output: { label: 'submitted' },
          isProcessing: false,
        },
      });
    });

    it('should fall back to the state output, then to context plus computed values', async () => {
      const id = await create();
      const search = await call('GET', `/orders/${id}/search?code=ABC&limit=1`);
      expect((search.body as { data: { output: unknown } }).data.output).toEqual({
        ...INITIAL_OUTPUT,
        lastSearch: { code: 'ABC', limit: 1 },
      });
      const submit = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 900 } },
      });
      expect((submit.body as { data: { output: unknown } }).data.output).toEqual({
        total: 900,
        isLarge: true,
      });
    });
  });

  describe('endpoint actions', () => {
    it('should run before() with the pre-transition and after() with the post-transition state', async () => {
      const id = await create();
      await call('POST', `/orders/${id}/submit`, { body: { payload: { amount: 42 } } });
      expect(fixture.calls).toEqual([
        'middleware:registration',
        'before:order.idle',
        'after:order.submitted:42',
      ]);
    });

    it('should stop the request when before() aborts', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 42 } },
        headers: { 'x-deny': '1' },
      });
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ message: 'Denied by policy.' });
      expect(fixture.calls).toEqual(['middleware:registration', 'before:order.idle']);
      expect((await runtime.restore(fixture.orderMachine, id)).value).toEqual(['order.idle']);
    });

    it('should call onException and re-throw on null', async () => {
      const id = await submitted(5);
      fixture.calls.length = 0;
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 1 } },
      });
      expect(response.status).toBe(409);
      expect(fixture.calls).toEqual([
        'middleware:registration',
        'before:order.submitted',
        'onException:NoTransitionDefinitionFoundException',
      ]);
    });

    it('should answer 500 without internals when an action throws and onException declines', async () => {
      const id = await create();
      const response = await call('POST', `/orders/${id}/explode`);
      expect(response.status).toBe(500);
      expect(response.body).toEqual({ message: 'Internal Server Error' });
      expect(fixture.calls).toEqual(['middleware:registration', 'rescue']);
      expect(logged).toHaveLength(1);
      expect(String(logged[0])).toContain('secret internals');
    });

    it('should send the response onException returns as it is', async () => {
      const response = await call('POST', '/quotes/explode', { headers: { 'x-rescue': '1' } });
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ error: 'handled', message: 'Action blew up' });
      expect(logged).toEqual([]);
    });
  });

  describe('lock contention', () => {
    const holdLock = async (id: string) => {
      expect(
        await store.tryAcquireLock({
          rootEventId: id,
          ownerId: '01HZZZZZZZZZZZZZZZZZZZZZZZ',
          ttlMs: 60_000,
          context: 'test',
        }),
      ).toBe(true);
      return () => store.releaseLock(id, '01HZZZZZZZZZZZZZZZZZZZZZZZ');
    };

    it('should answer a write with 423 and the last committed state, without processing the event', async () => {
      const id = await create();
      const release = await holdLock(id);
      fixture.calls.length = 0;
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 9 } },
      });
      await release();
      expect(response.status).toBe(423);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.idle'],
          availableEvents: IDLE_EVENTS,
          output: INITIAL_OUTPUT,
          isProcessing: true,
        },
      });
      // before() ran; after() and onException() did not.
      expect(fixture.calls).toEqual(['middleware:registration', 'before:order.idle']);
      expect((await runtime.restore(fixture.orderMachine, id)).value).toEqual(['order.idle']);
    });

    it('should answer a GET with 200 and isProcessing true', async () => {
      const id = await create();
      const release = await holdLock(id);
      const response = await call('GET', `/orders/${id}/search?code=ABC&limit=1`);
      await release();
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        data: {
          id,
          state: ['order.idle'],
          availableEvents: IDLE_EVENTS,
          output: INITIAL_OUTPUT,
          isProcessing: true,
        },
      });
    });
  });

  describe('stateless endpoints', () => {
    it('should run a fresh machine per request and persist nothing', async () => {
      const before = instanceCount();
      const response = await call('POST', '/quotes/submit', { body: { payload: { amount: 5 } } });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        data: {
          id: expect.any(String),
          state: ['order.submitted'],
          availableEvents: SUBMITTED_EVENTS,
          output: { total: 5, isLarge: false },
          isProcessing: false,
        },
      });
      expect(instanceCount()).toBe(before);
    });
  });

  describe('model-bound endpoints', () => {
    it('should create a machine on first use, store its id on the record and reuse it', async () => {
      const first = await call('POST', '/shops/o-1/submit', { body: { payload: { amount: 12 } } });
      expect(first.status).toBe(200);
      const { machine_id: stored } = store.database
        .prepare("SELECT machine_id FROM orders WHERE id = 'o-1'")
        .get() as {
        machine_id: string;
      };
      expect(first.body).toEqual({
        data: {
          id: stored,
          state: ['order.submitted'],
          availableEvents: SUBMITTED_EVENTS,
          output: { total: 12, isLarge: false },
          isProcessing: false,
        },
      });
      const second = await call('GET', '/shops/o-1/search?code=ABCD&limit=2');
      expect(second.body).toMatchObject({ data: { id: stored, state: ['order.submitted'] } });
    });

    it('should answer 404 when no record matches', async () => {
      const response = await call('POST', '/shops/missing/submit', {
        body: { payload: { amount: 1 } },
      });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: 'Order not found.' });
    });
  });

  describe('authentication', () => {
    it.each([
      ['POST', '/secure/orders/create'],
      ['POST', `/secure/orders/${UNKNOWN_ID}/submit`],
      ['GET', `/secure/orders/${UNKNOWN_ID}/search?code=ABC&limit=1`],
      ['PATCH', `/secure/orders/${UNKNOWN_ID}/approve`],
      ['DELETE', `/secure/orders/${UNKNOWN_ID}/cancel`],
    ])(
      'should answer 401 on %s %s without a valid token, before the handler runs',
      async (method, path) => {
        const before = instanceCount();
        for (const headers of [{}, { authorization: 'Bearer wrong' }] as Record<string, string>[]) {
          const response = await call(method, path, { headers });
          expect(response.status).toBe(401);
          expect(response.body).toEqual({ message: 'Unauthenticated.' });
        }
        expect(instanceCount()).toBe(before);
        expect(fixture.calls).toEqual([]);
      },
    );

    // Spec "Request handling order": route middleware comes first, so a body the layer cannot
    // read is the middleware's 401 without credentials, and its own 400/415 with them.
    it.each<[string, string, Record<string, string>, string | Uint8Array, number, string]>([
      [
        'malformed JSON',
        'submit',
        { 'content-type': 'application/json' },
        '{"payload":',
        400,
        'Malformed JSON in request body.',
      ],
      [
        'JSON nested too deep',
        'submit',
        { 'content-type': 'application/json' },
        `{"payload":${'['.repeat(40)}${']'.repeat(40)}}`,
        400,
        'The request body is nested more than 32 levels deep.',
      ],
      [
        'a text/plain body',
        'submit',
        { 'content-type': 'text/plain' },
        'amount=1',
        415,
        'Unsupported Media Type: send application/json.',
      ],
      [
        'a body without Content-Type',
        'submit',
        {},
        new TextEncoder().encode('{"payload":{"amount":1}}'),
        415,
        'Unsupported Media Type: send application/json.',
      ],
      [
        'a Content-Type that does not parse',
        'submit',
        { 'content-type': 'json' },
        '{"payload":{"amount":1}}',
        415,
        'Unsupported Media Type: send application/json.',
      ],
      [
        'a gzip body',
        'submit',
        { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        gzipSync('{"payload":{"amount":1}}'),
        415,
        "Unsupported Media Type: Content-Encoding 'gzip' is not accepted; send the JSON body uncompressed.",
      ],
      [
        'malformed JSON to create',
        'create',
        { 'content-type': 'application/json' },
        '{',
        400,
        'Malformed JSON in request body.',
      ],
    ])(
      'should answer %s on a protected route 401 without a token and after middleware with one',
      async (_name, route, headers, raw, status, message) => {
        const id = await create('/secure/orders', TOKEN);
        const path = route === 'create' ? '/secure/orders/create' : `/secure/orders/${id}/submit`;
        const before = instanceCount();
        const anonymous = await call('POST', path, { raw, headers });
        expect({ status: anonymous.status, body: anonymous.body }).toEqual({
          status: 401,
          body: { message: 'Unauthenticated.' },
        });
        const authenticated = await call('POST', path, { raw, headers: { ...headers, ...TOKEN } });
        expect({ status: authenticated.status, body: authenticated.body }).toEqual({
          status,
          body: { message },
        });
        expect(instanceCount()).toBe(before);
        expect(fixture.calls).toEqual([]);
      },
    );

    it('should answer a body over the size limit 413 before the middleware runs', async () => {
      // Refused before it is read: a middleware answer would need the whole body received first.
      const response = await call('POST', `/secure/orders/${UNKNOWN_ID}/submit`, {
        raw: `{"payload":{"note":"${'x'.repeat(5000)}"}}`,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(413);
      expect(response.body).toEqual({ message: 'Request body is too large.' });
    });

    it('should serve the protected registration with a valid token', async () => {
      const id = await create('/secure/orders', TOKEN);
      const response = await call('POST', `/secure/orders/${id}/submit`, {
        body: { payload: { amount: 3 } },
        headers: TOKEN,
      });
      expect(response.status).toBe(200);
      expect(fixture.calls).toEqual(['before:order.idle', 'after:order.submitted:3']);
    });

    it('should leave the public registration of the same machine open', async () => {
      expect((await call('POST', '/orders/create')).status).toBe(201);
    });
  });

  describe('forwarded endpoints', () => {
    it("should validate the request with the child's event schema", async () => {
      const id = await create('/checkouts');
      const response = await call('POST', `/checkouts/${id}/provide-card`, {
        body: { payload: { card: '12' } },
      });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message: 'Too small: expected string to have exactly 4 characters',
        errors: { 'payload.card': ['Too small: expected string to have exactly 4 characters'] },
      });
    });

    it('should answer 404 for an unknown parent', async () => {
      const response = await call('POST', `/checkouts/${UNKNOWN_ID}/provide-card`, {
        body: { payload: { card: '1234' } },
      });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: 'Machine not found.' });
    });
  });

  describe('bad input', () => {
    it('should answer 400 for malformed JSON', async () => {
      const response = await call('POST', '/quotes/submit', {
        raw: '{"payload":',
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ message: 'Malformed JSON in request body.' });
    });

    it('should answer 400 for a body that is not an object', async () => {
      const response = await call('POST', '/quotes/submit', { body: [1, 2] });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        message: 'The request body must be a JSON object: { "payload": { ... } }.',
      });
    });

    it('should answer 400 for a create body that is not an object, and create nothing', async () => {
      const before = instanceCount();
      const response = await call('POST', '/orders/create', { body: [1, 2] });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ message: 'The request body must be a JSON object.' });
      expect(instanceCount()).toBe(before);
      expect((await call('POST', '/orders/create', { body: {} })).status).toBe(201);
    });

    it('should answer 413 for a body over the limit', async () => {
      const response = await call('POST', '/quotes/submit', {
        body: { payload: { amount: 1, note: 'x'.repeat(5000) } },
      });
      expect(response.status).toBe(413);
      expect(response.body).toEqual({ message: 'Request body is too large.' });
    });

    it('should answer 415 for a body that is not JSON', async () => {
      const response = await call('POST', '/quotes/submit', {
        raw: 'amount=1',
        headers: { 'content-type': 'text/plain' },
      });
      expect(response.status).toBe(415);
      expect(response.body).toEqual({ message: 'Unsupported Media Type: send application/json.' });
    });

    it('should answer 415 for a compressed body, and create nothing', async () => {
      const before = instanceCount();
      for (const encoding of ['gzip', 'br', 'deflate']) {
        const response = await call('POST', '/orders/create', {
          raw: gzipSync('{"payload":{}}'),
          headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        });
        expect({ encoding, status: response.status, body: response.body }).toEqual({
          encoding,
          status: 415,
          body: {
            message: `Unsupported Media Type: Content-Encoding '${encoding}' is not accepted; send the JSON body uncompressed.`,
          },
        });
      }
      expect(instanceCount()).toBe(before);
      const identity = await call('POST', '/orders/create', {
        raw: '{"payload":{}}',
        headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
      });
      expect(identity.status).toBe(201);
    });

    it('should answer 404 for an unknown route', async () => {
      const response = await call('GET', '/nowhere');
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: 'Not Found.' });
    });

    it('should answer 405 with Allow for a wrong method on a known path', async () => {
      const response = await call('PUT', `/orders/${UNKNOWN_ID}/submit`);
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(response.body).toEqual({ message: 'Method Not Allowed.' });
    });

    it('should answer 400 for a JSON body nested deeper than the limit, and write nothing', async () => {
      const id = await create();
      const before = await runtime.history(fixture.orderMachine, id);
      const raw = `{"payload":{"amount":1,"note":${'['.repeat(1500)}${']'.repeat(1500)}}}`;
      const response = await call('POST', `/orders/${id}/submit`, {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        message: 'The request body is nested more than 32 levels deep.',
      });
      expect(await runtime.history(fixture.orderMachine, id)).toEqual(before);
    });

    it('should accept a body nested exactly to the limit and answer 400 one level deeper', async () => {
      const json = { 'content-type': 'application/json' };
      // The object, the payload and the arrays: 32 levels, then 33.
      const nested = (arrays: number) =>
        `{"payload":{"amount":1,"extra":${'['.repeat(arrays)}${']'.repeat(arrays)}}}`;
      const atLimit = await call('POST', '/quotes/submit', { raw: nested(30), headers: json });
      expect(atLimit.status).toBe(200);
      const over = await call('POST', '/quotes/submit', { raw: nested(31), headers: json });
      expect(over.status).toBe(400);
      expect(over.body).toEqual({
        message: 'The request body is nested more than 32 levels deep.',
      });
    });

    it('should answer 400 for a malformed query string on a route with a body', async () => {
      const response = await call('POST', '/quotes/submit?a=%E0%A4%A', {
        body: { payload: { amount: 1 } },
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ message: expect.stringMatching(/^Malformed query string/) });
    });

    it('should answer 400 for a query string nested deeper than the limit', async () => {
      const id = await create();
      const response = await call('GET', `/orders/${id}/search?q${'[a]'.repeat(2000)}=1`);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ message: expect.stringMatching(/^Malformed query string/) });
    });

    it('should answer 400 for a JSON null body, on events and on create', async () => {
      const before = instanceCount();
      const json = { 'content-type': 'application/json' };
      const created = await call('POST', '/orders/create', { raw: 'null', headers: json });
      expect(created.status).toBe(400);
      expect(instanceCount()).toBe(before);
      const response = await call('POST', '/quotes/submit', { raw: 'null', headers: json });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        message: 'The request body must be a JSON object: { "payload": { ... } }.',
      });
    });

    it('should answer HEAD on a GET event route without running the event', async () => {
      const id = await create();
      const before = await runtime.history(fixture.orderMachine, id);
      const head = await fetch(`${server.url}/orders/${id}/search?query=abc`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await runtime.history(fixture.orderMachine, id)).toEqual(before);
      expect(fixture.calls).toEqual(['middleware:registration']);
      const unknown = await fetch(`${server.url}/orders/${UNKNOWN_ID}/search`, { method: 'HEAD' });
      expect(unknown.status).toBe(404);
    });

    it('should answer 413 for an event payload over the payload limit, and write nothing', async () => {
      const id = await create();
      const before = await runtime.history(fixture.orderMachine, id);
      const response = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 1, note: 'x'.repeat(3000) } },
      });
      expect(response.status).toBe(413);
      expect(response.body).toEqual({
        message: "The payload of event 'SUBMIT' is larger than 2048 bytes.",
      });
      expect(await runtime.history(fixture.orderMachine, id)).toEqual(before);
      const small = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 1, note: 'x'.repeat(100) } },
      });
      expect(small.status).toBe(200);
    });

    it('should answer a path parameter with malformed percent-encoding as the client error it is', async () => {
      const response = await call('POST', '/orders/%E0%A4%A/submit', {
        body: { payload: { amount: 1 } },
      });
      // A bare Fastify mount refuses such a URL itself (FST_ERR_BAD_URL, 400, its own
      // { message, ... } body; the generated app's frameworkErrors makes it 404 { message }).
      // Express reaches the layer, which answers the documented 404 of an id naming no machine:
      // a read documents no 400.
      if (adapter === 'express') {
        expect(response.status).toBe(404);
        expect(response.body).toEqual({
          message: 'Not Found: the URL is not valid percent-encoded UTF-8.',
        });
      } else {
        expect([400, 404]).toContain(response.status);
        expect(response.body).toMatchObject({ message: expect.any(String) });
      }
      expect(logged).toEqual([]);
    });

    it('should create no machine for a model record when the first request is refused', async () => {
      store.database.exec(
        `INSERT INTO orders (id, machine_id) VALUES ('o-${adapter}', NULL) ON CONFLICT DO NOTHING`,
      );
      const before = instanceCount();
      const response = await call('POST', `/shops/o-${adapter}/submit`, {
        body: { payload: { amount: 0 } },
      });
      expect(response.status).toBe(422);
      expect(instanceCount()).toBe(before);
      expect(
        store.database.prepare('SELECT machine_id FROM orders WHERE id = ?').get(`o-${adapter}`),
      ).toEqual({ machine_id: null });
    });

    it('should let __proto__ and constructor keys pollute nothing', async () => {
      const raw =
        '{"payload":{"amount":3,"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}}';
      const response = await call('POST', '/quotes/submit', {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(200);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    });
  });
});
