/**
 * Scenarios over HTTP (MACHINE_SCENARIOS_ENABLED): real listening servers of both adapters on
 * a SQLite file and on PostgreSQL; the in-memory job queue runs child starts in-process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderMachine, quoteMachine, shopMachine } from '../../../fixtures/scenarios/machines.js';
import {
  InMemoryJobQueue,
  MachineRouter,
  MachineRuntime,
  type Store,
} from '../../../src/runtime/index.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('scenarios-http');
if (postgres) backends.push(postgres);

type Data = Record<string, unknown> & { id: string; state: string[] };

const cases = backends.flatMap((backend) =>
  (['fastify', 'express'] as AdapterName[]).map((adapter) => ({ backend, adapter })),
);

describe.each(cases)('scenarios over $adapter on $backend.name', ({ backend, adapter }) => {
  let store: Store;
  let queue: InMemoryJobQueue;
  let runtime: MachineRuntime;
  let server: TestServer;
  let plain: TestServer;
  let plainRuntime: MachineRuntime;
  const logged: unknown[] = [];

  const call = (method: string, path: string, body?: unknown, base = server) =>
    send(base.url, method, path, body === undefined ? {} : { body });
  const data = (response: { body: unknown }) => (response.body as { data: Data }).data;
  const create = async (prefix: string, base = server): Promise<string> => {
    const response = await call('POST', `${prefix}/create`, undefined, base);
    expect(response.status).toBe(201);
    return data(response).id;
  };
  /** What the instance has written: its history length and its current-state rows. */
  const written = async (id: string) => ({
    history: (await store.history(id)).length,
    states: await store.currentStates(id),
  });
  const kept = async (id: string) =>
    (await store.currentStates(id)).map((row) => [row.scenarioClass, row.scenarioParams]);

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
    queue = new InMemoryJobQueue();
    runtime = new MachineRuntime({ store, jobs: queue, scenarios: true });
    const router = new MachineRouter({
      runtime,
      logger: { error: (_message, meta) => logged.push(meta.error) },
    });
    router.register(orderMachine, {
      prefix: 'orders',
      create: true,
      machineIdFor: ['PAY', 'RETRY'],
    });
    router.register(shopMachine, { prefix: 'shops', create: true, machineIdFor: ['START'] });
    router.register(quoteMachine, { prefix: 'quotes' });
    server = await startServer(adapter, [{ routes: router.routes, bodyLimit: router.bodyLimit }], {
      error: (_message, meta) => logged.push(meta.error),
    });
    // The same store with scenarios off (the default).
    plainRuntime = new MachineRuntime({ store, jobs: new InMemoryJobQueue() });
    const plainRouter = new MachineRouter({ runtime: plainRuntime });
    plainRouter.register(orderMachine, { prefix: 'orders', create: true, machineIdFor: ['PAY'] });
    plain = await startServer(
      adapter,
      [{ routes: plainRouter.routes, bodyLimit: plainRouter.bodyLimit }],
      {
        error: (_message, meta) => logged.push(meta.error),
      },
    );
  });

  afterAll(async () => {
    await server?.close();
    await plain?.close();
    await queue?.stop();
    await store?.close();
    await backend.tearDown();
    expect(logged).toEqual([]);
  });

  it('should list availableScenarios by event and no activeScenario without a continuation', async () => {
    const id = await create('/orders');
    const response = await call('POST', `/orders/${id}/pay`, {
      scenario: 'declined',
      scenarioParams: { reason: 'card expired' },
    });
    expect(response.status).toBe(200);
    expect(data(response)).toEqual({
      id,
      state: ['order.paying'],
      availableEvents: [{ type: 'PAY', source: 'parent' }],
      output: { charged: 0, note: 'card expired' },
      isProcessing: false,
      availableScenarios: {
        PAY: [
          { slug: 'declined', description: 'The card is refused', hasContinuation: false },
          {
            slug: 'review-fails',
            description: 'The review fails, and retries stay blocked',
            hasContinuation: true,
          },
        ],
      },
    });
    expect(Object.keys(data(response))).toEqual([
      'id',
      'state',
      'availableEvents',
      'output',
      'isProcessing',
      'availableScenarios',
    ]);
    expect(await kept(id)).toEqual([[null, null]]);
  });

  it('should force a delegated child to @fail and keep the continuation, restored when omitted', async () => {
    const id = await create('/orders');
    const failed = await call('POST', `/orders/${id}/pay`, { scenario: 'review-fails' });
    expect(failed.status).toBe(200);
    expect(data(failed)).toMatchObject({
      state: ['order.rejected'],
      output: { charged: 1 },
      availableScenarios: {
        RETRY: [
          { slug: 'retry-blocked', description: 'One retry is refused', hasContinuation: false },
        ],
      },
      activeScenario: {
        slug: 'review-fails',
        description: 'The review fails, and retries stay blocked',
        hasContinuation: true,
      },
    });
    const history = await store.history(id);
    expect(
      history.find((record) => record.type === 'order.child.review.fail')?.payload,
    ).toMatchObject({
      error: { name: 'ScenarioOutcome' },
    });
    expect(history.some((record) => record.type === 'order.child.review.done')).toBe(false);
    expect(await kept(id)).toEqual([['review-fails', {}]]);

    // Omitted: the continuation's guard override blocks the retry.
    const blocked = await call('POST', `/orders/${id}/retry`, {});
    expect(data(blocked)).toMatchObject({
      state: ['order.rejected'],
      activeScenario: { slug: 'review-fails' },
    });
    expect(await kept(id)).toEqual([['review-fails', {}]]);

    // null: deactivated, the real guard lets the retry through.
    const retried = await call('POST', `/orders/${id}/retry`, { scenario: null });
    expect(retried.status).toBe(200);
    expect(data(retried).state).toEqual(['order.paying']);
    expect(data(retried)).not.toHaveProperty('activeScenario');
    expect(await kept(id)).toEqual([[null, null]]);
  });

  it('should clear a kept continuation after a scenario without continuation', async () => {
    const id = await create('/orders');
    await call('POST', `/orders/${id}/pay`, { scenario: 'review-fails' });
    expect(await kept(id)).toEqual([['review-fails', {}]]);
    const once = await call('POST', `/orders/${id}/retry`, { scenario: 'retry-blocked' });
    expect(once.status).toBe(200);
    expect(data(once).state).toEqual(['order.rejected']);
    expect(data(once)).not.toHaveProperty('activeScenario');
    expect(await kept(id)).toEqual([[null, null]]);
    // Nothing kept any more: the real behaviour runs.
    const retried = await call('POST', `/orders/${id}/retry`, {});
    expect(data(retried).state).toEqual(['order.paying']);
  });

  it('should answer an unknown slug 404 and a source or event mismatch 422, writing nothing', async () => {
    const id = await create('/orders');
    await call('POST', `/orders/${id}/pay`, { scenario: 'review-fails' });
    const before = await written(id);

    const unknown = await call('POST', `/orders/${id}/retry`, { scenario: 'nope' });
    expect(unknown).toMatchObject({ status: 404, body: { message: "Scenario 'nope' not found." } });

    const wrongEvent = await call('POST', `/orders/${id}/retry`, { scenario: 'declined' });
    expect(wrongEvent).toMatchObject({
      status: 422,
      body: { message: "Expected event 'PAY', received 'RETRY'" },
    });

    const wrongSource = await call('POST', `/orders/${id}/pay`, { scenario: 'declined' });
    expect(wrongSource).toMatchObject({
      status: 422,
      body: { message: "Expected source 'order.paying', machine is at 'order.rejected'" },
    });

    const badParams = await call('POST', `/orders/${id}/retry`, {
      scenario: 'retry-blocked',
      scenarioParams: 'x',
    });
    expect(badParams.status).toBe(422);
    expect(await written(id)).toEqual(before);
  });

  // Spec "Request handling order": machine loading (2) before event resolution (3), of which
  // the scenario fields are part: an unknown instance is 404 whatever the body says.
  it('should answer an unknown instance 404 before reading the body or its scenario fields', async () => {
    const unknownId = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const path = `/orders/${unknownId}/pay`;
    const json = { 'content-type': 'application/json' };
    for (const request of [
      { raw: '{"scenario":', headers: json },
      { raw: 'scenario=declined', headers: { 'content-type': 'text/plain' } },
      { body: { scenario: 5 } },
      { body: { scenario: 'nope' } },
    ]) {
      const response = await send(server.url, 'POST', path, request);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 404,
        body: { message: 'Machine not found.' },
      });
    }
    // A known instance reads them: the body's own answers.
    const id = await create('/orders');
    const malformed = await send(server.url, 'POST', `/orders/${id}/pay`, {
      raw: '{"scenario":',
      headers: json,
    });
    expect(malformed.status).toBe(400);
    expect((await call('POST', `/orders/${id}/pay`, { scenario: 'nope' })).status).toBe(404);
  });

  it('should start a child with its scenario and honour its continuation on forwarded endpoints', async () => {
    const id = await create('/shops');
    const started = await call('POST', `/shops/${id}/start`, { scenario: 'unfunded' });
    expect(started.status).toBe(200);
    await queue.runDue();
    const [child] = await runtime.children(id);
    expect(await kept(child!.childRootEventId!)).toEqual([['unfunded-card', {}]]);

    // The child's scenario plays on its source event; forwarded answers carry no scenario fields.
    const card = await call('POST', `/shops/${id}/provide-card`, {
      payload: { card: '4111111111111111' },
    });
    expect(card.status).toBe(200);
    expect(data(card)).not.toHaveProperty('availableScenarios');
    expect(data(card)).not.toHaveProperty('activeScenario');
    expect(data(card).child).toMatchObject({
      state: ['card.charging'],
      output: { cardLast4: '0000' },
    });

    // Its continuation makes the real `funded` guard fail: declined, the parent fails.
    const confirmed = await call('POST', `/shops/${id}/confirm`, {});
    expect(confirmed.status).toBe(200);
    expect(data(confirmed).child).toMatchObject({ state: ['card.declined'] });
    await queue.runDue();
    expect((await store.load(id))?.value).toEqual(['shop.failed']);
  });

  it('should read the scenario from the query of a stateless GET route, keeping it out of the payload', async () => {
    const real = await call('GET', '/quotes/quote?quantity=2');
    expect(data(real)).toMatchObject({
      output: { price: 50 },
      availableScenarios: { QUOTE: [{ slug: 'free' }] },
    });
    const free = await call(
      'GET',
      '/quotes/quote?quantity=2&scenario=free&scenarioParams[discount]=90',
    );
    expect(free.status).toBe(200);
    expect(data(free).output).toEqual({ price: 10 });
    expect(data(free)).not.toHaveProperty('activeScenario');
    const unknown = await call('GET', '/quotes/quote?quantity=2&scenario=nope');
    expect(unknown).toMatchObject({ status: 404, body: { message: "Scenario 'nope' not found." } });
  });

  it('should ignore the scenario fields when scenarios are off (the default)', async () => {
    expect(plainRuntime.scenariosEnabled).toBe(false);
    const id = await create('/orders', plain);
    const response = await call(
      'POST',
      `/orders/${id}/pay`,
      { scenario: 'nope', scenarioParams: 1 },
      plain,
    );
    expect(response.status).toBe(200);
    expect(data(response).state).toEqual(['order.shipped']);
    expect(data(response)).not.toHaveProperty('availableScenarios');
    expect(await kept(id)).toEqual([[null, null]]);
  });
});
