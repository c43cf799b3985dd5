/**
 * Event routes of the generated example over real HTTP against an instance an operator paused
 * (docs/operations.md "Pause and resume"): every event route answers the documented 409
 * `{ message }` naming the pause (code MR_INSTANCE_PAUSED), valid against the route's response in
 * the generated OpenAPI document, and nothing is logged as an unhandled error.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../../generated-example/app.gen.js';

type Json = Record<string, unknown>;

const document = JSON.parse(
  readFileSync(
    path.resolve(import.meta.dirname, '../../../generated-example/openapi.json'),
    'utf8',
  ),
) as { paths: Record<string, Record<string, Json>>; components: Json };
const SCHEMA_ID = 'https://machine-routes.test/paused-openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: SCHEMA_ID, components: document.components } as object);

/** The schema the document gives `status` of `method path`, its refs made absolute. */
function responseSchema(pathTemplate: string, method: string, status: number): object {
  const operation = document.paths[pathTemplate]?.[method];
  const response = (operation?.['responses'] as Record<string, Json> | undefined)?.[String(status)];
  expect(response, `${method} ${pathTemplate} documents ${status}`).toBeDefined();
  const content = response!['content'] as Record<string, Json>;
  const schema = content['application/json']!['schema'] as Json;
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/', `"${SCHEMA_ID}#/components/`),
  ) as object;
}

describe('an event sent over HTTP to a paused instance', () => {
  let app: App;
  let base: string;
  let directory: string;
  const logged: string[] = [];

  beforeAll(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-paused-'));
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged.push(chunk.toString());
        done();
      },
    });
    app = await buildApp({
      databaseUrl: `sqlite:${path.join(directory, 'paused.db')}`,
      logger: { level: 'error', stream },
    });
    base = await app.listen(0);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  async function pausedOrder(): Promise<string> {
    const created = (await (await fetch(`${base}/orders/create`, { method: 'POST' })).json()) as {
      data: { id: string };
    };
    const id = created.data.id;
    const submitted = await fetch(`${base}/orders/${id}/submit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { amount: 2500 } }),
    });
    expect(submitted.status).toBe(200);
    const paused = await fetch(`${base}/admin/api/machines/order/instances/${id}/pause`, {
      method: 'POST',
      headers: { authorization: 'Bearer operator-token', 'content-type': 'application/json' },
      body: JSON.stringify({ who: 'alice' }),
    });
    expect(paused.status).toBe(200);
    return id;
  }

  it('should answer 409 { message } as the document says, not an unhandled 500', async () => {
    const id = await pausedOrder();
    const sends = [
      {
        method: 'get',
        template: '/orders/{machineId}/quote',
        url: `/orders/${id}/quote?quantity=2`,
      },
      { method: 'delete', template: '/orders/{machineId}/cancel', url: `/orders/${id}/cancel` },
    ];
    for (const send of sends) {
      const response = await fetch(`${base}${send.url}`, { method: send.method.toUpperCase() });
      const body = (await response.json()) as Json;
      expect([send.url, response.status]).toEqual([send.url, 409]);
      expect(body['message']).toMatch(/paused/);
      const validate = ajv.compile(responseSchema(send.template, send.method, 409));
      expect(validate(body), ajv.errorsText(validate.errors)).toBe(true);
    }
    expect(logged).toEqual([]);

    // Resumed, the same event goes through.
    const resumed = await fetch(`${base}/admin/api/machines/order/instances/${id}/resume`, {
      method: 'POST',
      headers: { authorization: 'Bearer operator-token' },
    });
    expect(resumed.status).toBe(200);
    expect((await fetch(`${base}/orders/${id}/cancel`, { method: 'DELETE' })).status).toBe(200);
  });
});
