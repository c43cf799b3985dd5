/**
 * Inbound webhooks (`webhooks`, docs/callbacks.md) over real HTTP on Fastify and Express, on a
 * SQLite file and on PostgreSQL: a Stripe-style delivery (`t=,v1=`, create-or-send by a key in
 * the body) and a GitHub-style one (`sha256=<hex>`, by machine id). A good signature over the
 * raw bytes sends the mapped event; a missing or wrong signature and a stale timestamp are 401
 * with their `reason` and write nothing; a redelivery of one delivery id answers as the first
 * did and applies nothing again, also when both arrive at once.
 */
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalMachine } from '../../../fixtures/http/callback-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { useServerProcesses } from './support/server-processes.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';
import { countRows } from './support/store-writes.js';

const SERVER = fileURLToPath(new URL('./fixtures/approval-server.ts', import.meta.url));
process.env['TEST_STRIPE_SECRET'] = 'whsec_new,whsec_old';
process.env['TEST_GITHUB_SECRET'] = 'gh-secret';

export const WEBHOOKS: RegistrationOptions = {
  prefix: 'hooks',
  name: 'hooks',
  create: true,
  // A delivery to a busy instance waits for it (the redelivery test holds its lock).
  contention: { wait: 5000 },
  createOrSend: { key: 'orderNumber', events: ['PAID'] },
  webhooks: {
    stripe: {
      secretEnv: 'TEST_STRIPE_SECRET',
      signature: { header: 'Stripe-Signature', scheme: 'stripe' },
      deliveryIdHeader: 'x-delivery-id',
      instance: { key: 'data.object.metadata.orderNumber' },
      event: { field: 'type', map: { 'payment_intent.succeeded': 'PAID' } },
      payload: 'data.object',
    },
    slack: {
      secretEnv: 'TEST_GITHUB_SECRET',
      signature: {
        header: 'x-signature',
        encoding: 'base64',
        prefix: 'v0=',
        timestampHeader: 'x-timestamp',
      },
      tolerance: 60,
      instance: { machineId: 'instance' },
      event: 'PAID',
      payload: 'payment',
    },
    github: {
      secretEnv: 'TEST_GITHUB_SECRET',
      signature: { header: 'x-hub-signature-256', prefix: 'sha256=' },
      deliveryIdHeader: 'x-github-delivery',
      instance: { machineId: 'instance' },
      event: 'PAID',
      payload: 'payment',
    },
  },
};

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('webhooks-http');
if (postgres) backends.push(postgres);

/** The statuses of the delivery-id records under `scope` (with `key`: of that delivery id). */
export async function claimStatuses(store: Store, scope: string, key = '%'): Promise<string[]> {
  const rows =
    store instanceof SqliteStore
      ? (store.database
          .prepare(
            'SELECT status FROM machine_idempotency_keys WHERE scope = ? AND idempotency_key LIKE ?',
          )
          .all(scope, key) as { status: string }[])
      : (
          await (store as PostgresStore).pool.query<{ status: string }>(
            'SELECT status FROM machine_idempotency_keys WHERE scope = $1 AND idempotency_key LIKE $2',
            [scope, key],
          )
        ).rows;
  return rows.map((row) => row.status);
}

const hmac = (secret: string, text: string, encoding: 'hex' | 'base64' = 'hex') =>
  createHmac('sha256', secret).update(text).digest(encoding);
const stripeHeader = (raw: string, secret = 'whsec_new', t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${hmac(secret, `${t}.${raw}`)}`;
/** A delivery as Stripe formats it: spacing and an escaped character a re-serialisation would change. */
const stripeBody = (orderNumber: string, amount: number, type = 'payment_intent.succeeded') =>
  `{\n  "type": "${type}",\n  "data": { "object": { "amount": ${amount}, "note": "caf\\u00e9",\n    "metadata": { "orderNumber": "${orderNumber}" } } }\n}`;

describe('webhooks registration option', () => {
  it('should plan one POST route per webhook and refuse a bad entry at build time', () => {
    const routes = planRoutes(approvalMachine, WEBHOOKS).filter((r) => r.handler === 'webhook');
    expect(routes.map((route) => [route.name, route.method, route.path])).toEqual([
      ['hooks.webhook.stripe', 'POST', '/hooks/webhooks/stripe'],
      ['hooks.webhook.slack', 'POST', '/hooks/webhooks/slack'],
      ['hooks.webhook.github', 'POST', '/hooks/webhooks/github'],
    ]);
    expect(routes[0]!.webhook).toMatchObject({
      scheme: 'stripe',
      header: 'stripe-signature',
      instance: { key: 'data.object.metadata.orderNumber', field: 'orderNumber' },
      events: [{ match: 'payment_intent.succeeded', eventType: 'PAID' }],
    });
    expect(() =>
      planRoutes(approvalMachine, {
        prefix: 'x',
        webhooks: {
          bad: {
            secretEnv: 'S',
            signature: { header: 'x-sig', encoding: 'hex' },
            instance: { key: 'id' },
            event: 'NOPE',
          },
        },
      }),
    ).toThrow(/'webhooks.bad' 'instance: \{ key \}' needs the registration's 'createOrSend'/);
  });
});

const cases = backends.flatMap((backend) =>
  (['fastify', 'express'] as AdapterName[]).map((adapter) => ({ backend, adapter })),
);

describe.each(cases)('webhooks over HTTP ($adapter, $backend.name)', ({ backend, adapter }) => {
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    const router = new MachineRouter({ runtime, logger: { error: () => {} } });
    router.register(approvalMachine, WEBHOOKS);
    server = await startServer(adapter, [router], { error: () => {} });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  const stripe = (raw: string, headers: Record<string, string>) =>
    send(server.url, 'POST', '/hooks/webhooks/stripe', {
      raw,
      headers: { 'content-type': 'application/json', ...headers },
    });
  const paidOf = async (orderNumber: string) => {
    const rows = await runtime.store.queries.listInstances({
      machineId: 'approval',
      businessKey: orderNumber,
      limit: 10,
    });
    if (rows.length === 0) return null;
    expect(rows).toHaveLength(1);
    return ((await runtime.store.load(rows[0]!.id))!.context as { paid: number[] }).paid;
  };

  it('should send a signed delivery over its raw bytes and answer a redelivery as the first', async () => {
    const raw = stripeBody('S-1', 10);
    const first = await stripe(raw, {
      'stripe-signature': stripeHeader(raw),
      'x-delivery-id': 'evt_1',
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ data: { output: { paid: [10] } } });
    expect(await paidOf('S-1')).toEqual([10]);
    const before = await countRows(runtime.store);
    const again = await stripe(raw, {
      'stripe-signature': stripeHeader(raw),
      'x-delivery-id': 'evt_1',
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(await countRows(runtime.store)).toEqual(before);
    expect(await paidOf('S-1')).toEqual([10]);
    // Another delivery is another payment; a secret still listed for rotation verifies.
    const other = await stripe(raw, {
      'stripe-signature': stripeHeader(raw, 'whsec_old'),
      'x-delivery-id': 'evt_2',
    });
    expect(other.status).toBe(200);
    expect(await paidOf('S-1')).toEqual([10, 10]);
  });

  it('should refuse a missing or wrong signature and a stale timestamp with 401, writing nothing', async () => {
    const raw = stripeBody('S-2', 5);
    const before = await countRows(runtime.store);
    const missing = await stripe(raw, { 'x-delivery-id': 'evt_m' });
    expect(missing).toMatchObject({
      status: 401,
      body: { code: 'MR_WEBHOOK_SIGNATURE', reason: 'missing' },
    });
    const wrong = await stripe(raw, {
      'stripe-signature': stripeHeader(raw, 'whsec_other'),
      'x-delivery-id': 'evt_w',
    });
    expect(wrong).toMatchObject({
      status: 401,
      body: { code: 'MR_WEBHOOK_SIGNATURE', reason: 'mismatch' },
    });
    // Signed over the parsed and re-serialised body rather than the bytes sent: refused.
    const reserialised = JSON.stringify(JSON.parse(raw));
    const changed = await stripe(raw, { 'stripe-signature': stripeHeader(reserialised) });
    expect(changed).toMatchObject({ status: 401, body: { reason: 'mismatch' } });
    const stale = await stripe(raw, {
      'stripe-signature': stripeHeader(raw, 'whsec_new', Math.floor(Date.now() / 1000) - 3600),
      'x-delivery-id': 'evt_s',
    });
    expect(stale).toMatchObject({
      status: 401,
      body: { code: 'MR_WEBHOOK_SIGNATURE', reason: 'timestamp' },
    });
    expect(await countRows(runtime.store)).toEqual(before);
    expect(await paidOf('S-2')).toBeNull();
    // The same delivery ids, signed, are not spent by the refusals.
    const good = await stripe(raw, {
      'stripe-signature': stripeHeader(raw),
      'x-delivery-id': 'evt_s',
    });
    expect(good.status).toBe(200);
  });

  it('should answer 422 for an unmapped provider type or a payload the event refuses', async () => {
    const raw = stripeBody('S-3', 1, 'customer.created');
    const unmapped = await stripe(raw, { 'stripe-signature': stripeHeader(raw) });
    expect(unmapped).toMatchObject({ status: 422, body: { errors: { type: expect.any(Array) } } });
    const noAmount =
      '{"type":"payment_intent.succeeded","data":{"object":{"metadata":{"orderNumber":"S-3"}}}}';
    const refused = await stripe(noAmount, { 'stripe-signature': stripeHeader(noAmount) });
    expect(refused).toMatchObject({
      status: 422,
      body: { errors: { 'payload.amount': expect.any(Array) } },
    });
    expect(await paidOf('S-3')).toBeNull();
  });

  it('should apply one of two concurrent deliveries of one id, the other its replay', async () => {
    for (let round = 0; round < 3; round += 1) {
      const raw = stripeBody(`C-${round}`, 7);
      const headers = { 'stripe-signature': stripeHeader(raw), 'x-delivery-id': `evt_c${round}` };
      const answers = await Promise.all([stripe(raw, headers), stripe(raw, headers)]);
      // A redelivery during the first waits for its answer: never 409.
      expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
      expect(answers[1]!.body).toEqual(answers[0]!.body);
      const replayed = answers.map((answer) => answer.headers.get('idempotency-replayed'));
      expect(replayed.sort()).toEqual([null, 'true']);
      expect(await paidOf(`C-${round}`)).toEqual([7]);
    }
  });

  it('should answer a redelivery that comes while the first waits for the lock with its replay', async () => {
    const created = await send(server.url, 'POST', '/hooks/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const raw = JSON.stringify({ instance: id, payment: { orderNumber: 'W-1', amount: 6 } });
    const deliver = () =>
      send(server.url, 'POST', '/hooks/webhooks/github', {
        raw,
        headers: {
          'content-type': 'application/json',
          'x-hub-signature-256': `sha256=${hmac('gh-secret', raw)}`,
          'x-github-delivery': 'busy-1',
        },
      });
    const scope = `hooks.webhook.github ${id}`;
    const answers = await runtime.withLock(id, async () => {
      const first = deliver();
      // The first delivery has claimed its id and waits for the lock this test holds.
      while ((await claimStatuses(runtime.store, scope))[0] !== 'pending')
        await new Promise((resolve) => setTimeout(resolve, 10));
      const second = deliver();
      await new Promise((resolve) => setTimeout(resolve, 300));
      return [first, second];
    });
    const [first, second] = await Promise.all(answers);
    expect(first).toMatchObject({ status: 200, body: { data: { id, output: { paid: [6] } } } });
    expect(first!.headers.get('idempotency-replayed')).toBeNull();
    expect(second!.status).toBe(200);
    expect(second!.body).toEqual(first!.body);
    expect(second!.headers.get('idempotency-replayed')).toBe('true');
    expect(((await runtime.store.load(id))!.context as { paid: number[] }).paid).toEqual([6]);
    expect(await claimStatuses(runtime.store, scope)).toEqual(['done']);
  });

  it('should send a GitHub-style delivery to the instance its body names by machine id', async () => {
    const created = await send(server.url, 'POST', '/hooks/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const deliver = (instance: string, delivery: string) => {
      const raw = JSON.stringify({ instance, payment: { orderNumber: 'G-1', amount: 3 } });
      return send(server.url, 'POST', '/hooks/webhooks/github', {
        raw,
        headers: {
          'content-type': 'application/json',
          'x-hub-signature-256': `sha256=${hmac('gh-secret', raw)}`,
          'x-github-delivery': delivery,
        },
      });
    };
    const sent = await deliver(id, 'g1');
    expect(sent).toMatchObject({ status: 200, body: { data: { id, output: { paid: [3] } } } });
    expect((await deliver(id, 'g1')).body).toEqual(sent.body);
    expect(((await runtime.store.load(id))!.context as { paid: number[] }).paid).toEqual([3]);
    const unknown = await deliver('01J00000000000000000000000', 'g2');
    expect(unknown.status).toBe(404);
    const raw = JSON.stringify({ instance: id, payment: { orderNumber: 'G-1', amount: 3 } });
    const prefixless = await send(server.url, 'POST', '/hooks/webhooks/github', {
      raw,
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': hmac('gh-secret', raw),
      },
    });
    expect(prefixless).toMatchObject({ status: 401, body: { reason: 'mismatch' } });
  });

  it('should check a base64, prefixed signature over the timestamp header and the body', async () => {
    const created = await send(server.url, 'POST', '/hooks/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const raw = JSON.stringify({ instance: id, payment: { orderNumber: 'L-1', amount: 4 } });
    const now = Math.floor(Date.now() / 1000);
    const deliver = (headers: Record<string, string>) =>
      send(server.url, 'POST', '/hooks/webhooks/slack', {
        raw,
        headers: { 'content-type': 'application/json', ...headers },
      });
    const signed = (t: number) => ({
      'x-timestamp': String(t),
      'x-signature': `v0=${hmac('gh-secret', `${t}.${raw}`, 'base64')}`,
    });
    const before = await countRows(runtime.store);
    expect((await deliver({ 'x-signature': signed(now)['x-signature'] })).body).toMatchObject({
      reason: 'missing',
    });
    expect((await deliver(signed(now - 120))).body).toMatchObject({ reason: 'timestamp' });
    expect((await deliver({ ...signed(now), 'x-timestamp': String(now + 1) })).body).toMatchObject({
      reason: 'mismatch',
    });
    expect(await countRows(runtime.store)).toEqual(before);
    const sent = await deliver(signed(now));
    expect(sent).toMatchObject({ status: 200, body: { data: { id, output: { paid: [4] } } } });
  });
});

describe.runIf(postgres !== null)('webhooks across two server processes on PostgreSQL', () => {
  const processes = useServerProcesses(postgres!, SERVER, [JSON.stringify(WEBHOOKS)], {
    env: { TEST_STRIPE_SECRET: 'whsec_new', TEST_GITHUB_SECRET: 'gh-secret' },
  });
  const { urls } = processes;

  it('should apply a delivery sent to both processes at once exactly once, every other answer its replay', async () => {
    const [one, two] = urls as [string, string];
    const { store } = processes.runtime;
    for (let round = 0; round < 3; round += 1) {
      const orderNumber = `P-${round}`;
      const raw = stripeBody(orderNumber, 9);
      const headers = {
        'content-type': 'application/json',
        'stripe-signature': stripeHeader(raw),
        'x-delivery-id': `evt_p${round}`,
      };
      const before = await countRows(store);
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          send(index % 2 === 0 ? one : two, 'POST', '/hooks/webhooks/stripe', { raw, headers }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
      const replayed = answers.filter((a) => a.headers.get('idempotency-replayed') === 'true');
      expect(replayed).toHaveLength(9);
      for (const answer of answers) expect(answer.body).toEqual(answers[0]!.body);
      // One instance created for the key, one PAID applied: the creation and one event.
      const rows = await store.queries.listInstances({
        machineId: 'approval',
        businessKey: orderNumber,
        limit: 10,
      });
      expect(rows).toHaveLength(1);
      expect(((await store.load(rows[0]!.id))!.context as { paid: number[] }).paid).toEqual([9]);
      const history = await store.history(rows[0]!.id);
      expect(history.filter((record) => record.type === 'PAID')).toHaveLength(1);
      const after = await countRows(store);
      expect(after['machine_instances']).toBe(before['machine_instances']! + 1);
      expect(after['machine_locks']).toBe(before['machine_locks']);
      // One record of the delivery id, done (the others' claims found it).
      expect(await claimStatuses(store, 'hooks.webhook.stripe ', `evt_p${round}`)).toEqual([
        'done',
      ]);
    }
  }, 120_000);
});
