/**
 * Flow control in the contract (docs/http.md "Flow control"): the OpenAPI document lists the 429
 * of each route with `flow` (its limits, `Retry-After`, `FlowLimitedResponse`) and of no other,
 * the generated client types it, and the client runtime (copied verbatim beside every generated
 * client) sends a refused request again after its Retry-After, but never a debounced one. The
 * answers of a real server are checked against the document.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerMachine } from '../../fixtures/http/ledger-machine.js';
import { createRouteMethods, type RouteInput } from '../../src/client/runtime.js';
import { checkProject, renderFiles } from '../../src/generator/generate.js';
import { buildOpenApiDocument } from '../../src/generator/emitters/openapi.js';
import type { EmitOptions } from '../../src/generator/emitters/types.js';
import type { JsonSchema, RouteManifest } from '../../src/generator/manifest.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MemoryStore } from '../../src/runtime/persistence/memory-store.js';
import { send, startServer, type TestServer } from '../runtime/http/support/servers.js';
import { ROOT } from './support.js';

/** What the client runtime resolves with. */
type Answer = { ok: boolean; status: number; body: unknown };

type Response = {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: JsonSchema }>;
};

const OPTIONS: EmitOptions = {
  framework: 'fastify',
  openapi: {
    title: 'flow',
    version: '1.0.0',
    description: null,
    bearerAuthDescription: null,
    license: null,
    servers: [{ url: '/' }],
  },
  client: { baseUrl: null },
} as EmitOptions;

let manifest: RouteManifest;
let document: JsonSchema;
let server: TestServer;
const SCHEMA_ID = 'https://machine-routes.test/flow-openapi.json';
const ajv = new Ajv2020({ strict: false });

function responses(path: string): Record<string, Response> {
  const paths = document['paths'] as Record<string, Record<string, { responses: object }>>;
  return paths[path]!['post']!.responses as Record<string, Response>;
}

/** Whether `body` is valid against the document's 429 of `path`. */
function documented429(path: string, body: unknown): boolean {
  const schema = JSON.parse(
    JSON.stringify(responses(path)['429']!.content!['application/json']!.schema).replaceAll(
      '"#/components/',
      `"${SCHEMA_ID}#/components/`,
    ),
  ) as object;
  return ajv.validate(schema, body) as boolean;
}

beforeAll(async () => {
  const checked = await checkProject({
    config: 'fixtures/generator/flow/machine-routes.config.ts',
    cwd: ROOT,
  });
  expect(checked.issues).toEqual([]);
  manifest = checked.manifest!;
  document = buildOpenApiDocument(manifest, OPTIONS);
  ajv.addSchema({ $id: SCHEMA_ID, components: document['components'] } as object);
  const router = new MachineRouter({ runtime: new MachineRuntime({ store: new MemoryStore() }) });
  const { machine: _machine, ...registration } = (
    await import('../../fixtures/generator/flow/machine-routes.config.js')
  ).default.registrations[0]!;
  router.register(ledgerMachine, registration);
  server = await startServer('fastify', [router], { error: () => {} });
}, 60_000);

afterAll(async () => {
  await server?.close();
});

describe('flow control in the OpenAPI document', () => {
  it('should be a valid document with a 429 on the routes with flow only', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    const add = responses('/ledgers/{machineId}/add')['429']!;
    expect(add.description).toMatch(/same x-tenant header/);
    expect(add.description).toMatch(/more than 2 in flight/);
    expect(add.description).toMatch(/more than 1 per 1000 ms/);
    expect(add.headers).toHaveProperty('Retry-After');
    expect(add.content!['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/FlowLimitedResponse',
    });
    expect(responses('/ledgers/{machineId}/note')['429']!.description).toMatch(
      /within 500 ms.*must not be sent again/,
    );
    expect(responses('/ledgers/{machineId}/close')['429']).toBeUndefined();
    expect(responses('/ledgers/create')['429']).toBeUndefined();
  });

  it('should type the 429 body in the generated client', async () => {
    const files = await renderFiles(manifest, OPTIONS, ['client']);
    const client = files.find((file) => file.path.endsWith('client.gen.ts'))!.contents;
    expect(client).toMatch(
      /export type FlowLimitedResponse = \{[^}]*message: string;[^}]*code: 'MR_FLOW_LIMITED';[^}]*'concurrency'[^}]*'debounce'[^}]*'instances'[^}]*retryAfter: number \| null;\s*\}/,
    );
    const addResult = /export type LedgerAddResult =([^;]*);/s.exec(client)![1]!;
    expect(addResult).toMatch(/ClientResponse<429, FlowLimitedResponse>/);
    const closeResult = /export type LedgerCloseResult =([^;]*);/s.exec(client)![1]!;
    expect(closeResult).not.toMatch(/429/);
  });
});

describe('the client runtime against flow control', () => {
  const statuses = (path: string) =>
    Object.keys(responses(path))
      .filter((status) => /^\d+$/.test(status))
      .map(Number);
  const spec = (event: string, path: string) => ({
    method: 'POST' as const,
    path,
    event,
    input: true,
    statuses: statuses(path),
  });

  async function ledger(): Promise<string> {
    const created = await send(server.url, 'POST', '/ledgers/create');
    return (created.body as { data: { id: string } }).data.id;
  }

  it('should answer the documented 429 and send again after its Retry-After when asked', async () => {
    const method = createRouteMethods({ baseUrl: server.url });
    const call = method<RouteInput, Answer>(spec('ADD', '/ledgers/{machineId}/add'));
    const machineId = await ledger();
    const input = { machineId, payload: { amount: 1 } };
    const headers = { 'x-tenant': 'client' };
    expect((await call(input, { headers })).status).toBe(200);
    const refused = await call(input, { headers });
    expect(refused.status).toBe(429);
    expect(documented429('/ledgers/{machineId}/add', refused.body)).toBe(true);
    expect(refused.body).toMatchObject({ code: 'MR_FLOW_LIMITED', limit: 'rate', retryAfter: 1 });
    // With retryOnLimited the call waits out Retry-After (1 s) and is let through.
    const retried = await call(input, { headers, retryOnLimited: true });
    expect(retried.status).toBe(200);
    expect(retried).not.toHaveProperty('retryAfter');
  });

  it('should not send a debounced request again', async () => {
    const tries: string[] = [];
    const method = createRouteMethods({
      baseUrl: server.url,
      retryOnLimited: true,
      interceptors: [{ request: (request) => void tries.push(request.body ?? '') }],
    });
    const note = method<RouteInput, Answer>(spec('NOTE', '/ledgers/{machineId}/note'));
    const machineId = await ledger();
    const first = note({ machineId, payload: { n: 1, text: 'same' } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = note({ machineId, payload: { n: 2, text: 'same' } });
    const [superseded, sent] = await Promise.all([first, second]);
    expect(superseded.status).toBe(429);
    expect(superseded.body).toMatchObject({ limit: 'debounce', retryAfter: null });
    expect(documented429('/ledgers/{machineId}/note', superseded.body)).toBe(true);
    expect(sent.status).toBe(200);
    expect(tries).toHaveLength(2);
  });
});
