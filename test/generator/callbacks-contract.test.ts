/**
 * Callback URLs and inbound webhooks in the contract (docs/callbacks.md): the callback route is
 * an operation under `paths` (body: the payload itself; 403/409/410 typed), each webhook an
 * entry of the top-level `webhooks`; the generated client and TanStack bindings leave both out.
 * A real server's answers (Fastify and Express, SQLite file) are validated with ajv against the
 * document, success and refusals alike.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalMachine } from '../../fixtures/http/callback-machine.js';
import { checkProject, renderFiles } from '../../src/generator/generate.js';
import { buildOpenApiDocument } from '../../src/generator/emitters/openapi.js';
import type { EmitOptions } from '../../src/generator/emitters/types.js';
import type { JsonSchema, RouteManifest } from '../../src/generator/manifest.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import type { RegistrationOptions } from '../../src/runtime/http/types.js';
import {
  send,
  startServer,
  type AdapterName,
  type JsonResponse,
  type TestServer,
} from '../runtime/http/support/servers.js';
import { ROOT } from './support.js';

process.env['MACHINE_CALLBACK_SECRET'] = 'contract-secret';
process.env['TEST_STRIPE_SECRET'] = 'whsec_contract';

const CONFIG = 'fixtures/generator/callbacks/machine-routes.config.ts';
const OPTIONS = {
  framework: 'fastify',
  openapi: {
    title: 'callbacks',
    version: '1.0.0',
    description: null,
    bearerAuthDescription: null,
    license: null,
    servers: [{ url: '/' }],
  },
  client: { baseUrl: null, tanstackQuery: true },
} as EmitOptions;
const SCHEMA_ID = 'https://machine-routes.test/callbacks-openapi.json';
const CALLBACK_PATH = '/approvals/{machineId}/callbacks/approved/{token}';
const HOUR = 3_600_000;

let manifest: RouteManifest;
let document: JsonSchema;
let registration: RegistrationOptions;
const ajv = new Ajv2020({ strict: false });

type Operation = { responses: Record<string, JsonSchema>; requestBody?: JsonSchema };

/** The documented body schema of `status` of an operation, its shared response resolved. */
function bodySchema(operation: Operation, status: number): object {
  let response = operation.responses[String(status)];
  expect(response, `status ${status} is documented`).toBeDefined();
  const target = response!['$ref'];
  if (typeof target === 'string') {
    const name = target.slice(target.lastIndexOf('/') + 1);
    response = ((document['components'] as JsonSchema)['responses'] as JsonSchema)[
      name
    ] as JsonSchema;
  }
  const schema = ((response!['content'] as JsonSchema)['application/json'] as JsonSchema)['schema'];
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/', `"${SCHEMA_ID}#/components/`),
  ) as object;
}

function expectDocumented(operation: Operation, answer: JsonResponse): void {
  const valid = ajv.validate(bodySchema(operation, answer.status), answer.body);
  expect(valid, `${answer.status} ${JSON.stringify(answer.body)}: ${ajv.errorsText()}`).toBe(true);
}

const callbackOperation = () =>
  ((document['paths'] as JsonSchema)[CALLBACK_PATH] as JsonSchema)['post'] as unknown as Operation;
const webhookOperation = () =>
  ((document['webhooks'] as JsonSchema)['approval.webhook.stripe'] as JsonSchema)[
    'post'
  ] as unknown as Operation;

beforeAll(async () => {
  const checked = await checkProject({ config: CONFIG, cwd: ROOT });
  expect(checked.issues).toEqual([]);
  manifest = checked.manifest!;
  document = buildOpenApiDocument(manifest, OPTIONS);
  ajv.addSchema({ $id: SCHEMA_ID, components: document['components'] } as object);
  const { machine: _machine, ...options } = (
    await import('../../fixtures/generator/callbacks/machine-routes.config.js')
  ).default.registrations[0]! as RegistrationOptions & { machine: unknown };
  registration = options;
}, 60_000);

describe('callback URLs and webhooks in the generated contract', () => {
  it('should be a valid OpenAPI 3.1 document with the callback under paths and the webhook under webhooks', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    const paths = document['paths'] as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths[CALLBACK_PATH]!)).toEqual(['post']);
    expect(paths['/approvals/webhooks/stripe']).toBeUndefined();
    const callback = callbackOperation();
    expect(Object.keys(callback.responses)).toEqual(
      expect.arrayContaining(['200', '403', '409', '410', '422']),
    );
    expect(callback.requestBody).toMatchObject({
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ApprovalCallbackApprovedPayload' },
        },
      },
    });
    const webhook = webhookOperation() as unknown as JsonSchema;
    expect(webhook).toMatchObject({
      operationId: 'approval.webhook.stripe',
      parameters: [
        { name: 'stripe-signature', in: 'header', required: true },
        { name: 'x-delivery-id', in: 'header', required: false },
      ],
    });
    expect(Object.keys(webhookOperation().responses)).toEqual(
      expect.arrayContaining(['200', '401', '422']),
    );
  });

  it('should leave callback and webhook routes out of the client and the TanStack bindings', async () => {
    const files = await renderFiles(manifest, OPTIONS, ['client']);
    // The client and the TanStack bindings (their runtimes are copies of src/client).
    const generated = files.filter((file) => !file.path.includes('runtime'));
    expect(generated.length).toBe(2);
    for (const file of generated) {
      expect(file.contents).not.toMatch(
        /callbacks\/approved|webhooks\/stripe|callback\.approved|webhook\.stripe/,
      );
    }
    // The frontend's own routes are still there.
    const client = files.find((file) => file.path.endsWith('client.gen.ts'))!.contents;
    expect(client).toMatch(/\/approvals\/\{machineId\}\/approved/);
  });
});

describe.each(['fastify', 'express'] as AdapterName[])(
  'answers of a real server against the document (%s, SQLite file)',
  (adapter) => {
    let runtime: MachineRuntime;
    let server: TestServer;
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'mr-callbacks-contract-'));
      runtime = await MachineRuntime.open({
        databaseUrl: `sqlite:${join(dir, 'machines.db')}`,
        migrate: true,
        worker: false,
      });
      const router = new MachineRouter({ runtime, logger: { error: () => {} } });
      router.register(approvalMachine, registration);
      server = await startServer(adapter, [router], { error: () => {} });
    }, 60_000);
    afterAll(async () => {
      await server?.close();
      await runtime?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const pending = async (expiresAt: number) => {
      const created = await send(server.url, 'POST', '/approvals/create');
      const id = (created.body as { data: { id: string } }).data.id;
      const requested = await send(server.url, 'POST', `/approvals/${id}/request`, {
        body: { payload: { expiresAt } },
      });
      return (requested.body as { data: { output: { callbackUrl: string } } }).data.output
        .callbackUrl;
    };

    it('should answer callback requests as documented: 200, 422, 409 used, 403, 410', async () => {
      const path = await pending(Date.now() + HOUR);
      const answers = [
        await send(server.url, 'POST', path, { body: { approver: '' } }),
        await send(server.url, 'POST', path, { body: { approver: 'ann' } }),
        await send(server.url, 'POST', path, { body: { approver: 'ann' } }),
        await send(server.url, 'POST', `${path.slice(0, -2)}xx`, { body: { approver: 'ann' } }),
        await send(server.url, 'POST', await pending(Date.now() - 1000), {
          body: { approver: 'ann' },
        }),
        await send(server.url, 'POST', path, {
          raw: '{',
          headers: { 'content-type': 'application/json' },
        }),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([422, 200, 409, 403, 410, 400]);
      for (const answer of answers) expectDocumented(callbackOperation(), answer);
    });

    it('should answer webhook deliveries as documented: 200, replay, 401, 422', async () => {
      // One signing time for the whole test: the delivery id is made from it, and a redelivery
      // signed in the next second would otherwise be another delivery, not a replay.
      const now = Math.floor(Date.now() / 1000);
      const deliver = (raw: string, secret: string, t = now) =>
        send(server.url, 'POST', '/approvals/webhooks/stripe', {
          raw,
          headers: {
            'content-type': 'application/json',
            'x-delivery-id': `d-${raw.length}-${secret}-${t}`,
            'stripe-signature': `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex')}`,
          },
        });
      const body = (type: string, amount: unknown) =>
        JSON.stringify({
          type,
          data: { object: { amount, metadata: { orderNumber: `W-${adapter}` } } },
        });
      const paid = body('payment_intent.succeeded', 12);
      const answers = [
        await deliver(paid, 'whsec_contract'),
        await deliver(paid, 'whsec_contract'),
        await deliver(paid, 'whsec_wrong'),
        await deliver(paid, 'whsec_contract', 1),
        await deliver(body('customer.created', 1), 'whsec_contract'),
        await deliver(body('payment_intent.succeeded', 'twelve'), 'whsec_contract'),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 401, 401, 422, 422]);
      expect(answers[1]!.headers.get('idempotency-replayed')).toBe('true');
      for (const answer of answers) expectDocumented(webhookOperation(), answer);
    });
  },
);
