/**
 * Create-or-send through the generated client and in the generated OpenAPI document
 * (fixtures/generator/create-or-send, emitted into __snapshots__/create-or-send): the client's
 * `payment({ payload: { orderNumber, n } })` is called against a real server on a SQLite file
 * and on PostgreSQL; the first call on a number creates the order, later ones send to it, and
 * 50 concurrent first calls leave one order with 50 payments. The document marks the
 * operations with `x-machine-routes-create-or-send` and says what they do.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyedOrderMachine } from '../../fixtures/http/keyed-order-machine.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../support/stores.js';
import { startServer, type TestServer } from '../runtime/http/support/servers.js';
import config from '../../fixtures/generator/create-or-send/machine-routes.config.js';
import { createClient, type Client } from './__snapshots__/create-or-send/client.gen.js';

const BURST = 50;
const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('create-or-send-client');
if (postgres) backends.push(postgres);

describe('the OpenAPI document of create-or-send routes', () => {
  const document = JSON.parse(
    readFileSync(new URL('./__snapshots__/create-or-send/openapi.json', import.meta.url), 'utf8'),
  ) as { paths: Record<string, Record<string, Record<string, unknown>>> };

  it('should mark each create-or-send operation with its key and say that it creates', () => {
    for (const event of ['payment', 'cancel', 'refund']) {
      const operation = document.paths[`/orders/${event}`]!['post']!;
      expect(operation['x-machine-routes-create-or-send']).toEqual({ key: 'orderNumber' });
      expect(operation['description']).toMatch(
        /^Create-or-send on the business key `payload\.orderNumber`: .*when no keyed order has that key yet, one is created with the event applied/,
      );
      // A missing instance is created, never a 404.
      expect(Object.keys(operation['responses'] as object)).not.toContain('404');
    }
  });
});

describe.each(backends)('create-or-send through the generated client on $name', (backend) => {
  let runtime: MachineRuntime;
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    const router = new MachineRouter({ runtime, logger: { error: () => {} } });
    const { machine, ...options } = config.registrations[0]!;
    router.register(keyedOrderMachine, options);
    expect(machine).toBe(keyedOrderMachine);
    server = await startServer('fastify', [router], { error: () => {} });
    client = createClient({ baseUrl: server.url });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  it('should create the order on the first call on a number and send to it afterwards', async () => {
    const first = await client.keyedOrder.payment({ payload: { orderNumber: 'C-1', n: 1 } });
    if (first.status !== 200) throw new Error(`expected 200, got ${first.status}`);
    const id = first.body.data.id;
    const second = await client.keyedOrder.payment(
      { payload: { orderNumber: 'C-1', n: 2 } },
      { throwOnError: true },
    );
    expect(second.body.data).toMatchObject({ id, output: { payments: 2, seen: [1, 2] } });
    const read = await client.keyedOrder.read.status({ machineId: id });
    if (read.status !== 200) throw new Error(`expected 200, got ${read.status}`);
    expect(read.body.data.output).toEqual({ payments: 2, seen: [1, 2] });
  });

  it('should answer a refused first event 409 (typed), creating nothing', async () => {
    const refund = await client.keyedOrder.refund({ payload: { orderNumber: 'C-2' } });
    expect(refund.status).toBe(409);
    expect(await runtime.store.queries.instanceByBusinessKey('keyed_order', 'C-2')).toBeNull();
  });

  it(`should leave one order for ${BURST} concurrent first calls on one number, all applied`, async () => {
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, n) =>
        client.keyedOrder.payment({ payload: { orderNumber: 'C-BURST', n } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(BURST).fill(200));
    const id = await runtime.store.queries.instanceByBusinessKey('keyed_order', 'C-BURST');
    expect(id).not.toBeNull();
    const ids = new Set(
      answers.map((answer) => (answer.status === 200 ? answer.body.data.id : '')),
    );
    expect(ids).toEqual(new Set([id]));
    const context = (await runtime.store.load(id!))!.context as { payments: number };
    expect(context.payments).toBe(BURST);
  });
});
