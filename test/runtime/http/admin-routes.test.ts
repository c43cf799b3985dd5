/**
 * The admin route group of the generated example (config `admin`) over real HTTP, on a SQLite
 * file and on PostgreSQL: every admin operation's success and error answers, each checked
 * against the generated OpenAPI document (status documented, body valid against its schema), the
 * repairs recorded as an operator's, and every admin route refused by the example's `operator`
 * middleware without its token.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../../generated-example/app.gen.js';
import { defaultJobSchema } from '../../../src/runtime/jobs/open-job-queue.js';
import { migrate } from '../../../src/runtime/persistence/open-store.js';
import {
  createTestSchema,
  dropSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
type Json = Record<string, unknown>;

const document = JSON.parse(
  readFileSync(
    path.resolve(import.meta.dirname, '../../../generated-example/openapi.json'),
    'utf8',
  ),
) as { paths: Record<string, Record<string, Json>>; components: Json };
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const SCHEMA_ID = 'https://machine-routes.test/admin-openapi.json';
ajv.addSchema({ $id: SCHEMA_ID, components: document.components } as object);

/** The admin operations of the document, by operationId. */
const adminOperations = new Map(
  Object.entries(document.paths).flatMap(([route, item]) =>
    Object.entries(item)
      .filter(([, op]) => JSON.stringify(op['tags']) === '["admin"]')
      .map(([method, op]) => [String(op['operationId']), { route, method, op }] as const),
  ),
);

function absoluteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(absoluteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' ? `${SCHEMA_ID}${inner}` : absoluteRefs(inner),
    ]),
  );
}

interface Answer {
  status: number;
  headers: Headers;
  body: Json;
  /** A stream's first message, its fields (`id`, `event`, `data`) as sent. */
  event?: Record<string, string>;
}

/** Problems of an answer of `operationId` against the document. */
function conformance(operationId: string, answer: Answer): string[] {
  const operation = adminOperations.get(operationId);
  if (operation === undefined) return [`${operationId} is not in the document`];
  const response = (operation.op['responses'] as Record<string, Json>)[String(answer.status)];
  if (response === undefined) return [`${operationId}: status ${answer.status} is not documented`];
  const content = response['content'] as Record<string, Json>;
  const stream = content['text/event-stream'];
  const schema =
    stream === undefined ? content['application/json']!['schema'] : stream['x-data-schema'];
  const validate = ajv.compile(absoluteRefs(schema) as object);
  const problems = validate(answer.body)
    ? []
    : [
        `${operationId} ${answer.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(answer.body).slice(0, 300)}`,
      ];
  if (stream !== undefined) {
    // The stream is typed as the sequence of its messages: the first one, field by field, and
    // its data's contentSchema is the data schema checked above.
    const items = (stream['schema'] as Json)['items'] as Json;
    const message = ajv.compile(absoluteRefs(items) as object);
    if (!message(answer.event))
      problems.push(`${operationId} message: ${ajv.errorsText(message.errors)}`);
    const name = String(items['$ref']).replace('#/components/schemas/', '');
    const fields = ((document.components['schemas'] as Json)[name] as Json)['properties'] as Json;
    const content = (fields['data'] as Json)['contentSchema'];
    if (JSON.stringify(content) !== JSON.stringify(stream['x-data-schema']))
      problems.push(`${operationId}: message data's contentSchema is not the data schema`);
  }
  return problems;
}

const pgRun = await shouldRunPostgresTests('test/runtime/http/admin-routes.test.ts');
const TOKEN = { authorization: 'Bearer operator-token' };

describe.each([
  { store: 'SQLite file', run: true },
  { store: 'PostgreSQL', run: pgRun },
])('admin routes of the example on $store', ({ store, run }) => {
  let app: App;
  let base: string;
  let directory: string | undefined;
  let schema: TestSchema | undefined;
  const problems: string[] = [];

  beforeAll(async () => {
    if (!run) return;
    let databaseUrl: string;
    if (store === 'PostgreSQL') {
      schema = await createTestSchema('admin_routes');
      databaseUrl = schema.url;
      await migrate(databaseUrl);
    } else {
      directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-admin-'));
      databaseUrl = `sqlite:${path.join(directory, 'admin.db')}`;
    }
    app = await buildApp({ databaseUrl });
    base = await app.listen(0);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    if (schema !== undefined) {
      await schema.drop();
      await dropSchema(defaultJobSchema(schema.schema));
    }
  });

  /** One admin request, its answer checked against the document. */
  async function admin(
    operationId: string,
    url: string,
    options: { method?: string; body?: unknown; raw?: string; type?: string; headers?: Json } = {},
  ): Promise<Answer> {
    const method =
      options.method ?? (options.body !== undefined || options.raw !== undefined ? 'POST' : 'GET');
    const response = await fetch(`${base}/admin/api/machines${url}`, {
      method,
      headers: {
        ...TOKEN,
        ...(options.body !== undefined || options.raw !== undefined
          ? { 'content-type': options.type ?? 'application/json' }
          : {}),
        ...(options.headers as Record<string, string> | undefined),
      },
      ...(options.raw !== undefined
        ? { body: options.raw }
        : options.body !== undefined
          ? { body: JSON.stringify(options.body) }
          : {}),
    });
    let body: Json;
    let event: Record<string, string> | undefined;
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      const reader = response.body!.getReader();
      let text = '';
      while (!/^data: .*\n\n/m.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      await reader.cancel();
      // The first block with data: its `field: value` lines.
      const block = text.split('\n\n').find((lines) => /^data: /m.test(lines))!;
      event = Object.fromEntries(
        block
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
      );
      body = JSON.parse(event['data']!) as Json;
    } else {
      body = (await response.json()) as Json;
    }
    const answer = {
      status: response.status,
      headers: response.headers,
      body,
      ...(event === undefined ? {} : { event }),
    };
    problems.push(...conformance(operationId, answer));
    return answer;
  }

  async function submittedOrder(): Promise<string> {
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
    return id;
  }

  it.runIf(run)('should list machines and instances by state, key and cursor', async () => {
    const machines = await admin('admin.machines', '');
    expect(machines.status).toBe(200);
    const order = (machines.body['machines'] as Json[]).find(
      (machine) => machine['id'] === 'order',
    );
    expect(order).toMatchObject({
      cancelEvent: 'CANCEL',
      events: expect.arrayContaining(['SUBMIT', 'CANCEL']),
    });

    const ids = [await submittedOrder(), await submittedOrder(), await submittedOrder()];
    const first = await admin('admin.list', '/order/instances?state=submitted&limit=2');
    expect(first.status).toBe(200);
    const second = await admin(
      'admin.list',
      `/order/instances?state=submitted&limit=2&cursor=${encodeURIComponent(String(first.body['nextCursor']))}`,
    );
    const listed = [...(first.body['items'] as Json[]), ...(second.body['items'] as Json[])];
    expect(listed.map((item) => item['id'])).toEqual(ids);
    expect(second.body['nextCursor']).toBeNull();
    const done = await admin('admin.list', '/order/instances?status=done');
    expect(done.body['items']).toEqual([]);

    // A model-bound route records the business key: the invoice of INV-1.
    const paid = await fetch(`${base}/invoices/INV-1/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { amount: 120, method: 'card' } }),
    });
    expect(paid.status).toBe(200);
    const byKey = await admin('admin.list', '/invoice/instances?key=INV-1');
    expect((byKey.body['items'] as Json[]).map((item) => item['businessKey'])).toEqual(['INV-1']);

    for (const query of [
      'state=shipped',
      'limit=abc',
      'limit=0',
      'cursor=garbage',
      'status=maybe',
      'state[a]=b',
      'createdFrom=yesterday',
    ]) {
      const refused = await admin('admin.list', `/order/instances?${query}`);
      expect([refused.status, query]).toEqual([400, query]);
    }
    expect((await admin('admin.list', '/nope/instances')).status).toBe(404);
    expect((await admin('admin.list', '/order/instances?x=%ZZ')).status).toBe(400);
  });

  it.runIf(run)('should show an instance, its timeline and its live states', async () => {
    const id = await submittedOrder();
    const shown = await admin('admin.show', `/order/instances/${id}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      instance: { id, value: ['order.submitted'], status: 'active' },
      lock: null,
      timers: [{ eventType: 'EXPIRE', registered: true }],
    });
    const history = await admin(
      'admin.history',
      `/order/instances/${id}/history?order=desc&limit=2`,
    );
    expect((history.body['items'] as Json[]).map((item) => item['sequence'])).toEqual([
      shown.body['instance'] && (shown.body['instance'] as Json)['sequence'],
      Number((shown.body['instance'] as Json)['sequence']) - 1,
    ]);
    const older = await admin(
      'admin.history',
      `/order/instances/${id}/history?order=desc&limit=2&cursor=${encodeURIComponent(String(history.body['nextCursor']))}`,
    );
    expect(older.status).toBe(200);
    expect(
      (await admin('admin.history', `/order/instances/${id}/history?order=sideways`)).status,
    ).toBe(400);
    const stream = await admin('admin.stream', `/order/instances/${id}/stream`);
    expect(stream.body).toMatchObject({ id, state: ['order.submitted'], status: 'active' });
    expect(stream.event).toMatchObject({ id: String(stream.body['sequence']), event: 'state' });
    for (const operationId of ['admin.show', 'admin.history', 'admin.stream']) {
      const suffix = { 'admin.show': '', 'admin.history': '/history', 'admin.stream': '/stream' }[
        operationId
      ];
      expect(
        (await admin(operationId, `/order/instances/01ARZ3NDEKTSV4RRFFQ69G5FAV${suffix}`)).status,
      ).toBe(404);
      expect((await admin(operationId, `/nope/instances/${id}${suffix}`)).status).toBe(404);
    }
  });

  it.runIf(run)('should resume the admin stream after Last-Event-ID', async () => {
    const id = await submittedOrder();
    const cancelled = await fetch(`${base}/orders/${id}/cancel`, { method: 'DELETE' });
    expect(cancelled.status).toBe(200);
    const last = await admin('admin.stream', `/order/instances/${id}/stream`);
    expect(last.body).toMatchObject({ state: ['order.cancelled'], status: 'done' });
    const sequence = Number(last.body['sequence']);
    /** The whole stream, which a final state ends: its `data` lines. */
    const dataAfter = async (lastEventId: number): Promise<string[]> => {
      const response = await fetch(`${base}/admin/api/machines/order/instances/${id}/stream`, {
        headers: { ...TOKEN, 'last-event-id': String(lastEventId) },
      });
      expect(response.status).toBe(200);
      return [...(await response.text()).matchAll(/^data: (.*)$/gm)].map((match) => match[1]!);
    };
    // The client has the final state already: the stream ends at once, empty.
    expect(await dataAfter(sequence)).toEqual([]);
    // One behind: the final state, then the end.
    const behind = await dataAfter(sequence - 1);
    expect(behind.map((data) => JSON.parse(data) as Json)).toEqual([last.body]);
  });

  it.runIf(run)('should repair through the locked step, recorded as the operator', async () => {
    const id = await submittedOrder();
    const at = `/order/instances/${id}`;
    const paused = await admin('admin.pause', `${at}/pause`, { body: { who: 'alice' } });
    expect(paused.body).toMatchObject({ action: 'pause', result: { changed: true } });
    const refused = await admin('admin.send', `${at}/send`, {
      body: { type: 'QUOTE', payload: { quantity: 2 } },
    });
    expect([refused.status, refused.body['code']]).toEqual([409, 'MR_INSTANCE_PAUSED']);
    expect((await admin('admin.resume', `${at}/resume`, { body: {} })).status).toBe(200);
    const quoted = await admin('admin.send', `${at}/send`, {
      body: { type: 'QUOTE', payload: { quantity: 2 }, who: 'bob' },
    });
    expect(quoted.body).toMatchObject({ action: 'send', result: { state: ['order.submitted'] } });
    expect(
      (
        await admin('admin.send', `${at}/send`, {
          body: { type: 'QUOTE', payload: { quantity: 'x' } },
        })
      ).status,
    ).toBe(422);
    expect((await admin('admin.send', `${at}/send`, { body: { payload: {} } })).status).toBe(400);

    // Release: nothing to free; a live holder's lock is refused.
    const released = await admin('admin.release', `${at}/release`, { raw: '' });
    expect(released.body).toMatchObject({ result: { released: null } });
    const held = await app.runtime.withLock(id, () =>
      admin('admin.release', `${at}/release`, { body: { who: 'alice' } }),
    );
    expect(held.status).toBe(409);
    expect((await admin('admin.retry', `${at}/retry`, { body: {} })).status).toBe(400);

    // Fire the EXPIRE timer now: the order expires through the timer's own path.
    const fired = await admin('admin.fire', `${at}/fire`, { body: { who: 'carol' } });
    expect(fired.body).toMatchObject({
      action: 'fire',
      instance: { instance: { value: ['order.expired'] } },
    });

    const other = await submittedOrder();
    const cancelled = await admin('admin.cancel', `/order/instances/${other}/cancel`, {
      body: { who: 'alice' },
    });
    expect(cancelled.body).toMatchObject({
      result: { state: ['order.cancelled'], status: 'done' },
    });
    expect(
      (await admin('admin.cancel', `/order/instances/${other}/cancel`, { body: {} })).status,
    ).toBe(409);
    const timeline = await admin(
      'admin.history',
      `/order/instances/${other}/history?order=desc&limit=1&source=external`,
    );
    expect(timeline.body['items']).toMatchObject([{ type: 'CANCEL', actor: 'operator:alice' }]);
    const steps = await admin(
      'admin.history',
      `${at}/history?source=internal&order=desc&limit=200`,
    );
    const operatorSteps = (steps.body['items'] as Json[])
      .filter((record) => String(record['type']).startsWith('@operator.'))
      .map((record) => [record['type'], record['actor']]);
    expect(operatorSteps).toEqual(
      expect.arrayContaining([
        ['@operator.pause', 'operator:alice'],
        ['@operator.resume', 'operator:admin'],
        ['@operator.fire', 'operator:carol'],
      ]),
    );

    // Bodies the group cannot read, and a machine without a cancel event.
    const calculator = (await (
      await fetch(`${base}/calculator/add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { a: 1, b: 1 } }),
      })
    ).json()) as { data: { id: string } };
    expect(calculator.data.id).toBeTypeOf('string');
    const fresh = await submittedOrder();
    const cancel = `/order/instances/${fresh}/cancel`;
    expect(
      (await admin('admin.cancel', cancel, { raw: '{"who":', type: 'application/json' })).status,
    ).toBe(400);
    expect(
      (await admin('admin.cancel', cancel, { raw: '[1]', type: 'application/json' })).status,
    ).toBe(400);
    expect((await admin('admin.cancel', cancel, { raw: 'who=x', type: 'text/plain' })).status).toBe(
      415,
    );
    expect(
      (
        await admin('admin.cancel', cancel, {
          raw: JSON.stringify({ who: 'x'.repeat(1024 * 1024 + 16) }),
        })
      ).status,
    ).toBe(413);
    expect((await admin('admin.cancel', cancel, { body: { who: '' } })).status).toBe(400);
    expect(
      (
        await admin('admin.cancel', `/order/instances/01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel`, {
          body: {},
        })
      ).status,
    ).toBe(404);
  });

  it.runIf(run)('should refuse every admin route without the operator token', async () => {
    const id = await submittedOrder();
    const routes = [...adminOperations.values()].map(({ route, method }) => ({
      method: method.toUpperCase(),
      url: route.replace('{machine}', 'order').replace('{id}', id),
    }));
    routes.push(
      { method: 'GET', url: '/admin/console' },
      { method: 'GET', url: '/admin/console/diagram/order' },
    );
    expect(routes.length).toBe(adminOperations.size + 2);
    const refusedHeaders: Record<string, string>[] = [
      {},
      { authorization: 'Bearer staff-token' },
      { authorization: 'Basic b3A6d3Jvbmc=' },
    ];
    for (const headers of refusedHeaders) {
      for (const { method, url } of routes) {
        const response = await fetch(`${base}${url}`, {
          method,
          headers: {
            ...headers,
            ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
          },
          ...(method === 'POST' ? { body: '{}' } : {}),
        });
        expect([method, url, response.status]).toEqual([method, url, 401]);
        expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
      }
    }
    // Nothing was done: the order is as it was.
    expect((await admin('admin.show', `/order/instances/${id}`)).body).toMatchObject({
      instance: { value: ['order.submitted'], pausedAt: null },
    });
  });

  it.runIf(run)('should have answered only documented statuses with valid bodies', () => {
    expect(problems).toEqual([]);
  });
});
