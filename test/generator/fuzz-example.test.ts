/**
 * Bounded, seeded fuzzing of the example application on both frameworks (the generated
 * Fastify app and the Express variant): a few thousand requests across every route, with
 * hostile paths, bodies, queries and headers. Every answer must be below 500; every error
 * body `{ message, ... }` JSON without stack traces or file paths; a rejected request must
 * leave the store as it was (a validation guard's 422 keeps its history records by design,
 * docs/interpreter.md, so only the instances are compared then); and nothing may reach
 * `Object.prototype`.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlannedRoute, SqliteStore } from '../../src/runtime/index.js';
import { buildApp as buildFastifyApp, type App } from '../../generated-example/app.gen.js';
import { calculatorRoutes } from '../../generated-example/calculator.routes.gen.js';
import { checkoutRoutes } from '../../generated-example/checkout.routes.gen.js';
import { fulfillmentRoutes } from '../../generated-example/fulfillment.routes.gen.js';
import { invoiceRoutes } from '../../generated-example/invoice.routes.gen.js';
import { orderRoutes } from '../../generated-example/order.routes.gen.js';
import { ticketRoutes } from '../../generated-example/ticket.routes.gen.js';
import { ticketStaffRoutes } from '../../generated-example/ticket_staff.routes.gen.js';
import { buildApp as buildExpressApp } from './__snapshots__/express/app.gen.js';

const SEED = 20_261_124;
const REQUESTS_PER_ADAPTER = 1_500;

const ROUTES: readonly PlannedRoute[] = [
  ...calculatorRoutes,
  ...checkoutRoutes,
  ...fulfillmentRoutes,
  ...invoiceRoutes,
  ...orderRoutes,
  ...ticketRoutes,
  ...ticketStaffRoutes,
];

/** Path segments a client may send in place of an id or a model key (already URL-encoded). */
const HOSTILE_SEGMENTS = [
  '%00',
  'INV-1%00',
  '__proto__',
  'constructor',
  'toString',
  '..%2F..%2Fetc%2Fpasswd',
  '%E0%A4%A',
  '%F0%9F%99%82',
  'x'.repeat(400),
  '01ARZ3NDEKTSV4RRFFQ69G5FAV',
  "'%20OR%201=1--",
];

const RAW_BODIES = [
  'null',
  '[]',
  '"payload"',
  '42',
  '{',
  '{"payload":',
  '{"payload":{"amount":1}',
  '{"__proto__":{"polluted":true},"payload":{"__proto__":{"polluted":true}}}',
  '{"constructor":{"prototype":{"polluted":true}},"payload":{"constructor":{"prototype":{"polluted":true}}}}',
  '{"payload":null}',
  '{"payload":[1,2]}',
  '{"type":"SOMETHING_ELSE","payload":{}}',
  `{"payload":{"note":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`,
  `{"payload":{"note":"${'x'.repeat(70_000)}"}}`,
  '\u0000',
];

const PAYLOAD_KEYS = ['amount', 'note', 'quantity', 'card', 'by', 'value', 'comment', 'a', 'b'];

const QUERY_KEYS = [
  'quantity',
  'payload[quantity]',
  '__proto__[polluted]',
  'constructor[prototype][polluted]',
  'toString',
  'items[]',
  'a[b][c]',
  `a${'[x]'.repeat(40)}`,
  `deep${'[y]'.repeat(2_000)}`,
];

const AUTHORIZATION = [
  undefined,
  'Bearer staff-token',
  'Bearer customer-token',
  'Bearer __proto__',
  'Bearer constructor',
  'Bearer toString',
  'Bearer hasOwnProperty',
  'Basic c3RhZmY6dG9rZW4=',
  'Bearer',
];

interface FuzzRequest {
  route: number;
  method: string | null;
  param:
    | { kind: 'known'; index: number }
    | { kind: 'hostile'; value: string }
    | { kind: 'text'; value: string };
  body: { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; value: string };
  contentType: string | null;
  query: [string, string][];
  authorization: string | undefined;
}

const payloadValue = fc.oneof(
  fc.integer({ min: -5, max: 100_000 }),
  fc.string({ maxLength: 20 }),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
);

const requestArbitrary: fc.Arbitrary<FuzzRequest> = fc.record({
  route: fc.nat({ max: ROUTES.length - 1 }),
  // Mostly the route's own method (null), sometimes another one.
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'),
    },
  ),
  param: fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('known' as const), index: fc.nat() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('hostile' as const),
        value: fc.constantFrom(...HOSTILE_SEGMENTS),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('text' as const),
        value: fc.string({ minLength: 1 }),
      }),
    },
  ),
  body: fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('json' as const),
        value: fc.record(
          {
            payload: fc.dictionary(fc.constantFrom(...PAYLOAD_KEYS), payloadValue, { maxKeys: 4 }),
          },
          { requiredKeys: [] },
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue() }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('raw' as const),
        value: fc.constantFrom(...RAW_BODIES),
      }),
    },
  ),
  contentType: fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded') },
    { weight: 1, arbitrary: fc.constant(null) },
  ),
  query: fc.array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 8 })),
      fc.oneof(fc.integer().map(String), fc.string({ maxLength: 12 })),
    ),
    { maxLength: 4 },
  ),
  authorization: fc.constantFrom(...AUTHORIZATION),
});

/** Every table of the store, rows included: equal fingerprints mean nothing was written. */
function fingerprint(store: SqliteStore, tables: readonly string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const table of tables) {
    // Rows sorted as text: some tables have no rowid (WITHOUT ROWID), and order is not content.
    const rows = store.database
      .prepare(`SELECT * FROM "${table}"`)
      .all()
      .map((row) => JSON.stringify(row))
      .sort();
    result[table] = createHash('sha1').update(rows.join('\n')).digest('hex');
  }
  return result;
}

/**
 * The body as text. A state stream (`GET /orders/{id}/events`) stays open until the instance
 * reaches a final state: its first state message is read, then the request is aborted.
 */
async function bodyText(response: Response, controller: AbortController): Promise<string> {
  if (!response.headers.get('content-type')?.startsWith('text/event-stream'))
    return response.text();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (/^data: .*\n\n/m.test(text)) break;
    }
  } finally {
    controller.abort();
  }
  return text;
}

const LEAK = /\bat [^\n]*:\d+:\d+|node_modules|\/work\/|file:\/\/|\.ts\b|\n\s+at /;

describe.each([
  ['fastify', buildFastifyApp],
  ['express', buildExpressApp],
] as const)('fuzzing the example app on %s', (framework, buildApp) => {
  let dir: string;
  let app: App;
  let baseUrl: string;
  let store: SqliteStore;
  let tables: string[];
  const ids: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), `machine-routes-fuzz-${framework}-`));
    app = (await buildApp({ databaseUrl: `sqlite:${dir}/fuzz.db`, worker: false })) as App;
    baseUrl = await app.listen(0);
    store = app.runtime.store as SqliteStore;
    tables = (
      store.database
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .all() as { name: string }[]
    )
      .map(({ name }) => name)
      // Lock rows come and go within a request by design; the rest must not change.
      .filter((name) => name !== 'machine_locks');
    for (const route of ROUTES.filter((candidate) => candidate.handler === 'create')) {
      for (let count = 0; count < 2; count++) {
        const response = await fetch(`${baseUrl}${route.path}`, { method: 'POST' });
        ids.push(((await response.json()) as { data: { id: string } }).data.id);
      }
    }
  });

  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    `should survive ${REQUESTS_PER_ADAPTER} seeded hostile requests`,
    { timeout: 300_000 },
    async () => {
      const requests = fc.sample(requestArbitrary, { seed: SEED, numRuns: REQUESTS_PER_ADAPTER });
      const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).length;
      const problems: string[] = [];
      const statuses = new Map<number, number>();
      let before = fingerprint(store, tables);
      for (const [index, request] of requests.entries()) {
        const route = ROUTES[request.route]!;
        const method = request.method ?? route.method;
        const param =
          request.param.kind === 'known'
            ? (ids[request.param.index % ids.length] ?? '')
            : request.param.kind === 'hostile'
              ? request.param.value
              : encodeURIComponent(request.param.value);
        const pathname = route.path.replace(
          /\{[^}]+\}/g,
          route.path.includes('{invoice}') && request.param.kind === 'known'
            ? `INV-${(request.param.index % 3) + 1}`
            : param,
        );
        const query = request.query
          // Brackets raw, as browsers send them (encoded, a 2,000-deep key would pass Node's
          // 16 KB header limit, answered 431 by Node itself before the app sees it).
          .map(
            ([key, value]) =>
              `${encodeURIComponent(key).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${encodeURIComponent(value)}`,
          )
          .join('&');
        const headers: Record<string, string> = {};
        if (request.authorization !== undefined) headers['authorization'] = request.authorization;
        let body: string | undefined;
        if (method !== 'GET' && method !== 'HEAD' && request.body.kind !== 'none') {
          body =
            request.body.kind === 'raw' ? request.body.value : JSON.stringify(request.body.value);
          if (request.contentType !== null) headers['content-type'] = request.contentType;
        }
        const url = `${baseUrl}${pathname}${query === '' ? '' : `?${query}`}`;
        const controller = new AbortController();
        const response = await fetch(url, {
          method,
          headers,
          signal: controller.signal,
          ...(body === undefined ? {} : { body }),
        });
        const text = await bodyText(response, controller);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const where = `#${index} ${method} ${url.slice(0, 160)} -> ${response.status}`;
        if (response.status >= 500) problems.push(`${where}: server error ${text.slice(0, 200)}`);
        if (LEAK.test(text)) problems.push(`${where}: leaks internals ${text.slice(0, 200)}`);
        if (response.status >= 400 && method !== 'HEAD') {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          if (typeof (parsed as { message?: unknown } | undefined)?.message !== 'string')
            problems.push(`${where}: error body is not { message } JSON: ${text.slice(0, 200)}`);
        }
        const after = fingerprint(store, tables);
        if (response.status >= 400 || method === 'HEAD') {
          // A validation guard's 422 keeps its history records (spec parity): compare the rest.
          const changed = tables.filter(
            (table) =>
              before[table] !== after[table] &&
              !(response.status === 422 && table === 'machine_events'),
          );
          if (changed.length > 0)
            problems.push(`${where}: rejected request wrote ${changed.join(', ')}`);
        }
        before = after;
        if (
          ({} as Record<string, unknown>)['polluted'] !== undefined ||
          Object.getOwnPropertyNames(Object.prototype).length !== prototypeKeys
        ) {
          problems.push(`${where}: Object.prototype was polluted`);
        }
      }
      expect(problems.slice(0, 20)).toEqual([]);
      // The sample reaches success and each kind of refusal, so the checks above were exercised.
      expect([...statuses.keys()].sort()).toEqual(
        expect.arrayContaining([200, 400, 404, 405, 413, 415, 422]),
      );
    },
  );
});
