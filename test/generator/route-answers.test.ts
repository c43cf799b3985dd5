/**
 * What routes answer besides success, read from one planned route by the runtime and the
 * OpenAPI document alike: `auth:admin,editor` is two guards for the middleware and two roles in
 * the document, and a status an endpoint action declares is documented and answered.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentMachine } from '../../fixtures/generator/answers/machines.js';
import { checkProject } from '../../src/generator/generate.js';
import { buildOpenApiDocument } from '../../src/generator/emitters/openapi.js';
import type { JsonSchema } from '../../src/generator/manifest.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MemoryStore } from '../../src/runtime/persistence/memory-store.js';
import { send, startServer, type TestServer } from '../runtime/http/support/servers.js';
import { ROOT } from './support.js';

type Operation = {
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description: string; content?: Record<string, unknown> }>;
};

let document: JsonSchema;
let server: TestServer;
const guardsSeen: string[][] = [];

function operation(path: string): Operation {
  return (document['paths'] as Record<string, Record<string, Operation>>)[path]!['post']!;
}

beforeAll(async () => {
  const { manifest, issues } = await checkProject({
    config: 'fixtures/generator/answers/machine-routes.config.ts',
    cwd: ROOT,
  });
  expect(issues).toEqual([]);
  document = buildOpenApiDocument(manifest!, {
    framework: 'fastify',
    openapi: {
      title: 'answers',
      version: '1.0.0',
      description: null,
      bearerAuthDescription: null,
      license: null,
      servers: [{ url: '/' }],
    },
    client: { baseUrl: null },
  });
  const router = new MachineRouter({
    runtime: new MachineRuntime({ store: new MemoryStore() }),
    middleware: {
      auth: (request, guards) => {
        guardsSeen.push([...guards]);
        return request.headers['authorization'] === 'Bearer editor'
          ? undefined
          : { status: 401, body: { message: 'Unauthenticated.' } };
      },
    },
  });
  router.register(documentMachine, {
    prefix: 'documents',
    create: true,
    machineIdFor: ['SIGN', 'PUBLISH'],
  });
  server = await startServer('fastify', [router], { error: () => {} });
});

afterAll(async () => {
  await server?.close();
});

describe('route answers', () => {
  it('should document a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
  });

  it('should read `auth:admin,editor` as two guards in the document and in the runtime', async () => {
    expect(operation('/documents/{machineId}/sign').security).toEqual([
      { bearerAuth: ['admin', 'editor'] },
    ]);
    const created = await send(server.url, 'POST', '/documents/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const signed = await send(server.url, 'POST', `/documents/${id}/sign`, {
      headers: { authorization: 'Bearer editor' },
    });
    expect(signed.status).toBe(200);
    expect(guardsSeen).toEqual([['admin', 'editor']]);
  });

  it('should document and answer the status an endpoint action declares', async () => {
    const publish = operation('/documents/{machineId}/publish');
    expect(Object.keys(publish.responses)).toEqual([
      '200',
      '400',
      '403',
      '404',
      '409',
      '412',
      '413',
      '415',
      '422',
      '423',
      '500',
      // Every operation: the shutdown answer; and, with an endpoint action, what abort() or
      // onException may answer beyond what the action declares (docs/http.md).
      '503',
      'default',
    ]);
    expect(publish.responses['403']!.description).toBe('The x-tenant header is missing.');
    const created = await send(server.url, 'POST', '/documents/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const refused = await send(server.url, 'POST', `/documents/${id}/publish`);
    expect(refused).toMatchObject({
      status: 403,
      body: { message: 'The x-tenant header is missing.' },
    });
  });
});
