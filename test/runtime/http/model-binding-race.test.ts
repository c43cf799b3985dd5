/**
 * Model-bound routes under concurrency (real HTTP server, SQLite file and PostgreSQL): ten
 * concurrent first requests on a fresh record leave exactly one machine, bound to the record;
 * a first request refused with 422 (validation guard) or 409 (no transition) creates and binds
 * nothing.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineMachine, defineValidationGuard } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { mountFastify } from '../../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { tableModelBinder } from '../../../src/runtime/http/model-binder.js';
import { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { allBackends } from '../../support/stores.js';

const backends = (await allBackends('model-binding-race')).filter(
  (b) => b.name === 'sqlite file' || b.name === 'postgres',
);

const machineOf = (id: string, persist: boolean) =>
  defineMachine({
    config: {
      id,
      ...(persist ? {} : { should_persist: false }),
      initial: 'draft',
      context: { total: 0 },
      states: {
        draft: { on: { ADD: { guards: 'amountIsPositive', actions: 'add' }, SUBMIT: 'submitted' } },
        submitted: { on: { SHIP: 'shipped' } },
        shipped: { type: 'final' },
      },
    },
    behavior: {
      guards: {
        amountIsPositive: defineValidationGuard({
          check: ({ event }) => Number(event.payload?.amount) > 0,
          message: 'Amount must be positive',
          field: 'payload.amount',
        }),
      },
      actions: {
        add: ({ context, event }) => {
          context.total = Number(context.total) + Number(event.payload?.amount);
        },
      },
    },
    endpoints: ['ADD', 'SUBMIT', 'SHIP'],
  });
const orderMachine = machineOf('bound_order', true);
/** Never written back on send (`should_persist: false`): created on first use, as `create` does. */
const sketchMachine = machineOf('bound_sketch', false);

async function rows(store: Store, sql: string): Promise<Record<string, unknown>[]> {
  if (store instanceof SqliteStore) return store.database.prepare(sql).all() as never;
  return (await (store as PostgresStore).pool.query(sql)).rows;
}

describe.each(backends)('model-bound first requests ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;
  let app: FastifyInstance;
  let base: string;
  let barrier = 0;
  let waiting: (() => void)[] = [];

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
    const create = 'CREATE TABLE shop_orders (id TEXT PRIMARY KEY, machine_id TEXT)';
    const insert = `INSERT INTO shop_orders (id, machine_id) VALUES ('race', NULL), ('refused', NULL), ('early', NULL), ('sketch', NULL)`;
    if (store instanceof SqliteStore) store.database.exec(`${create}; ${insert}`);
    else await (store as PostgresStore).pool.query(`${create}; ${insert}`);
    runtime = new MachineRuntime({ store });
    // The table binder, with a barrier in `find`: the racing requests all read the record
    // before any of them binds it, so the race happens on every run, not by chance.
    const table = tableModelBinder({ store, table: 'shop_orders', key: 'id' });
    const binder: typeof table = {
      ...table,
      async find(param) {
        const record = await table.find(param);
        if (barrier > 0) {
          await new Promise<void>((resolve) => {
            waiting.push(resolve);
            if (waiting.length < barrier) return;
            for (const release of waiting.splice(0)) release();
            barrier = 0;
          });
        }
        return record;
      },
    };
    const router = new MachineRouter({
      runtime,
      models: { Order: binder },
      logger: { error: () => {} },
    });
    router.register(orderMachine, {
      prefix: 'shop',
      model: 'Order',
      attribute: 'machine_id',
      modelFor: ['ADD', 'SUBMIT', 'SHIP'],
    });
    router.register(sketchMachine, {
      prefix: 'sketch',
      model: 'Order',
      attribute: 'machine_id',
      modelFor: ['ADD'],
    });
    app = Fastify({ logger: false });
    await mountFastify(app, router);
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await app?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('should give a fresh record exactly one machine under ten concurrent first requests', async () => {
    barrier = 10;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => post('/shop/race/add', { payload: { amount: 1 } })),
    );
    const statuses = responses.map((response) => response.status);
    const bodies = (await Promise.all(responses.map((response) => response.json()))) as {
      data: { id: string };
    }[];
    // Applied (200) or refused as contention on the one machine (423); nothing else.
    expect(statuses.every((status) => status === 200 || status === 423)).toBe(true);
    expect(statuses).toContain(200);

    const machines = await rows(
      store,
      `SELECT root_event_id FROM machine_instances WHERE machine_id = 'bound_order'`,
    );
    expect(machines).toHaveLength(1);
    const [record] = await rows(store, `SELECT machine_id FROM shop_orders WHERE id = 'race'`);
    expect(record!.machine_id).toBe(machines[0]!.root_event_id);
    expect(new Set(bodies.map((body) => body.data.id))).toEqual(new Set([record!.machine_id]));
    const snapshot = await runtime.restore(orderMachine, String(record!.machine_id));
    expect(snapshot.context.total).toBe(statuses.filter((status) => status === 200).length);
    // Listed under the record's key for operators (docs/operations.md).
    const byKey = await store.queries.listInstances({
      machineId: 'bound_order',
      businessKey: 'race',
      limit: 10,
    });
    expect(byKey.map((row) => row.id)).toEqual([record!.machine_id]);
  });

  it('should create and bind nothing for a first request refused with 422 or 409', async () => {
    const before = await rows(store, 'SELECT root_event_id FROM machine_instances');
    const invalid = await post('/shop/refused/add', { payload: { amount: -1 } });
    expect(invalid.status).toBe(422);
    const unaccepted = await post('/shop/early/ship', {});
    expect(unaccepted.status).toBe(409);
    expect(await rows(store, 'SELECT root_event_id FROM machine_instances')).toEqual(before);
    expect(
      await rows(store, `SELECT machine_id FROM shop_orders WHERE id IN ('refused', 'early')`),
    ).toEqual([{ machine_id: null }, { machine_id: null }]);

    // A valid first request still binds the record once.
    const accepted = await post('/shop/refused/add', { payload: { amount: 2 } });
    expect(accepted.status).toBe(200);
    const [record] = await rows(store, `SELECT machine_id FROM shop_orders WHERE id = 'refused'`);
    expect(record!.machine_id).toBe(((await accepted.json()) as { data: { id: string } }).data.id);
  });

  it('should persist a non-persisting machine as created and answer the event without writing it', async () => {
    const response = await post('/sketch/sketch/add', { payload: { amount: 3 } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: { id: string; output: unknown } };
    expect(body.data.output).toEqual({ total: 3 });
    const [record] = await rows(store, `SELECT machine_id FROM shop_orders WHERE id = 'sketch'`);
    expect(record!.machine_id).toBe(body.data.id);
    expect((await runtime.restore(sketchMachine, body.data.id)).context).toEqual({ total: 0 });
  });
});
