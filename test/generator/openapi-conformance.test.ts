/**
 * Conformance of the generated example to its own OpenAPI document: the generated Fastify app
 * listens on a real port (temp SQLite file), and for every operation of
 * generated-example/openapi.json real requests provoke the success path and every error path
 * that can be provoked (spec: "Errors", "Endpoints", docs/http.md "Bad input"). Every response
 * must have a status the operation documents, a JSON content type, and a whole body valid
 * against the documented schema (OpenAPI 3.1 schemas are JSON Schema 2020-12).
 *
 * The cases are derived from the document: a new operation without a recipe fails here.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../../src/runtime/index.js';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import { invoiceMachine } from '../../fixtures/example/machines/invoice.js';

// ajv-formats is CommonJS: its default export is the function under ESM interop.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface OpenApiDocument {
  paths: Record<string, Record<string, JsonObject>>;
  components: { schemas: JsonObject; responses: Record<string, JsonObject> };
}

const documentPath = path.resolve(import.meta.dirname, '../../generated-example/openapi.json');
const document = JSON.parse(readFileSync(documentPath, 'utf8')) as OpenApiDocument;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Operation {
  operationId: string;
  method: string;
  path: string;
  operation: JsonObject;
}

const operations: Operation[] = Object.entries(document.paths).flatMap(([route, item]) =>
  Object.entries(item)
    .filter(([method]) => HTTP_METHODS.includes(method))
    // The admin group's operations (tag `admin`) are not machine routes: their requests are
    // made, and their answers checked against this document, by test/runtime/http/admin-routes.
    .filter(([, operation]) => !JSON.stringify(operation['tags']).includes('"admin"'))
    .map(([method, operation]) => ({
      operationId: String(operation['operationId']),
      method: method.toUpperCase(),
      path: route,
      operation,
    })),
);

// ---------------------------------------------------------------------------------------------
// Schemas

const SCHEMA_ID = 'https://machine-routes.test/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
// The components as one schema resource: `#/components/schemas/X` resolves inside it.
ajv.addSchema({ $id: SCHEMA_ID, components: document.components } as object);

/** `#/components/...` references made absolute, so an inline schema can be compiled alone. */
function absoluteRefs(value: Json): Json {
  if (Array.isArray(value)) return value.map(absoluteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#')
        ? `${SCHEMA_ID}${inner}`
        : absoluteRefs(inner),
    ]),
  );
}

/** The Response Object of `status`, its `$ref` to components/responses followed. */
function documentedResponse(operation: JsonObject, status: number): JsonObject | undefined {
  const responses = operation['responses'] as Record<string, JsonObject>;
  let response = responses[String(status)];
  if (response === undefined) return undefined;
  const ref = response['$ref'];
  if (typeof ref === 'string') {
    const name = /^#\/components\/responses\/(.+)$/.exec(ref)?.[1];
    response = name === undefined ? undefined : document.components.responses[name];
    if (response === undefined) throw new Error(`Unresolvable response reference ${ref}`);
  }
  return response;
}

const validators = new Map<string, ReturnType<Ajv2020['compile']>>();
function validatorOf(operationId: string, status: number, schema: Json) {
  const key = `${operationId} ${status}`;
  let validate = validators.get(key);
  if (validate === undefined) {
    validate = ajv.compile(absoluteRefs(schema) as object);
    validators.set(key, validate);
  }
  return validate;
}

/** The problems of a stream's first message against the message schema its operation documents. */
function streamMessageProblems(
  operation: Operation,
  response: Received,
  stream: JsonObject,
  items: JsonObject,
): string[] {
  const problems: string[] = [];
  const message = validatorOf(`${operation.operationId} event`, response.status, items);
  if (!message(response.event ?? {})) {
    problems.push(
      `event ${JSON.stringify(response.event)} does not match the documented message: ${ajv.errorsText(message.errors)}`,
    );
  }
  const name = /([^/]+)$/.exec(String(items['$ref'] ?? ''))?.[1] ?? '';
  const fields = (document.components.schemas[name] as JsonObject | undefined)?.['properties'] as
    JsonObject | undefined;
  const content = (fields?.['data'] as JsonObject | undefined)?.['contentSchema'];
  if (JSON.stringify(content) !== JSON.stringify(stream['x-data-schema'])) {
    problems.push(`message data's contentSchema ${JSON.stringify(content)} is not the envelope`);
  }
  return problems;
}

/** The problems of one response against the operation's documentation; empty when conformant. */
function conformance(operation: Operation, response: Received): string[] {
  const problems: string[] = [];
  const documented = documentedResponse(operation.operation, response.status);
  if (documented === undefined) {
    return [`status ${response.status} is not documented (body ${response.text})`];
  }
  const content = documented['content'] as Record<string, JsonObject> | undefined;
  const stream = content?.['text/event-stream'];
  if (stream !== undefined) {
    if (!response.contentType.startsWith('text/event-stream')) {
      problems.push(`content-type '${response.contentType}' is not text/event-stream`);
    }
    const validate = validatorOf(operation.operationId, response.status, stream['x-data-schema']!);
    if (!validate(response.json)) {
      problems.push(
        `event data ${response.text} does not match: ${ajv.errorsText(validate.errors)}`,
      );
    }
    // The document types each message of a route's stream (its `items`): id, event and data,
    // data's JSON by its contentSchema, which must be the envelope validated above.
    const items = (stream['schema'] as JsonObject | undefined)?.['items'] as JsonObject | undefined;
    if (items !== undefined)
      problems.push(...streamMessageProblems(operation, response, stream, items));
    return problems;
  }
  const schema = content?.['application/json']?.['schema'];
  if (schema === undefined) {
    if (response.text !== '') problems.push(`undocumented body ${response.text}`);
    return problems;
  }
  if (!/^application\/json(;|$)/.test(response.contentType)) {
    problems.push(`content-type '${response.contentType}' is not application/json`);
  }
  if (response.json === undefined) {
    problems.push(`body is not JSON: ${response.text}`);
    return problems;
  }
  const validate = validatorOf(operation.operationId, response.status, schema);
  if (!validate(response.json)) {
    problems.push(
      `body ${response.text} does not match the ${response.status} schema: ${ajv.errorsText(validate.errors)}`,
    );
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface Received {
  status: number;
  headers: Headers;
  contentType: string;
  text: string;
  json: Json | undefined;
  /** A state stream's first server-sent event, its fields as sent (`data` as text). */
  event?: Record<string, string>;
}

interface Outgoing {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** A raw body, sent as is. */
  body?: string;
}

let app: App;
let baseUrl: string;
let directory: string;

async function send(request: Outgoing): Promise<Received> {
  const response = await fetch(`${baseUrl}${request.url}`, {
    method: request.method,
    headers: request.headers ?? {},
    // Bytes, so that fetch adds no content-type of its own (a string would be text/plain).
    ...(request.body === undefined ? {} : { body: new TextEncoder().encode(request.body) }),
  });
  const contentType = response.headers.get('content-type') ?? '';
  // A state stream never ends on its own: its first message stands for the body.
  const event = contentType.startsWith('text/event-stream')
    ? await firstEvent(response)
    : undefined;
  const text = event === undefined ? await response.text() : (event['data'] ?? '');
  let json: Json | undefined;
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = undefined;
  }
  return {
    status: response.status,
    headers: response.headers,
    contentType: response.headers.get('content-type') ?? '',
    text,
    json,
    ...(event === undefined ? {} : { event }),
  };
}

/** The fields of the first server-sent event of a stream, which is then closed. */
async function firstEvent(response: Response): Promise<Record<string, string>> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return {};
      buffer += decoder.decode(value, { stream: true });
      const data = /^data: (.*)$/m.exec(buffer);
      if (data === null || !buffer.includes('\n\n', data.index)) continue;
      const block = buffer.slice(0, buffer.indexOf('\n\n', data.index));
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        const match = /^(\w+): (.*)$/.exec(line);
        if (match !== null) fields[match[1]!] = match[2]!;
      }
      return fields;
    }
  } finally {
    await reader.cancel();
  }
}

const jsonHeaders = { 'content-type': 'application/json' };

/** A JSON request to an operation-shaped URL (setup steps; must succeed). */
async function post(method: string, url: string, body?: JsonObject): Promise<JsonObject> {
  const response = await send({
    method,
    url,
    ...(body === undefined ? {} : { headers: jsonHeaders, body: JSON.stringify(body) }),
  });
  if (response.status >= 300) {
    throw new Error(`setup ${method} ${url} answered ${response.status}: ${response.text}`);
  }
  return response.json as JsonObject;
}

async function create(prefix: string): Promise<string> {
  const created = await post('POST', `/${prefix}/create`);
  return String((created['data'] as JsonObject)['id']);
}

const STAFF = { authorization: 'Bearer staff-token' };
const CUSTOMER = { authorization: 'Bearer customer-token' };

async function staffSend(url: string, body?: JsonObject): Promise<void> {
  const response = await send({
    method: 'POST',
    url,
    headers: { ...STAFF, ...(body === undefined ? {} : jsonHeaders) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (response.status !== 200) throw new Error(`setup ${url} answered ${response.status}`);
}

async function childRunning(machineId: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const statuses = (await app.runtime.children(machineId)).map((row) => row.status);
      expect(statuses).toContain('running');
    },
    { timeout: 15_000, interval: 20 },
  );
}

let invoiceCounter = 0;
/** A fresh invoice row (the model of `invoice.*`), its machine not created yet. */
function newInvoice(): string {
  invoiceCounter += 1;
  const number = `INV-T${invoiceCounter}`;
  (app.runtime.store as SqliteStore).database
    .prepare('INSERT INTO invoices (number, customer) VALUES (?, ?)')
    .run(number, 'Test');
  return number;
}
/**
 * A new invoice whose machine exists already: a record gets its machine from its first valid
 * request only, and the lock cases need the machine id before sending anything.
 */
async function boundInvoice(): Promise<string> {
  const number = newInvoice();
  const { snapshot } = await app.runtime.create(invoiceMachine);
  (app.runtime.store as SqliteStore).database
    .prepare('UPDATE invoices SET machine_id = ? WHERE number = ?')
    .run(snapshot.id, number);
  return number;
}
function invoiceMachineId(number: string): string {
  const row = (app.runtime.store as SqliteStore).database
    .prepare('SELECT machine_id FROM invoices WHERE number = ?')
    .get(number) as { machine_id: string | null } | undefined;
  if (!row?.machine_id) throw new Error(`invoice ${number} has no machine yet`);
  return row.machine_id;
}

// ---------------------------------------------------------------------------------------------
// Recipes: how to bring an instance to the states each operation needs

type Params = Record<string, string>;

interface Recipe {
  /** Path parameters of an instance that accepts the event. */
  ready(): Promise<Params>;
  /** A valid payload (body `payload`, or the query of a GET). */
  payload?: JsonObject;
  /** Payloads the event's schema rejects (422). */
  invalidPayloads?: JsonObject[];
  /** Path parameters of an instance whose current state does not accept the event (409). */
  conflicts?: Record<string, () => Promise<Params>>;
  /** Path parameters of an instance on which a validation guard rejects the event (422). */
  guardFails?: () => Promise<Params>;
  /** The machine id to lock for contention (423, or 200 for GET); none for stateless routes. */
  lockOf?: (params: Params) => string;
  /** Credentials that the operation's security requirement accepts. */
  auth?: Record<string, string>;
}

const byMachineId = (params: Params): string => params['machineId']!;

const recipes: Record<string, Recipe> = {
  'calculator.add': {
    ready: async () => ({}),
    payload: { a: 2, b: 3 },
    invalidPayloads: [{ a: 'two', b: 3 }, { a: 1 }, {}],
  },
  'calculator.multiply': {
    ready: async () => ({}),
    payload: { a: 2, b: 3 },
    invalidPayloads: [{ a: 2, b: null }],
  },
  'checkout.create': { ready: async () => ({}) },
  'checkout.cancel': {
    ready: async () => ({ machineId: await create('checkouts') }),
    conflicts: {
      'already cancelled': async () => {
        const machineId = await create('checkouts');
        await post('POST', `/checkouts/${machineId}/cancel`);
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'checkout.provide_card': {
    ready: async () => {
      const machineId = await create('checkouts');
      await childRunning(machineId);
      return { machineId };
    },
    payload: { card: '4111111111111111' },
    invalidPayloads: [{ card: '12' }, { card: 4111111111111111 }, {}],
    conflicts: {
      'no running child (cancelled)': async () => {
        const machineId = await create('checkouts');
        await post('POST', `/checkouts/${machineId}/cancel`);
        return { machineId };
      },
      'child already past the event': async () => {
        const machineId = await create('checkouts');
        await childRunning(machineId);
        await post('POST', `/checkouts/${machineId}/provide-card`, {
          payload: { card: '4111111111111111' },
        });
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'checkout.cancel_payment': {
    ready: async () => {
      const machineId = await create('checkouts');
      await childRunning(machineId);
      return { machineId };
    },
    conflicts: {
      'no running child (cancelled)': async () => {
        const machineId = await create('checkouts');
        await post('POST', `/checkouts/${machineId}/cancel`);
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'checkout.confirm_payment': {
    ready: async () => {
      const machineId = await create('checkouts');
      await childRunning(machineId);
      await post('POST', `/checkouts/${machineId}/provide-card`, {
        payload: { card: '4111111111111111' },
      });
      return { machineId };
    },
    conflicts: {
      'child has no card yet': async () => {
        const machineId = await create('checkouts');
        await childRunning(machineId);
        return { machineId };
      },
      'no running child (cancelled)': async () => {
        const machineId = await create('checkouts');
        await post('POST', `/checkouts/${machineId}/cancel`);
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'fulfillment.create': { ready: async () => ({}) },
  'fulfillment.capture': {
    ready: async () => ({ machineId: await create('fulfillments') }),
    conflicts: {
      'already captured': async () => {
        const machineId = await create('fulfillments');
        await post('POST', `/fulfillments/${machineId}/capture`);
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'fulfillment.pack': {
    ready: async () => ({ machineId: await create('fulfillments') }),
    conflicts: {
      'already packed': async () => {
        const machineId = await create('fulfillments');
        await post('POST', `/fulfillments/${machineId}/pack`);
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'invoice.pay': {
    ready: async () => ({ invoice: await boundInvoice() }),
    payload: { amount: 120, method: 'card' },
    invalidPayloads: [{ amount: 0, method: 'card' }, { amount: 5, method: 'cash' }, {}],
    conflicts: {
      'already paid': async () => {
        const invoice = newInvoice();
        await post('POST', `/invoices/${invoice}/pay`, {
          payload: { amount: 1, method: 'transfer' },
        });
        return { invoice };
      },
    },
    lockOf: (params) => invoiceMachineId(params['invoice']!),
  },
  'invoice.void': {
    ready: async () => ({ invoice: await boundInvoice() }),
    conflicts: {
      'already voided': async () => {
        const invoice = newInvoice();
        await post('POST', `/invoices/${invoice}/void`);
        return { invoice };
      },
    },
    lockOf: (params) => invoiceMachineId(params['invoice']!),
  },
  'invoice.read.status': {
    // A read never creates the machine of a record: bind one first (VOID creates and sends).
    ready: async () => {
      const invoice = newInvoice();
      await post('POST', `/invoices/${invoice}/void`);
      return { invoice };
    },
    invalidPayloads: [{ timeout: '5' }],
    lockOf: (params) => invoiceMachineId(params['invoice']!),
  },
  'order.read.status': {
    ready: async () => ({ machineId: await create('orders') }),
    // A waiting read: already in the state, so answered at once.
    payload: { waitFor: 'order.draft', timeout: '1000' },
    invalidPayloads: [{ waitFor: 'nowhere' }, { waitFor: 'order.draft', timeout: '60001' }],
    lockOf: byMachineId,
  },
  'order.events': {
    ready: async () => ({ machineId: await create('orders') }),
    lockOf: byMachineId,
  },
  'order.read.summary': {
    ready: async () => ({ machineId: await create('orders') }),
    invalidPayloads: [{ waitFor: 'order.approved', timeout: 'soon' }],
    lockOf: byMachineId,
  },
  'order.create': { ready: async () => ({}) },
  'order.submit': {
    ready: async () => ({ machineId: await create('orders') }),
    payload: { amount: 500, note: 'gift' },
    invalidPayloads: [{ amount: 0 }, { amount: 1.5 }, { amount: 5, note: 'x'.repeat(201) }, {}],
    conflicts: {
      'already submitted': async () => {
        const machineId = await create('orders');
        await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 5 } });
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'order.quote': {
    ready: async () => ({ machineId: await create('orders') }),
    payload: { quantity: '3' },
    invalidPayloads: [{ quantity: '0' }, { quantity: 'many' }, {}],
    conflicts: {
      cancelled: async () => {
        const machineId = await create('orders');
        await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 5 } });
        await post('DELETE', `/orders/${machineId}/cancel`);
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'order.approve': {
    ready: async () => {
      const machineId = await create('orders');
      await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 500 } });
      return { machineId };
    },
    conflicts: { draft: async () => ({ machineId: await create('orders') }) },
    guardFails: async () => {
      const machineId = await create('orders');
      await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 20_000 } });
      return { machineId };
    },
    lockOf: byMachineId,
  },
  'order.cancel': {
    ready: async () => {
      const machineId = await create('orders');
      await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 700 } });
      return { machineId };
    },
    conflicts: { draft: async () => ({ machineId: await create('orders') }) },
    lockOf: byMachineId,
  },
  // The review registration (explainAvailableEvents): answers validated against the explained
  // entry schema, with a reason (over the limit) and without.
  'order_review.approve': {
    ready: async () => {
      const machineId = await create('orders');
      await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 500 } });
      return { machineId };
    },
    conflicts: { draft: async () => ({ machineId: await create('orders') }) },
    guardFails: async () => {
      const machineId = await create('orders');
      await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 20_000 } });
      return { machineId };
    },
    lockOf: byMachineId,
  },
  'order_review.read.status': {
    ready: async () => {
      const machineId = await create('orders');
      await post('POST', `/orders/${machineId}/submit`, { payload: { amount: 20_000 } });
      return { machineId };
    },
    payload: { waitFor: 'order.submitted', timeout: '1000' },
    invalidPayloads: [{ waitFor: 'nowhere' }],
    lockOf: byMachineId,
  },
  'ticket.create': { ready: async () => ({}) },
  'ticket.comment': {
    ready: async () => ({ machineId: await create('tickets') }),
    payload: { text: 'hello' },
    invalidPayloads: [{ text: '' }, { text: 'x'.repeat(2001) }, {}],
    // COMMENT is handled at the ticket's root, but a resolved ticket is done: 409 (also what
    // comments queued behind a RESOLVE answer under `contention: { wait }`).
    conflicts: {
      resolved: async () => {
        const machineId = await create('tickets');
        await staffSend(`/staff/tickets/${machineId}/assign`, { payload: { agent: 'ada' } });
        await staffSend(`/staff/tickets/${machineId}/resolve`, {});
        return { machineId };
      },
    },
    lockOf: byMachineId,
  },
  'ticket_staff.assign': {
    ready: async () => ({ machineId: await create('tickets') }),
    payload: { agent: 'ada' },
    invalidPayloads: [{ agent: '' }, {}],
    conflicts: {
      'already assigned': async () => {
        const machineId = await create('tickets');
        await staffSend(`/staff/tickets/${machineId}/assign`, { payload: { agent: 'ada' } });
        return { machineId };
      },
    },
    lockOf: byMachineId,
    auth: STAFF,
  },
  'ticket_staff.resolve': {
    ready: async () => {
      const machineId = await create('tickets');
      await staffSend(`/staff/tickets/${machineId}/assign`, { payload: { agent: 'ada' } });
      return { machineId };
    },
    conflicts: { open: async () => ({ machineId: await create('tickets') }) },
    lockOf: byMachineId,
    auth: STAFF,
  },
};

// ---------------------------------------------------------------------------------------------
// Cases

interface Case {
  name: string;
  expected: number;
  request(): Promise<Outgoing>;
  /** Sends the request while the lock of this machine id is held. */
  lock?: (params: Params) => string;
  params?: () => Promise<Params>;
  check?(response: Received): string[];
}

function urlOf(operation: Operation, params: Params, query?: JsonObject): string {
  const url = operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${operation.operationId}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
  if (query === undefined || Object.keys(query).length === 0) return url;
  return `${url}?${new URLSearchParams(query as Record<string, string>).toString()}`;
}

/** True when the operation takes the `scenario` field (config `scenarios: true`). */
function documentsScenario(op: JsonObject): boolean {
  const parameters = (op['parameters'] ?? []) as JsonObject[];
  if (parameters.some((parameter) => parameter['name'] === 'scenario')) return true;
  const body = op['requestBody'] as JsonObject | undefined;
  return JSON.stringify(body ?? {}).includes('"scenario"');
}

/** The first scenario slug an operation documents (its `...ScenarioSlug` enum), if any. */
function scenarioSlugOf(op: JsonObject): string | undefined {
  const name = /"#\/components\/schemas\/(\w+ScenarioSlug)"/.exec(JSON.stringify(op))?.[1];
  const slugs = name === undefined ? undefined : document.components.schemas[name];
  const values = (slugs as JsonObject | undefined)?.['enum'];
  return Array.isArray(values) ? String(values[0]) : undefined;
}

function pathParams(operation: Operation): string[] {
  return [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
}

function casesOf(operation: Operation, recipe: Recipe): Case[] {
  const { method, operation: op } = operation;
  const isGet = method === 'GET';
  const secured = Array.isArray(op['security']) && op['security'].length > 0;
  const auth = recipe.auth ?? {};
  const documented = Object.keys(op['responses'] as JsonObject).map(Number);
  const success = documented.find((status) => status >= 200 && status < 300)!;
  const isCreate = success === 201;
  const params = pathParams(operation);

  /** A request of this operation: the body (or query) of `payload`, or a raw body. */
  const request =
    (
      paramsOf: () => Promise<Params>,
      options: {
        payload?: JsonObject;
        raw?: { body: string; contentType?: string };
        headers?: Record<string, string>;
        body?: JsonObject;
      } = {},
    ) =>
    async (): Promise<Outgoing> => {
      const values = await paramsOf();
      const headers = { ...auth, ...options.headers };
      if (isGet) {
        return { method, url: urlOf(operation, values, options.payload), headers };
      }
      if (options.raw !== undefined) {
        return {
          method,
          url: urlOf(operation, values),
          headers: {
            ...headers,
            ...(options.raw.contentType === undefined
              ? {}
              : { 'content-type': options.raw.contentType }),
          },
          body: options.raw.body,
        };
      }
      const body =
        options.body ?? (options.payload === undefined ? undefined : { payload: options.payload });
      return {
        method,
        url: urlOf(operation, values),
        headers: { ...headers, ...(body === undefined ? {} : jsonHeaders) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      };
    };

  const payload = recipe.payload;
  const withPayload: { payload?: JsonObject } = payload === undefined ? {} : { payload };
  const payloadBody: JsonObject = payload === undefined ? {} : { payload };
  const cases: Case[] = [
    { name: 'success', expected: success, request: request(recipe.ready, withPayload) },
  ];
  if (!isGet && !isCreate) {
    cases.push({
      name: 'success with the route type in the body',
      expected: success,
      request: request(recipe.ready, {
        body: { type: String(operation.operationId.split('.')[1]).toUpperCase(), ...payloadBody },
      }),
    });
  }

  if (secured) {
    const unauthenticated = (name: string, headers: Record<string, string>) =>
      cases.push({
        name,
        expected: 401,
        request: async () => {
          const outgoing = await request(recipe.ready, withPayload)();
          const rest = Object.fromEntries(
            Object.entries(outgoing.headers ?? {}).filter(([key]) => key !== 'authorization'),
          );
          return { ...outgoing, headers: { ...rest, ...headers } };
        },
        check: (response) =>
          response.headers.get('www-authenticate') === 'Bearer'
            ? []
            : [`401 without 'WWW-Authenticate: Bearer'`],
      });
    unauthenticated('no credentials', {});
    unauthenticated('unknown token', { authorization: 'Bearer forged-token' });
    unauthenticated('malformed authorization', { authorization: 'Basic c3RhZmY6dG9rZW4=' });
    if (JSON.stringify(recipe.auth) !== JSON.stringify(CUSTOMER)) {
      // customer-token is valid for the api guard only: RESOLVE also needs admin.
      const needsAdmin = operation.operationId === 'ticket_staff.resolve';
      cases.push({
        name: 'customer token',
        expected: needsAdmin ? 401 : success,
        request: async () => {
          const outgoing = await request(recipe.ready, withPayload)();
          return { ...outgoing, headers: { ...outgoing.headers, ...CUSTOMER } };
        },
      });
    }
  }

  if (params.includes('machineId')) {
    // An instance of another machine: unknown to this route (docs/http.md "foreign id").
    const ordersRoute = /^\/(review\/)?orders\//.test(operation.path);
    const foreignPrefix = ordersRoute ? 'tickets' : 'orders';
    cases.push({
      name: 'id of another machine',
      expected: 404,
      request: request(async () => ({ machineId: await create(foreignPrefix) }), withPayload),
    });
  }
  if (isGet && payload !== undefined) {
    cases.push({
      name: 'bracket form query (payload[key]=)',
      expected: success,
      request: async () => {
        const outgoing = await request(recipe.ready)();
        const query = new URLSearchParams(
          Object.entries(payload).map(([key, value]): [string, string] => [
            `payload[${key}]`,
            String(value),
          ]),
        );
        return { ...outgoing, url: `${outgoing.url}?${query.toString()}` };
      },
    });
  }
  // Every route parses its query string before anything else (request-parsing.ts): bad
  // percent-encoding or nesting deeper than 32 levels is 400, on GET routes as on the others.
  const malformedQueries = [
    ['malformed percent-encoding', 'x=%ZZ'],
    ['nesting 40 levels deep', `a${'[b]'.repeat(40)}=1`],
  ] as const;
  for (const [name, query] of malformedQueries) {
    cases.push({
      name: `query with ${name}`,
      expected: 400,
      request: async () => {
        const outgoing = await request(recipe.ready, withPayload)();
        const separator = outgoing.url.includes('?') ? '&' : '?';
        return { ...outgoing, url: `${outgoing.url}${separator}${query}` };
      },
    });
  }
  if (!isGet) {
    cases.push(
      {
        name: 'JSON with charset',
        expected: success,
        request: request(recipe.ready, {
          raw: {
            body: JSON.stringify(payloadBody),
            contentType: 'application/json; charset=utf-8',
          },
        }),
      },
      {
        name: 'body without content-type',
        expected: 415,
        request: request(recipe.ready, { raw: { body: JSON.stringify(payloadBody) } }),
      },
    );
  }

  for (const name of params) {
    const unknown = name === 'machineId' ? '01ARZ3NDEKTSV4RRFFQ69G5FAV' : 'INV-404';
    cases.push(
      {
        name: `unknown ${name}`,
        expected: 404,
        request: request(async () => ({ [name]: unknown }), withPayload),
      },
      {
        name: `malformed ${name}`,
        expected: 404,
        request: request(async () => ({ [name]: 'not a ulid!' }), withPayload),
      },
    );
  }

  if (!isGet) {
    const raw = (name: string, expected: number, body: string, contentType?: string) =>
      cases.push({
        name,
        expected,
        request: request(recipe.ready, {
          raw: { body, ...(contentType === undefined ? {} : { contentType }) },
        }),
      });
    raw('malformed JSON', 400, '{"payload": {', 'application/json');
    raw('JSON array body', 400, '[1, 2]', 'application/json');
    raw('JSON string body', 400, '"payload"', 'application/json');
    // An empty body is no body (request-parsing.ts): the payload is missing, not malformed.
    raw('empty JSON body', payload === undefined ? success : 422, '', 'application/json');
    raw(
      'oversized body',
      413,
      JSON.stringify({ payload: { pad: 'x'.repeat(1024 * 1024 + 16) } }),
      'application/json',
    );
    raw('text/plain body', 415, JSON.stringify({ payload: payload ?? {} }), 'text/plain');
    raw('form body', 415, 'payload=1', 'application/x-www-form-urlencoded');
    raw(
      'vendor +json body',
      success,
      JSON.stringify(payload === undefined ? {} : { payload }),
      'application/vnd.api+json',
    );
    if (!isCreate) {
      cases.push({
        name: 'type of another event in the body',
        expected: 422,
        request: request(recipe.ready, { body: { type: 'NOT_THIS_EVENT', ...payloadBody } }),
      });
    }
  }

  for (const [index, invalid] of (recipe.invalidPayloads ?? []).entries()) {
    cases.push({
      name: `invalid payload #${index + 1} ${JSON.stringify(invalid).slice(0, 40)}`,
      expected: 422,
      request: request(recipe.ready, { payload: invalid }),
    });
  }
  if (payload !== undefined && !isGet) {
    cases.push({ name: 'no body', expected: 422, request: request(recipe.ready) });
    // The 422 names the keys and says to wrap them in payload; still the documented error body.
    cases.push({
      name: 'event data at the top level, not under payload',
      expected: 422,
      request: request(recipe.ready, { body: payload }),
    });
  }
  if (documentsScenario(op)) {
    // A slug the machine does not define: 404 before anything is read or created.
    cases.push({
      name: 'unknown scenario',
      expected: 404,
      request: isGet
        ? async () => {
            const outgoing = await request(recipe.ready, withPayload)();
            const separator = outgoing.url.includes('?') ? '&' : '?';
            return { ...outgoing, url: `${outgoing.url}${separator}scenario=no-such-scenario` };
          }
        : request(recipe.ready, { body: { ...payloadBody, scenario: 'no-such-scenario' } }),
    });
    // A scenario of another event or source state: 422 { message }, no field at fault (the
    // scenario's own event and state refuse through its plan: 422 with errors).
    const slug = scenarioSlugOf(op);
    if (slug !== undefined) {
      cases.push({
        name: `scenario '${slug}'`,
        expected: 422,
        request: isGet
          ? async () => {
              const outgoing = await request(recipe.ready, withPayload)();
              const separator = outgoing.url.includes('?') ? '&' : '?';
              return { ...outgoing, url: `${outgoing.url}${separator}scenario=${slug}` };
            }
          : request(recipe.ready, { body: { ...payloadBody, scenario: slug } }),
      });
    }
  }
  for (const [name, setup] of Object.entries(recipe.conflicts ?? {})) {
    cases.push({ name: `409 ${name}`, expected: 409, request: request(setup, withPayload) });
  }
  if (recipe.guardFails !== undefined) {
    cases.push({
      name: 'validation guard fails',
      expected: 422,
      request: request(recipe.guardFails, withPayload),
    });
  }
  if (recipe.lockOf !== undefined) {
    let lockParams: Params = {};
    cases.push({
      name: isGet ? 'contention (GET: 200)' : 'contention (423)',
      expected: isGet ? 200 : 423,
      params: async () => {
        // Create the instance (a model-bound one is created on first use) before locking it.
        lockParams = await recipe.ready();
        if (params.includes('invoice') && !isGet) {
          // Binding (step 2) creates the machine; the foreign type is then refused (422).
          const bound = await send({
            method,
            url: urlOf(operation, lockParams),
            headers: jsonHeaders,
            body: '{"type":"NOT_THIS_EVENT"}',
          });
          if (bound.status !== 422) throw new Error(`binding answered ${bound.status}`);
        }
        return lockParams;
      },
      lock: recipe.lockOf,
      request: request(async () => lockParams, withPayload),
      check: (response) => {
        const data = (response.json as JsonObject | undefined)?.['data'] as JsonObject | undefined;
        return data?.['isProcessing'] === true ? [] : ['contention without isProcessing: true'];
      },
    });
  }

  const responses = op['responses'] as JsonObject;
  if (responses['304'] !== undefined) {
    // The read asked again with the ETag of its first answer: 304, no body, the same tag.
    let etag = '';
    cases.push({
      name: 'If-None-Match of the current version',
      expected: 304,
      request: async () => {
        const outgoing = await request(recipe.ready, withPayload)();
        etag = (await send(outgoing)).headers.get('etag') ?? '(no ETag)';
        return { ...outgoing, headers: { ...outgoing.headers, 'if-none-match': etag } };
      },
      check: (response) =>
        response.headers.get('etag') === etag
          ? []
          : [`304 with ETag ${response.headers.get('etag')}`],
    });
  }
  if (responses['412'] !== undefined) {
    cases.push({
      name: 'If-Match of a version the instance is not at',
      expected: 412,
      request: async () => {
        const outgoing = await request(recipe.ready, withPayload)();
        return { ...outgoing, headers: { ...outgoing.headers, 'if-match': '"stale:0"' } };
      },
      check: (response) => {
        const etag = (response.json as JsonObject | undefined)?.['etag'];
        return etag === response.headers.get('etag') ? [] : [`412 body etag ${String(etag)}`];
      },
    });
  }

  cases.push(wrongMethodCase(operation, params, auth));
  return cases;
}

/** A method the path does not route: 405 with the Allow of every method it does. */
function wrongMethodCase(
  operation: Operation,
  params: string[],
  auth: Record<string, string>,
): Case {
  const refused = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
    (other) => document.paths[operation.path]![other.toLowerCase()] === undefined,
  );
  const allowed = HTTP_METHODS.map((m) => m.toUpperCase()).filter(
    (m) => document.paths[operation.path]![m.toLowerCase()] !== undefined,
  );
  return {
    name: `wrong method ${refused[0]}`,
    expected: 405,
    request: async () => ({
      method: refused[0]!,
      url: urlOf(operation, Object.fromEntries(params.map((name) => [name, 'x']))),
      headers: auth,
    }),
    check: (response) => {
      const allow = (response.headers.get('allow') ?? '').split(/,\s*/);
      const problems: string[] = [];
      for (const m of allowed) if (!allow.includes(m)) problems.push(`Allow '${allow}' lacks ${m}`);
      if (allow.includes(refused[0]!)) problems.push(`Allow '${allow}' lists ${refused[0]}`);
      return problems.concat(errorBodyProblems(response));
    },
  };
}

/**
 * The recipe of an OPTIONS operation: that of an operation at its path or under it (the
 * instance path `{prefix}/{machineId}` has no other), whose instance and credentials it uses.
 */
function optionsRecipe(operation: Operation): Recipe | undefined {
  const sibling = operations.find(
    (other) =>
      other.method !== 'OPTIONS' &&
      (other.path === operation.path || other.path.startsWith(`${operation.path}/`)) &&
      recipes[other.operationId] !== undefined,
  );
  return sibling === undefined ? undefined : recipes[sibling.operationId];
}

/** The cases of an OPTIONS operation: 204 with its headers, 401, 404, 400, 405. */
function optionsCasesOf(operation: Operation, recipe: Recipe): Case[] {
  const op = operation.operation;
  const params = pathParams(operation);
  const auth =
    recipe.auth ?? (Array.isArray(op['security']) && op['security'].length > 0 ? STAFF : {});
  const success = (op['responses'] as JsonObject)['204'] as JsonObject;
  const headers = Object.keys((success['headers'] ?? {}) as JsonObject).map((name) =>
    name.toLowerCase(),
  );
  const request =
    (paramsOf: () => Promise<Params>, extra: Record<string, string> = auth, query = '') =>
    async (): Promise<Outgoing> => ({
      method: 'OPTIONS',
      url: `${urlOf(operation, await paramsOf())}${query}`,
      headers: extra,
    });
  const cases: Case[] = [
    {
      name: 'success',
      expected: 204,
      request: request(recipe.ready),
      check: (response) => {
        const problems = headers
          .filter((name) => !response.headers.has(name))
          .map((name) => `204 without ${name}`);
        const allow = (response.headers.get('allow') ?? '').split(/,\s*/);
        if (!allow.includes('OPTIONS')) problems.push(`Allow '${allow.join(', ')}' lacks OPTIONS`);
        return problems;
      },
    },
    { name: 'malformed query', expected: 400, request: request(recipe.ready, auth, '?x=%ZZ') },
  ];
  if (Array.isArray(op['security']) && op['security'].length > 0) {
    cases.push({ name: 'no credentials', expected: 401, request: request(recipe.ready, {}) });
  }
  for (const name of params) {
    const unknown = name === 'machineId' ? '01ARZ3NDEKTSV4RRFFQ69G5FAV' : 'INV-404';
    cases.push({
      name: `unknown ${name}`,
      expected: 404,
      request: request(async () => ({ [name]: unknown })),
    });
  }
  cases.push(wrongMethodCase(operation, params, auth));
  return cases;
}

/** An undocumented response (unknown route, wrong method): JSON `{ message }` only. */
function errorBodyProblems(response: Received): string[] {
  const problems: string[] = [];
  if (!/^application\/json(;|$)/.test(response.contentType)) {
    problems.push(`content-type '${response.contentType}' is not application/json`);
  }
  const validate = ajv.compile({ $ref: `${SCHEMA_ID}#/components/schemas/ErrorResponse` });
  if (!validate(response.json)) {
    problems.push(`body ${response.text} is not { message }: ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-conformance-'));
  // Scenarios on, as the spec's scenario rules are tried: every answer then carries
  // availableScenarios (activeScenario while one plays), which the document must describe.
  process.env['MACHINE_SCENARIOS_ENABLED'] = 'true';
  try {
    app = await buildApp({ databaseUrl: `sqlite:${path.join(directory, 'conformance.db')}` });
  } finally {
    delete process.env['MACHINE_SCENARIOS_ENABLED'];
  }
  baseUrl = await app.listen(0);
});

afterAll(async () => {
  await app?.close();
  rmSync(directory, { recursive: true, force: true });
});

/** Statuses some request answered, per operation (checked once every operation ran). */
const exercised = new Map<string, Set<number>>();

describe('the generated example conforms to its OpenAPI document', () => {
  it('should have a request recipe for every operation, and no recipe without an operation', () => {
    expect(operations.length).toBeGreaterThan(0);
    // OPTIONS operations borrow the recipe of an operation at their path (optionsRecipe).
    expect(
      operations
        .filter((operation) => operation.method !== 'OPTIONS')
        .map((operation) => operation.operationId)
        .sort(),
    ).toEqual(Object.keys(recipes).sort());
    expect(
      operations.filter((operation) => operation.method === 'OPTIONS' && !optionsRecipe(operation)),
    ).toEqual([]);
  });

  it.each(operations)(
    '$operationId ($method $path): every provoked response is documented and valid',
    async (operation) => {
      const options = operation.method === 'OPTIONS';
      const recipe = options ? optionsRecipe(operation) : recipes[operation.operationId];
      if (recipe === undefined) throw new Error(`No request recipe for ${operation.operationId}`);
      const failures: string[] = [];
      const statuses = new Set<number>();
      for (const testCase of options
        ? optionsCasesOf(operation, recipe)
        : casesOf(operation, recipe)) {
        const lockParams = await testCase.params?.();
        const outgoing = await testCase.request();
        const response =
          testCase.lock === undefined
            ? await send(outgoing)
            : await app.runtime.withLock(testCase.lock(lockParams!), () => send(outgoing));
        statuses.add(response.status);
        const problems = [
          ...(response.status === testCase.expected
            ? []
            : [`expected ${testCase.expected}, got ${response.status} (${response.text})`]),
          ...(response.status === 405 ? [] : conformance(operation, response)),
          ...(testCase.check?.(response) ?? []),
        ];
        for (const problem of problems) {
          failures.push(
            `${testCase.name} [${outgoing.method} ${outgoing.url.slice(0, 80)}]: ${problem}`,
          );
        }
      }
      exercised.set(operation.operationId, statuses);
      expect(failures).toEqual([]);
    },
    60_000,
  );

  it('should provoke every documented status but 500 and 503 (unprovokable in the example)', () => {
    const missing = operations.flatMap((operation) => {
      const statuses = exercised.get(operation.operationId) ?? new Set<number>();
      // 503 is answered while the server shuts down (responses.test.ts, openapi.test.ts).
      return Object.keys(operation.operation['responses'] as JsonObject)
        .map(Number)
        .filter((status) => status !== 500 && status !== 503 && !statuses.has(status))
        .map((status) => `${operation.operationId} ${status}`);
    });
    expect(missing).toEqual(KNOWN_UNPROVOKABLE);
  });
});

/**
 * Documented statuses no request of the example can provoke: 409 on routes whose event every
 * state accepts (the calculator's `ready`, which never ends).
 */
const KNOWN_UNPROVOKABLE: string[] = ['calculator.add 409', 'calculator.multiply 409'];

describe('forwarded events while the child has not started', () => {
  it('should answer a documented, valid 409 (no worker has started the child)', async () => {
    const idle = await buildApp({
      databaseUrl: `sqlite:${path.join(directory, 'idle.db')}`,
      worker: false,
    });
    try {
      const idleUrl = await idle.listen(0);
      const created = await fetch(`${idleUrl}/checkouts/create`, { method: 'POST' });
      const machineId = String(((await created.json()) as { data: { id: string } }).data.id);
      for (const operationId of ['checkout.provide_card', 'checkout.confirm_payment']) {
        const operation = operations.find((candidate) => candidate.operationId === operationId)!;
        const response = await fetch(`${idleUrl}${urlOf(operation, { machineId })}`, {
          method: 'POST',
          headers: jsonHeaders,
          body: JSON.stringify(
            operationId === 'checkout.provide_card'
              ? { payload: { card: '4111111111111111' } }
              : {},
          ),
        });
        const text = await response.text();
        const received: Received = {
          status: response.status,
          headers: response.headers,
          contentType: response.headers.get('content-type') ?? '',
          text,
          json: JSON.parse(text) as Json,
        };
        expect(received.status).toBe(409);
        expect(conformance(operation, received)).toEqual([]);
      }
    } finally {
      await idle.close();
    }
  });
});

describe('routes outside the document', () => {
  it.each([
    { method: 'GET', url: '/' },
    { method: 'GET', url: '/nope' },
    { method: 'POST', url: '/orders' },
    { method: 'POST', url: '/orders/create/extra' },
    { method: 'POST', url: '/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/unknown-event' },
    { method: 'POST', url: '/calculator/subtract' },
    // The example serves /openapi.json and /docs (its config enables docs), nothing else there.
    { method: 'GET', url: '/docs/missing.js' },
    { method: 'GET', url: '/orders/create/' },
    // OPTIONS of a URL no route serves: unknown, JSON 404.
    { method: 'OPTIONS', url: '/orders/create/extra' },
  ])('should answer 404 JSON { message } to $method $url', async ({ method, url }) => {
    const response = await send({
      method,
      url,
      headers: jsonHeaders,
      body: method === 'GET' ? undefined : '{}',
    } as Outgoing);
    expect(response.status).toBe(404);
    expect(errorBodyProblems(response)).toEqual([]);
  });

  // A body on a URL no route serves is parsed before the 404 (Fastify runs the body parser
  // first): one it cannot parse, or over the body limit, may be refused as such (400, 413), but
  // with the JSON { message } of every error, not Fastify's { statusCode, code, error, message }.
  it.each([
    { method: 'POST', url: '/nope', body: '{' },
    { method: 'POST', url: '/nope', body: '' },
    { method: 'POST', url: '/orders/create/', body: '{"payload":' },
    { method: 'DELETE', url: '/orders', body: '{' },
    { method: 'OPTIONS', url: '/orders/create/extra', body: '{' },
    { method: 'POST', url: '/nope', body: `"${'x'.repeat(2 * 1024 * 1024)}"` },
  ])(
    'should answer $method $url with a bad JSON body with a 4xx JSON { message }',
    async ({ method, url, body }) => {
      const response = await send({ method, url, headers: jsonHeaders, body });
      expect([400, 404, 413]).toContain(response.status);
      expect(errorBodyProblems(response)).toEqual([]);
    },
  );

  // Ids no route can decode or match (invalid percent-encoding, longer than Fastify's
  // maxParamLength) name no machine: 404 { message } like any unknown id, not Fastify's own
  // { error, code, message, statusCode } body (400) or an undocumented 414.
  it.each([
    { method: 'POST', url: '/tickets/%E0%A4%A/comment' },
    { method: 'POST', url: '/tickets/%ff/comment' },
    { method: 'GET', url: '/review/orders/%E0%A4%A/status' },
    { method: 'POST', url: `/tickets/${'Z'.repeat(120)}/comment` },
    { method: 'GET', url: `/review/orders/${'Z'.repeat(120)}/status` },
  ])(
    'should answer 404 JSON { message } to a malformed id: $method $url',
    async ({ method, url }) => {
      const response = await send({
        method,
        url,
        headers: jsonHeaders,
        body: method === 'GET' ? undefined : '{"payload":{"text":"hi"}}',
      } as Outgoing);
      expect(response.status).toBe(404);
      expect(errorBodyProblems(response)).toEqual([]);
    },
  );

  it.each([
    { method: 'GET', url: '/orders/create', allow: 'POST, OPTIONS' },
    { method: 'PUT', url: '/calculator/add', allow: 'POST, OPTIONS' },
    {
      method: 'POST',
      url: '/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/quote',
      allow: 'GET, HEAD, OPTIONS',
    },
    { method: 'POST', url: '/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel', allow: 'DELETE, OPTIONS' },
    { method: 'HEAD', url: '/orders/create', allow: 'POST, OPTIONS' },
    { method: 'GET', url: '/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV', allow: 'OPTIONS' },
  ])('should answer 405 with Allow: $allow to $method $url', async ({ method, url, allow }) => {
    const response = await send({ method, url });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allow);
    // A HEAD answer has no body by definition (RFC 9110 §9.3.2).
    if (method === 'HEAD') expect(response.text).toBe('');
    else expect(errorBodyProblems(response)).toEqual([]);
  });
});
