/**
 * Readiness on PostgreSQL, through the app library with a real listening server: the app reaches
 * the database through a TCP proxy the test runs on 127.0.0.1, so the store can be made
 * unreachable (the proxy closed, its connections cut) and reachable again. Readiness is 503
 * naming the store while nothing answers, 200 once the pool connects again, 503 naming the
 * migrations when `schema_migrations` loses a version.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { buildFastifyApp } from '../../src/app/fastify-app.js';
import type { BuiltApp } from '../../src/app/app-parts.js';
import { migrate } from '../../src/runtime/persistence/open-store.js';
import { ledgerMachine } from '../../fixtures/http/ledger-machine.js';
import {
  adminQuery,
  createTestSchema,
  dropSchema,
  PG_TEST_URL,
  shouldRunPostgresTests,
  type TestSchema,
} from '../support/postgres.js';

const run = await shouldRunPostgresTests('test/app/readiness-postgres.test.ts');

/** A TCP proxy to the test database that can be cut and restored on the same port. */
class Proxy {
  #server: Server | null = null;
  readonly #sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    const target = new URL(PG_TEST_URL);
    const server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
  }
}

describe.runIf(run)('readiness on PostgreSQL', () => {
  let schema: TestSchema;
  const proxy = new Proxy();
  let built: BuiltApp<unknown>;
  let url: string;

  beforeAll(async () => {
    schema = await createTestSchema('readiness');
    await migrate(schema.url);
    await proxy.open();
    const proxied = new URL(schema.url);
    proxied.host = `127.0.0.1:${proxy.port}`;
    built = await buildFastifyApp(
      {
        config: { health: { enabled: true, timeoutMs: 1000 } },
        machines: () => [ledgerMachine],
        mount: (router) => router.register(ledgerMachine, { prefix: 'ledgers', create: true }),
      },
      { databaseUrl: proxied.toString(), worker: false },
    );
    // Job registration (pg-boss queues) done before the proxy is cut.
    await built.runtime.ready();
    url = await built.listen(0);
  }, 60_000);

  afterAll(async () => {
    await built?.close({ timeoutMs: 1000 });
    await proxy.cut();
    await schema?.drop();
    if (schema !== undefined) await dropSchema(`${schema.schema}_jobs`);
  });

  async function ready(): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${url}/health/ready`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('should be ready, unready naming the store while it is unreachable, and ready again', async () => {
    expect((await ready()).status).toBe(200);
    await proxy.cut();
    const down = await ready();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({
      status: 'fail',
      checks: { store: { status: 'fail' }, shutdown: { status: 'pass' } },
    });
    expect(String(down.body['message'])).toMatch(/^Not ready: store: the store does not answer/);
    // Liveness does not depend on the store.
    expect((await fetch(`${url}/health/live`)).status).toBe(200);
    await proxy.open();
    let again = await ready();
    for (let tries = 0; tries < 20 && again.status !== 200; tries++) again = await ready();
    expect(again.status).toBe(200);
  });

  it('should be unready naming the migrations when a version is missing', async () => {
    await adminQuery(
      `DELETE FROM "${schema.schema}".schema_migrations WHERE version = (SELECT max(version) FROM "${schema.schema}".schema_migrations)`,
    );
    const unready = await ready();
    expect(unready.status).toBe(503);
    expect(unready.body).toMatchObject({
      checks: { store: { status: 'pass' }, migrations: { status: 'fail' } },
    });
  });
});
