/**
 * The layer inside applications people already have, over real listening servers: the Fastify
 * plugin (`app.register(machineRoutes, { router, prefix })`) and the Express router compose with
 * the application's own routes, added before or after them, and log through the framework's
 * logger (pino's `request.log`; pino-http's `req.log` on Express), never the console.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, get as httpGet, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import express from 'express';
import Fastify from 'fastify';
import fp from 'fastify-plugin';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOrderFixture } from '../../../fixtures/http/order-machine.js';
import {
  machineRoutesRouter,
  mountExpress,
  withFallback,
} from '../../../src/runtime/http/adapters/express.js';
import { machineRoutes } from '../../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { send } from './support/servers.js';

describe('framework integration', () => {
  let dir: string;
  let store: SqliteStore;
  let router: MachineRouter;
  const fixture = createOrderFixture();
  const consoleError = vi.spyOn(console, 'error');

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'machine-routes-frameworks-'));
    store = new SqliteStore({ filename: join(dir, 'machines.db') });
    // No `logger`: errors go to the framework's logger of each request.
    router = new MachineRouter({ runtime: new MachineRuntime({ store }) });
    router.register(fixture.orderMachine, {
      prefix: 'orders',
      create: true,
      machineIdFor: ['SUBMIT', 'EXPLODE'],
      only: ['SUBMIT', 'EXPLODE'],
    });
  });

  afterEach(() => expect(consoleError).not.toHaveBeenCalled());

  afterAll(async () => {
    consoleError.mockRestore();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Create, then one event, under `base`; returns the instance id. */
  async function createAndSubmit(url: string, base: string): Promise<string> {
    const created = await send(url, 'POST', `${base}/orders/create`);
    expect(created.status).toBe(201);
    const id = (created.body as { data: { id: string } }).data.id;
    const submitted = await send(url, 'POST', `${base}/orders/${id}/submit`, {
      body: { payload: { amount: 40 } },
    });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ data: { id, state: ['order.submitted'] } });
    return id;
  }

  describe('Fastify plugin', () => {
    it('should serve under its prefix beside routes added before and after it, logging through pino', async () => {
      const lines: Record<string, unknown>[] = [];
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
          done();
        },
      });
      const app = Fastify({ logger: { level: 'error', stream } });
      // The application's hooks reach the plugin's routes; its parsers are its own.
      app.addHook('onSend', async (_request, reply) => {
        reply.header('x-app', 'yes');
      });
      app.get('/before', async () => ({ route: 'before' }));
      await app.register(machineRoutes, { router, prefix: '/api' });
      app.post('/after', async (request) => ({ route: 'after', body: request.body }));
      try {
        const url = await app.listen({ host: '127.0.0.1', port: 0 });
        await createAndSubmit(url, '/api');
        const created = await send(url, 'POST', '/api/orders/create');
        expect(created.headers.get('x-app')).toBe('yes');

        expect(await send(url, 'GET', '/before')).toMatchObject({
          status: 200,
          body: { route: 'before' },
        });
        // The app's own JSON parser still handles its routes (the plugin's is encapsulated).
        expect(await send(url, 'POST', '/after', { body: { a: 1 } })).toMatchObject({
          status: 200,
          body: { route: 'after', body: { a: 1 } },
        });
        // JSON 404 under the prefix; Fastify's own 404 elsewhere.
        expect(await send(url, 'GET', '/api/nope')).toMatchObject({
          status: 404,
          body: { message: 'Not Found.' },
        });
        expect((await send(url, 'GET', '/nope')).body).toMatchObject({ error: 'Not Found' });

        // An action that throws: 500 without internals, logged by the app's pino logger.
        const id = (
          (await send(url, 'POST', '/api/orders/create')).body as { data: { id: string } }
        ).data.id;
        const exploded = await send(url, 'POST', `/api/orders/${id}/explode`);
        expect(exploded.status).toBe(500);
        expect(JSON.stringify(exploded.body)).not.toContain('hunter2');
        const logged = lines.find((line) => line['route'] === 'order.explode');
        expect(logged).toMatchObject({ level: 50, msg: 'Unhandled error in route order.explode' });
        expect(logged!['reqId']).toBeDefined();
        expect((logged!['err'] as { message: string }).message).toContain('hunter2');
      } finally {
        await app.close();
      }
    });

    it('should register twice under two prefixes and name itself for fastify-plugin checks', async () => {
      const app = Fastify();
      await app.register(machineRoutes, { router, prefix: '/v1' });
      await app.register(machineRoutes, { router, prefix: '/v2' });
      try {
        const url = await app.listen({ host: '127.0.0.1', port: 0 });
        await createAndSubmit(url, '/v1');
        await createAndSubmit(url, '/v2');
      } finally {
        await app.close();
      }
      expect(
        (machineRoutes as unknown as Record<symbol, { fastify: string; name: string }>)[
          Symbol.for('plugin-meta')
        ],
      ).toMatchObject({ fastify: '5.x', name: 'machine-routes' });
      // The symbols Fastify reads are fastify-plugin's (a devDependency now) for these options.
      const reference = fp(async () => undefined, {
        name: 'machine-routes',
        fastify: '5.x',
        encapsulate: true,
      }) as unknown as Record<symbol, unknown>;
      for (const key of ['skip-override', 'fastify.display-name', 'plugin-meta']) {
        expect((machineRoutes as unknown as Record<symbol, unknown>)[Symbol.for(key)], key).toEqual(
          reference[Symbol.for(key)],
        );
      }
    });
  });

  describe('Express router', () => {
    async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
      const server = createServer(withFallback(app));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
    }
    const close = (server: Server) =>
      new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );

    it("should answer commands with response.json's bytes but no ETag, reads with an ETag, and follow the app's JSON options", async () => {
      const reads = new MachineRouter({ runtime: new MachineRuntime({ store }) });
      reads.register(fixture.orderMachine, {
        prefix: 'orders',
        create: true,
        reads: true,
        only: ['SUBMIT'],
      });
      const app = express();
      app.use(machineRoutesRouter(reads));
      const { url, server } = await listen(app);
      try {
        const created = await fetch(`${url}/orders/create`, { method: 'POST' });
        const text = await created.text();
        expect(created.status).toBe(201);
        expect(created.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(created.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
        expect(created.headers.get('etag')).toBeNull();
        const { id } = (JSON.parse(text) as { data: { id: string } }).data;
        // GET keeps response.json: its ETag answers a conditional request 304.
        const read = await fetch(`${url}/orders/${id}/status`);
        const etag = read.headers.get('etag');
        expect(read.status).toBe(200);
        expect(etag).not.toBeNull();
        // (node:http: fetch adds `cache-control: no-cache` to a conditional request.)
        const again = await new Promise<number>((resolve, reject) =>
          httpGet(`${url}/orders/${id}/status`, { headers: { 'if-none-match': etag! } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          }).on('error', reject),
        );
        expect(again).toBe(304);
        // An application's `json spaces` applies to every answer, commands included.
        app.set('json spaces', 2);
        const spaced = await fetch(`${url}/orders/create`, { method: 'POST' });
        expect(await spaced.text()).toMatch(/^\{\n {2}"data": \{/);
      } finally {
        await close(server);
      }
    });

    it('reproduces the old shape: after mountExpress, a route added later answers 404', async () => {
      const app = express();
      mountExpress(app, router);
      app.get('/after', (_request, response) => response.json({ route: 'after' }));
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        expect((await send(url, 'GET', '/after')).status).toBe(404);
      } finally {
        await close(server);
      }
    });

    it('should compose with routes added before and after it, with a JSON 404 last', async () => {
      const logs: { fields: Record<string, unknown>; message: string }[] = [];
      const app = express();
      // What pino-http installs: a logger per request.
      app.use((request, _response, next) => {
        (request as unknown as { log: unknown }).log = {
          error: (fields: Record<string, unknown>, message: string) =>
            logs.push({ fields, message }),
        };
        next();
      });
      app.get('/before', (_request, response) => {
        response.json({ route: 'before' });
      });
      app.use('/api', machineRoutesRouter(router));
      app.get('/after', (_request, response) => {
        response.json({ route: 'after' });
      });
      app.get('/fails', () => {
        throw new Error('the app failed');
      });
      app.use(
        (
          error: Error,
          _request: express.Request,
          response: express.Response,
          _next: express.NextFunction,
        ) => {
          // The application's own error handler gets its own errors.
          response.status(418).json({ handledBy: 'app', message: error.message });
        },
      );
      const { url, server } = await listen(app);
      try {
        await createAndSubmit(url, '/api');
        expect(await send(url, 'GET', '/before')).toMatchObject({
          status: 200,
          body: { route: 'before' },
        });
        expect(await send(url, 'GET', '/after')).toMatchObject({
          status: 200,
          body: { route: 'after' },
        });
        expect(await send(url, 'GET', '/fails')).toMatchObject({
          status: 418,
          body: { handledBy: 'app', message: 'the app failed' },
        });
        expect(await send(url, 'GET', '/nope')).toMatchObject({
          status: 404,
          body: { message: 'Not Found.' },
        });
        expect(await send(url, 'PUT', '/api/orders/create')).toMatchObject({ status: 405 });

        const id = (
          (await send(url, 'POST', '/api/orders/create')).body as { data: { id: string } }
        ).data.id;
        expect((await send(url, 'POST', `/api/orders/${id}/explode`)).status).toBe(500);
        expect(logs).toHaveLength(1);
        expect(logs[0]!.message).toBe('Unhandled error in route order.explode');
        expect((logs[0]!.fields['err'] as Error).message).toContain('hunter2');
      } finally {
        await close(server);
      }
    });
  });
});
