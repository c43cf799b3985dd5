/**
 * 405 answers on every path of the example app, for every method and for the URL spellings
 * Fastify's router folds or refuses. A Fastify scope that answers its own not-found URLs
 * computes them in that handler (adapters/method-not-allowed.ts); one that does not registers a
 * 405 route per path. Both must answer alike, as Express does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import config from '../../../fixtures/example/machine-routes.config.js';
import { calculatorRoutes } from '../../../generated-example/calculator.routes.gen.js';
import { checkoutRoutes } from '../../../generated-example/checkout.routes.gen.js';
import { fulfillmentRoutes } from '../../../generated-example/fulfillment.routes.gen.js';
import { invoiceRoutes } from '../../../generated-example/invoice.routes.gen.js';
import { machineOf } from '../../../generated-example/machines.gen.js';
import { orderRoutes } from '../../../generated-example/order.routes.gen.js';
import { orderReviewRoutes } from '../../../generated-example/order_review.routes.gen.js';
import { ticketRoutes } from '../../../generated-example/ticket.routes.gen.js';
import { ticketStaffRoutes } from '../../../generated-example/ticket_staff.routes.gen.js';
import { resolveModelBinders } from '../../../src/generator/models.js';
import { machineRoutesRouter } from '../../../src/runtime/http/adapters/express.js';
import { machineRoutes } from '../../../src/runtime/http/adapters/fastify.js';
import { machineRoutesFrameworkErrors } from '../../../src/runtime/http/adapters/fastify-framework-errors.js';
import { MethodTable } from '../../../src/runtime/http/adapters/method-not-allowed.js';
import { allowHeader, methodsByPath } from '../../../src/runtime/http/adapters/shared.js';
import { MachineRouter, type MountedRoute } from '../../../src/runtime/http/machine-router.js';
import type { MiddlewareRegistry } from '../../../src/runtime/http/middleware-registry.js';
import type { PlannedRoute } from '../../../src/runtime/http/types.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/**
 * Methods no planned route uses: Fastify answers them 404 on any path. OPTIONS has a route on
 * every path (router.optionsRoutes): never a 405.
 */
const ODD_METHODS = ['TRACE', 'PROPFIND'] as const;
const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

let dir: string;
let store: SqliteStore;
let router: MachineRouter;
/** Every planned path of the example, a parameter filled in, with its methods. */
let paths: { url: string; allowed: ReadonlySet<string>; allow: string }[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'machine-routes-405-'));
  store = new SqliteStore({ filename: join(dir, 'machines.db') });
  router = new MachineRouter({
    runtime: new MachineRuntime({ store }),
    middleware: config.middleware as MiddlewareRegistry,
    models: resolveModelBinders(config.models, store),
  });
  const mounts: [string, PlannedRoute[]][] = [
    ['calculator', calculatorRoutes],
    ['checkout', checkoutRoutes],
    ['fulfillment', fulfillmentRoutes],
    ['invoice', invoiceRoutes],
    ['order', orderRoutes],
    ['order', orderReviewRoutes],
    ['ticket', ticketRoutes],
    ['ticket', ticketStaffRoutes],
  ];
  for (const [machine, routes] of mounts) router.mount(machineOf(machine), routes);
  paths = methodsByPath([...router.routes, ...router.optionsRoutes]).map(({ path, allowed }) => ({
    url: path.replace(/\{[^}]+\}/g, ID),
    allowed: new Set(allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed),
    allow: allowHeader(allowed),
  }));
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** How the plugin is mounted: answering not-found URLs itself (the table) or not (405 routes). */
type Mode = 'table' | 'routes';

async function fastifyApp(
  mode: Mode,
  prefix: string,
  options: FastifyServerOptions = {},
): Promise<FastifyInstance> {
  // As the generated app: a URL the router refuses (bad encoding, a too long id) is a 404.
  const app = Fastify({ frameworkErrors: machineRoutesFrameworkErrors, ...options });
  await app.register(machineRoutes, { router, prefix, notFound: mode === 'table' });
  if (mode === 'routes') app.setNotFoundHandler((_request, reply) => reply.code(404).send({}));
  await app.ready();
  return app;
}

async function answer(
  app: FastifyInstance,
  method: string,
  url: string,
): Promise<{ status: number; allow: string | undefined }> {
  const response = await app.inject({ method: method as 'GET', url });
  const allow = response.headers['allow'];
  return { status: response.statusCode, allow: typeof allow === 'string' ? allow : undefined };
}

describe('405 answers on Fastify', () => {
  it.each(['table', 'routes'] as const)(
    'should answer 405 with Allow to every refused method of every path, 404 to odd methods (%s)',
    async (mode) => {
      for (const prefix of ['', '/api']) {
        const app = await fastifyApp(mode, prefix);
        try {
          for (const path of paths) {
            for (const method of METHODS) {
              if (path.allowed.has(method)) continue;
              const url = `${prefix}${path.url}`;
              expect({ method, url, ...(await answer(app, method, url)) }).toEqual({
                method,
                url,
                status: 405,
                allow: path.allow,
              });
            }
            for (const method of ODD_METHODS) {
              expect((await answer(app, method, `${prefix}${path.url}`)).status).toBe(404);
            }
            // OPTIONS is routed on every path: never refused (http-surface.test.ts answers it).
            const options = await answer(app, 'OPTIONS', `${prefix}${path.url}`);
            expect(options.status).not.toBe(405);
            if (!path.url.includes(ID)) expect(options.status).toBe(204);
          }
          // The refusal's body is the layer's JSON; a HEAD answer has none.
          const refused = paths.find((path) => !path.allowed.has('PUT'))!;
          const response = await app.inject({ method: 'PUT', url: `${prefix}${refused.url}` });
          expect(response.json()).toEqual({ message: 'Method Not Allowed.' });
          const head = paths.find((path) => !path.allowed.has('HEAD'))!;
          expect((await app.inject({ method: 'HEAD', url: `${prefix}${head.url}` })).body).toBe('');
        } finally {
          await app.close();
        }
      }
    },
  );

  // Every spelling of every path, by six methods and OPTIONS, on four apps: slow under load.
  it('should answer URL spellings the router folds or refuses alike in both modes', async () => {
    const spellings = (url: string): string[] => {
      const segments = url.split('/');
      const literal = segments.findIndex((segment) => /^[a-z]/.test(segment));
      const encoded = [...segments];
      encoded[literal] =
        `%${segments[literal]!.charCodeAt(0).toString(16)}${segments[literal]!.slice(1)}`;
      const upper = [...segments];
      upper[literal] = segments[literal]!.toUpperCase();
      return [
        encoded.join('/'),
        upper.join('/'),
        `${url}/`,
        `/${url}`,
        `${url}?payload=1`,
        `${url}#top`,
        `${url};x`,
        url.replace(ID, ''),
        url.replace(ID, 'x'.repeat(101)),
        url.replace(ID, 'a%2Fb'),
        url.replace(ID, '%zz'),
      ];
    };
    // The options a table honours itself (those that fold URLs keep the routes, below).
    const routerOptions = [{}, { maxParamLength: 10 }];
    for (const [prefix, options] of routerOptions.flatMap((options) =>
      ['', '/api'].map((prefix) => [prefix, { routerOptions: options }] as const),
    )) {
      const table = await fastifyApp('table', prefix, options);
      const routes = await fastifyApp('routes', prefix, options);
      try {
        for (const path of paths) {
          for (const url of spellings(`${prefix}${path.url}`)) {
            for (const method of [...METHODS, 'OPTIONS']) {
              const expected = await answer(routes, method, url);
              // Not a 405: a route of the example's answered, or no route did.
              if (expected.status !== 405) expected.allow = undefined;
              const actual = await answer(table, method, url);
              if (actual.status !== 405) actual.allow = undefined;
              expect({ method, url, ...actual }).toEqual({ method, url, ...expected });
            }
          }
        }
      } finally {
        await table.close();
        await routes.close();
      }
    }
  }, 60_000);

  it('should refuse a wrong method before reading its body when the not-found handler answers', async () => {
    // A 405 route parsed the body first: a text body was 415. The method decides before it now.
    const app = await fastifyApp('table', '');
    try {
      const response = await app.inject({
        method: 'PUT',
        url: '/orders/create',
        headers: { 'content-type': 'text/plain' },
        payload: 'hello',
      });
      expect({ status: response.statusCode, allow: response.headers['allow'] }).toEqual({
        status: 405,
        allow: 'POST, OPTIONS',
      });
    } finally {
      await app.close();
    }
  });

  // Fastify refuses a Content-Type it cannot parse (`json`) before any route or parser runs:
  // the layer's error handler still answers what the URL and method call for.
  it.each(['table', 'routes'] as const)(
    'should answer a wrong method 405 and an unknown URL of the plugin 404 whatever the body (%s)',
    async (mode) => {
      const app = await fastifyApp(mode, '/api');
      try {
        await app.listen({ host: '127.0.0.1', port: 0 });
        const { port } = app.server.address() as AddressInfo;
        const post = async (method: string, path: string, contentType: string, body: string) => {
          const response = await fetch(`http://127.0.0.1:${port}${path}`, {
            method,
            headers: { 'content-type': contentType },
            body,
          });
          return { status: response.status, allow: response.headers.get('allow') };
        };
        for (const [contentType, body] of [
          ['json', '{}'],
          ['text/plain', 'hello'],
          ['application/json', '{'],
        ]) {
          expect(await post('PUT', '/api/orders/create', contentType!, body!)).toEqual({
            status: 405,
            allow: 'POST, OPTIONS',
          });
          // Without `notFound` the application's not-found handler answers (and its errors).
          if (mode === 'table')
            expect(await post('POST', '/api/nowhere', contentType!, body!)).toEqual({
              status: 404,
              allow: null,
            });
        }
      } finally {
        await app.close();
      }
    },
  );

  it('should keep the 405 routes on an instance whose router folds case', async () => {
    // Fastify finds the not-found handler case-sensitively by prefix: such an instance routes.
    const app = await fastifyApp('table', '/api', { routerOptions: { caseSensitive: false } });
    try {
      expect(await answer(app, 'GET', '/API/ORDERS/CREATE')).toEqual({
        status: 405,
        allow: 'POST, OPTIONS',
      });
    } finally {
      await app.close();
    }
  });
});

describe('MethodTable', () => {
  const route = (method: PlannedRoute['method'], path: string): MountedRoute =>
    ({
      route: { method, path },
      handler: async () => ({ status: 200 }),
    }) as unknown as MountedRoute;

  it('should prefer a literal path to a parameter, as the router does', () => {
    const table = new MethodTable('', [route('POST', '/x/create'), route('GET', '/x/{id}')]);
    expect(table.refusal('PUT', '/x/create')).toBe('POST');
    expect(table.refusal('POST', '/x/abc')).toBe('GET, HEAD');
    expect(table.refusal('GET', '/x/abc')).toBeUndefined();
  });

  it('should refuse only the methods a path does not answer, under its prefix', () => {
    const table = new MethodTable('/api', [route('GET', '/x/{id}'), route('DELETE', '/x/{id}')]);
    expect(table.refusal('POST', '/api/x/1')).toBe('GET, DELETE, HEAD');
    expect(table.refusal('HEAD', '/api/x/1')).toBeUndefined();
    expect(table.refusal('POST', '/x/1')).toBeUndefined();
    expect(table.refusal('OPTIONS', '/api/x/1')).toBeUndefined();
  });
});

describe('405 answers on Express', () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const app = express();
    app.use('/api', machineRoutesRouter(router));
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('should answer 405 with Allow to every refused method of every path, 404 to odd methods', async () => {
    for (const path of paths) {
      for (const method of METHODS) {
        if (path.allowed.has(method)) continue;
        const response = await fetch(`${base}${path.url}`, { method });
        expect({
          method,
          url: path.url,
          status: response.status,
          allow: response.headers.get('allow'),
        }).toEqual({
          method,
          url: path.url,
          status: 405,
          allow: path.allow,
        });
      }
      // As on Fastify: methods no route plans are no route of ours.
      for (const method of ODD_METHODS) {
        // fetch refuses TRACE: node:http sends any method.
        const status = await new Promise<number | undefined>((resolve, reject) => {
          request(`${base}${path.url}`, { method }, (response) => {
            response.resume();
            resolve(response.statusCode);
          })
            .on('error', reject)
            .end();
        });
        expect({ method, url: path.url, status }).toEqual({
          method,
          url: path.url,
          status: 404,
        });
      }
    }
  });

  it('should match paths as spelled, case and trailing slash included, as Fastify does', async () => {
    for (const [method, url] of [
      ['POST', '/Orders/create'],
      ['POST', '/orders/create/'],
      ['PUT', '/orders/create/'],
    ] as const) {
      const response = await fetch(`${base}${url}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: '{"payload":{}}',
      });
      expect({ method, url, status: response.status }).toEqual({ method, url, status: 404 });
    }
  });
});
