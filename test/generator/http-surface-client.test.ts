/**
 * Conditional requests through the generated client (docs/client.md "Versions: ETag, If-Match,
 * If-None-Match"): the generated example app on a SQLite file and on PostgreSQL, driven by the
 * generated client. A read's `etag` comes back as `ifNoneMatch` (304) and as `ifMatch` of an
 * event (200 with the next `etag`, or 412 with the current one in a typed body, nothing
 * written).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import {
  ClientResponseError,
  createClient,
  type Client,
  type PreconditionFailedResponse,
} from '../../generated-example/client.gen.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { postgresBackend } from '../support/stores.js';

interface Target {
  name: string;
  setUp(): Promise<string>;
  tearDown(): Promise<void>;
}

let directory = '';
const targets: Target[] = [
  {
    name: 'sqlite file',
    setUp: async () => {
      directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-surface-client-'));
      return `sqlite:${path.join(directory, 'machines.db')}`;
    },
    tearDown: async () => rmSync(directory, { recursive: true, force: true }),
  },
];
const postgres = await postgresBackend('http_surface_client');
if (postgres) {
  targets.push({
    name: 'postgres',
    setUp: async () => {
      await postgres.setUp();
      return postgres.url();
    },
    tearDown: () => postgres.tearDown(),
  });
}

describe.each(targets)('the generated client and instance versions on $name', (target) => {
  let app: App;
  let client: Client;

  beforeAll(async () => {
    app = await buildApp({ databaseUrl: await target.setUp() });
    client = createClient({ baseUrl: await app.listen(0) });
  });
  afterAll(async () => {
    await app?.close();
    await target.tearDown();
  });

  async function newOrder(): Promise<string> {
    const created = await client.order.create({ throwOnError: true });
    return created.body.data.id;
  }

  it('should read an etag and get 304 while the instance stays at that version', async () => {
    const machineId = await newOrder();
    const first = await client.order.read.status({ machineId });
    expect(first.status).toBe(200);
    const sequence = (await app.runtime.read(orderMachine, machineId)).snapshot.sequence;
    expect(first.etag).toBe(`"${machineId}:${sequence}"`);

    const again = await client.order.read.status({ machineId }, { ifNoneMatch: first.etag });
    expect(again).toEqual({ ok: false, status: 304, body: null, etag: first.etag });
  });

  it('should send with ifMatch, and answer a stale one 412 with a typed body', async () => {
    const machineId = await newOrder();
    const read = await client.order.read.status({ machineId });
    const submitted = await client.order.submit(
      { machineId, payload: { amount: 300 } },
      { ifMatch: read.etag },
    );
    expect(submitted.status).toBe(200);
    expect(submitted.etag).toBeDefined();
    expect(submitted.etag).not.toBe(read.etag);

    const stale = await client.order.cancel({ machineId }, { ifMatch: read.etag });
    if (stale.status !== 412) throw new Error(`expected 412, got ${stale.status}`);
    // Narrowed by status: the body is the document's PreconditionFailedResponse.
    const body: PreconditionFailedResponse = stale.body;
    expect(body).toEqual({ message: expect.any(String), etag: submitted.etag });
    expect((await app.runtime.read(orderMachine, machineId)).snapshot.value).toEqual([
      'order.submitted',
    ]);

    const thrown = await client.order
      .cancel({ machineId }, { ifMatch: read.etag, throwOnError: true })
      .catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(ClientResponseError);
    expect((thrown as ClientResponseError).status).toBe(412);

    const cancelled = await client.order.cancel({ machineId }, { ifMatch: submitted.etag });
    expect(cancelled.status).toBe(200);
  });
});
