/**
 * The example's GET event (`GET /orders/{machineId}/quote?quantity=2`, spec "GET endpoints"):
 * query values are strings and the layer converts them where the schema asks for a number, so
 * the example's schema is a plain `z.number()`. A missing or non-numeric quantity is a 422 that
 * says so (with `z.coerce` it read "expected number, received NaN" for both).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderMachine } from '../../../fixtures/example/machines/order.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';

describe.each<AdapterName>(['fastify', 'express'])('the example quote over %s', (adapter) => {
  let dir: string;
  let store: SqliteStore;
  let server: TestServer;
  let id: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'machine-routes-quote-'));
    store = new SqliteStore({ filename: join(dir, 'machines.db') });
    const router = new MachineRouter({ runtime: new MachineRuntime({ store }) });
    router.register(orderMachine, { prefix: 'orders', create: true, machineIdFor: ['QUOTE'] });
    server = await startServer(adapter, [router], { error: () => {} });
    const created = await send(server.url, 'POST', '/orders/create');
    id = (created.body as { data: { id: string } }).data.id;
  });
  afterAll(async () => {
    await server?.close();
    store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['?quantity=2', 50],
    ['?payload[quantity]=3', 75],
  ])('should convert %s to a number', async (query, lastQuote) => {
    const response = await send(server.url, 'GET', `/orders/${id}/quote${query}`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ data: { output: { lastQuote } } });
  });

  it.each([
    ['', 'Invalid input: expected number, received undefined'],
    ['?quantity=many', 'Invalid input: expected number, received string'],
    ['?quantity=1.5', 'Invalid input: expected int, received number'],
    ['?quantity=0', 'Too small: expected number to be >=1'],
  ])('should answer the query %j with a 422 naming what is wrong', async (query, message) => {
    const response = await send(server.url, 'GET', `/orders/${id}/quote${query}`);
    expect({ status: response.status, body: response.body }).toEqual({
      status: 422,
      body: { message, errors: { 'payload.quantity': [message] } },
    });
  });
});
