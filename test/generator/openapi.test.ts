import { Validator } from '@seriousme/openapi-schema-validator';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkProject } from '../../src/generator/generate.js';
import { buildOpenApiDocument } from '../../src/generator/emitters/openapi.js';
import type { EmitOptions } from '../../src/generator/emitters/types.js';
import type { JsonSchema, RouteManifest } from '../../src/generator/manifest.js';
import { ROOT } from './support.js';

const MACHINE_ID_DESCRIPTION =
  'Id of the order instance: `data.id` of the answer that created it (a ULID). An unknown id is a 404.';

/** The example's machines and routes without the scenario fields (`scenarios: false`). */
const EXAMPLE_WITHOUT_SCENARIOS = 'fixtures/generator/express/machine-routes.config.ts';

const options: EmitOptions = {
  framework: 'fastify',
  openapi: {
    title: 'example',
    version: '1.0.0',
    description: null,
    bearerAuthDescription: 'Example tokens.',
    license: null,
    servers: [{ url: '/' }],
  },
  client: { baseUrl: null },
};

let document: JsonSchema;
let exampleManifest: RouteManifest;

beforeAll(async () => {
  const { manifest } = await checkProject({ config: EXAMPLE_WITHOUT_SCENARIOS, cwd: ROOT });
  exampleManifest = manifest!;
  document = buildOpenApiDocument(manifest!, options);
});

function exampleDocument(): JsonSchema {
  return document;
}

function schemas(): Record<string, JsonSchema> {
  return (document['components'] as { schemas: Record<string, JsonSchema> }).schemas;
}

type Operation = {
  operationId: string;
  tags: string[];
  summary: string;
  description: string;
  parameters?: Array<{ name: string; in: string; required: boolean }>;
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content: Record<string, { schema: JsonSchema }> }>;
};

function operation(document: JsonSchema, path: string, method: string): Operation {
  return (document['paths'] as Record<string, Record<string, Operation>>)[path]![method]!;
}

describe('emitOpenApi', () => {
  it('should produce a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(exampleDocument());
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('should produce a valid document for forwarded endpoints', async () => {
    const { manifest } = await checkProject({
      config: 'fixtures/generator/forwarding/machine-routes.config.ts',
      cwd: ROOT,
    });
    const forwarding = buildOpenApiDocument(manifest!, options);
    const result = await new Validator().validate(forwarding);
    expect(result.errors ?? []).toEqual([]);
    const components = (forwarding['components'] as { schemas: Record<string, JsonSchema> })
      .schemas;
    expect(components['CheckoutConfirmPaymentResponse']).toEqual({
      type: 'object',
      properties: {
        data: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            state: { type: 'array', items: { $ref: '#/components/schemas/CheckoutState' } },
            availableEvents: {
              type: 'array',
              items: { $ref: '#/components/schemas/CheckoutAvailableEvent' },
            },
            child: {
              anyOf: [
                {
                  type: 'object',
                  properties: {
                    state: { type: 'array', items: { $ref: '#/components/schemas/PaymentState' } },
                    output: { type: 'object', properties: { cardLast4: {} } },
                  },
                  required: ['state', 'output'],
                  additionalProperties: false,
                },
                { type: 'null' },
              ],
            },
            isProcessing: { type: 'boolean' },
          },
          required: ['id', 'state', 'availableEvents', 'child', 'isProcessing'],
          additionalProperties: false,
        },
      },
      required: ['data'],
      additionalProperties: false,
    });
    expect(components['CheckoutAvailableEvent']).toMatchObject({
      properties: {
        type: { enum: ['CANCEL', 'CONFIRM_PAYMENT', 'PROVIDE_CARD', 'START_PAYMENT'] },
        source: { enum: ['parent', 'forward'] },
      },
    });
  });

  it('should name every operation after its route and tag it with its machine', () => {
    const document = exampleDocument();
    const submit = operation(document, '/orders/{machineId}/submit', 'post');
    expect(submit.operationId).toBe('order.submit');
    expect(submit.tags).toEqual(['order']);
    const tags = document['tags'] as { name: string; description: string }[];
    expect(tags.map((tag) => tag.name)).toEqual([
      'calculator',
      'checkout',
      'fulfillment',
      'invoice',
      'order',
      'ticket',
    ]);
    // Each tag carries the machine's description, its states and its Mermaid diagram.
    const order = tags.find((tag) => tag.name === 'order')!.description;
    expect(order).toContain('A customer order: drafted, submitted with its total');
    expect(order).toContain('- `draft`: Created, not submitted yet; quotes can be asked.');
    expect(order).toContain('```mermaid\nstateDiagram-v2\n  [*] --> draft\n');
  });

  it('should say in English what each operation does', () => {
    const document = exampleDocument();
    const approve = operation(document, '/orders/{machineId}/approve', 'patch');
    expect(approve.summary).toBe('Send APPROVE to an order');
    expect(approve.description).toBe(
      'Moves the order from `submitted` to `approved` when `withinLimit` passes.\n\n' +
        'Answers 404 when no such order exists; 409 when the order is in no state that accepts `APPROVE`; ' +
        '422 when the payload or a validation guard rejects the event; 423 while another request holds the order.',
    );
    expect(operation(document, '/orders/create', 'post').summary).toBe('Create an order');
    expect(operation(document, '/tickets/create', 'post').summary).toBe('Create a ticket');
    expect(operation(document, '/orders/{machineId}/quote', 'get').description).toContain(
      'Keeps the order where it is (in `draft` or `submitted`).',
    );
    // `contention: { wait }` (the ticket registration): 423 only once the wait ran out.
    const comment = operation(document, '/tickets/{machineId}/comment', 'post');
    expect(comment.description).toContain(
      '423 when another request still holds the ticket after waiting 2000 ms for it (requests wait in order of arrival).',
    );
    expect(Object.keys(comment.responses)).toContain('423');
  });

  it('should describe the request body with the payload schema of the event', () => {
    const submit = operation(exampleDocument(), '/orders/{machineId}/submit', 'post');
    expect(submit.requestBody!.content['application/json']!.schema).toEqual({
      type: 'object',
      properties: {
        type: { type: 'string', const: 'SUBMIT' },
        payload: { $ref: '#/components/schemas/OrderSubmitPayload' },
      },
      required: ['payload'],
      additionalProperties: false,
    });
    expect(schemas()['OrderSubmitPayload']).toEqual({
      type: 'object',
      properties: {
        amount: {
          type: 'integer',
          minimum: 1,
          maximum: 9007199254740991,
          description: 'Order total in cents.',
          examples: [2500],
        },
        note: { type: 'string', maxLength: 200, description: 'A note for the approver.' },
      },
      required: ['amount'],
    });
    // The request of the example run: the schema's example amount, which the answer shows.
    expect(
      (submit.requestBody!.content['application/json'] as { example?: unknown }).example,
    ).toEqual({
      type: 'SUBMIT',
      payload: { amount: 2500 },
    });
    expect(submit.parameters).toEqual([
      {
        name: 'machineId',
        in: 'path',
        required: true,
        description: MACHINE_ID_DESCRIPTION,
        schema: { type: 'string' },
      },
      {
        name: 'If-Match',
        in: 'header',
        required: false,
        description: expect.stringContaining(
          'Send the event only if the instance is still at this version',
        ),
        schema: { type: 'string' },
      },
    ]);
  });

  it('should turn the payload of a GET endpoint into query parameters', async () => {
    const quote = operation(exampleDocument(), '/orders/{machineId}/quote', 'get');
    expect(quote.requestBody).toBeUndefined();
    expect(quote.parameters).toEqual([
      {
        name: 'machineId',
        in: 'path',
        required: true,
        description: MACHINE_ID_DESCRIPTION,
        schema: { type: 'string' },
      },
      {
        name: 'If-Match',
        in: 'header',
        required: false,
        description: expect.stringContaining(
          'Send the event only if the instance is still at this version',
        ),
        schema: { type: 'string' },
      },
      {
        name: 'quantity',
        in: 'query',
        required: true,
        schema: {
          type: 'integer',
          minimum: 1,
          maximum: 9007199254740991,
          description: 'How many items to price (25 each).',
          examples: [4],
        },
        // The value of the example run, whose answer shows lastQuote 100.
        example: 4,
      },
    ]);
  });

  it('should document the statuses each route can answer', () => {
    const document = exampleDocument();
    const statuses = (path: string, method: string) =>
      Object.keys(operation(document, path, method).responses);
    expect(statuses('/orders/{machineId}/submit', 'post')).toEqual([
      '200',
      '400',
      '404',
      '409',
      '412',
      '413',
      '415',
      '422',
      '423',
      '500',
      '503',
    ]);
    // A GET route has no body, but its query string is parsed first: malformed is 400.
    expect(statuses('/orders/{machineId}/quote', 'get')).toEqual([
      '200',
      '400',
      '404',
      '409',
      '412',
      '422',
      '500',
      '503',
    ]);
    // Create parses a body like any write route: 400 / 413 / 415 from the adapter's parser.
    expect(statuses('/orders/create', 'post')).toEqual(['201', '400', '413', '415', '500', '503']);
    expect(statuses('/staff/tickets/{machineId}/assign', 'post')).toEqual([
      '200',
      '400',
      '401',
      '404',
      '409',
      '412',
      '413',
      '415',
      '422',
      '423',
      '500',
      '503',
    ]);
    expect(statuses('/calculator/add', 'post')).toEqual([
      '200',
      '400',
      '409',
      '413',
      '415',
      '422',
      '500',
      '503',
    ]);
  });

  it('should document the 503 of a server shutting down, with Retry-After, on every operation', () => {
    const paths = exampleDocument()['paths'] as Record<string, Record<string, Operation>>;
    const operations = Object.values(paths).flatMap((item) => Object.values(item));
    expect(operations.length).toBeGreaterThan(10);
    for (const op of operations) {
      expect(op.responses['503']).toEqual({ $ref: '#/components/responses/ServiceUnavailable' });
    }
    const responses = (exampleDocument()['components'] as { responses: Record<string, JsonSchema> })
      .responses;
    expect(responses['ServiceUnavailable']).toMatchObject({
      headers: { 'Retry-After': { schema: { type: 'string', pattern: '^[0-9]+$' } } },
      content: {
        'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } },
      },
    });
  });

  it("should document any other status of an endpoint action's routes as `default`", () => {
    // The example has no endpoint action: give order.submit one (its name is all the plan keeps).
    const withAction: RouteManifest = {
      ...exampleManifest,
      registrations: exampleManifest.registrations.map((registration) => ({
        ...registration,
        routes: registration.routes.map((route) =>
          route.name === 'order.submit' ? { ...route, action: 'rescue' } : route,
        ),
      })),
    };
    const withActionDocument = buildOpenApiDocument(withAction, options);
    const submit = operation(withActionDocument, '/orders/{machineId}/submit', 'post');
    expect(submit.responses['default']).toMatchObject({
      description: expect.stringContaining('onException'),
      content: { 'application/json': { schema: {} } },
    });
    expect(
      operation(withActionDocument, '/orders/{machineId}/cancel', 'delete').responses['default'],
    ).toBeUndefined();
  });

  it('should require the bearer scheme on protected operations only, with their guards as roles', () => {
    const document = exampleDocument();
    expect((document['components'] as JsonSchema)['securitySchemes']).toEqual({
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'Example tokens.' },
    });
    const secured = Object.entries(document['paths'] as Record<string, Record<string, JsonSchema>>)
      .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })))
      .filter(({ op }) => op['security'] !== undefined)
      .map(({ path, method, op }) => [`${method} ${path}`, op['security']]);
    expect(secured).toEqual([
      // OPTIONS runs the middleware every route of its path runs.
      ['post /staff/tickets/{machineId}/assign', [{ bearerAuth: ['api'] }]],
      ['options /staff/tickets/{machineId}/assign', [{ bearerAuth: ['api'] }]],
      ['post /staff/tickets/{machineId}/resolve', [{ bearerAuth: ['admin', 'api'] }]],
      ['options /staff/tickets/{machineId}/resolve', [{ bearerAuth: ['admin', 'api'] }]],
      ['options /staff/tickets/{machineId}', [{ bearerAuth: ['api'] }]],
    ]);
  });

  it('should declare no security scheme when every route is public', async () => {
    const { manifest } = await checkProject({
      config: 'fixtures/generator/forwarding/machine-routes.config.ts',
      cwd: ROOT,
    });
    const components = buildOpenApiDocument(manifest!, options)['components'] as JsonSchema;
    expect(Object.keys(components)).toEqual(['schemas', 'responses']);
  });

  it('should describe the envelope with the machine state ids and available events', () => {
    const submit = operation(exampleDocument(), '/orders/{machineId}/submit', 'post');
    expect(submit.responses['200']).toEqual({
      description: 'Event processed.',
      headers: {
        ETag: expect.objectContaining({ schema: { type: 'string', pattern: '^"[^"]*"$' } }),
      },
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/OrderResponse' },
          // SUBMIT really reaches `submitted`, where APPROVE, CANCEL, QUOTE and the timer's
          // EXPIRE are accepted; its action stored the example payload's amount (2500).
          example: {
            data: {
              id: expect.any(String),
              state: ['order.submitted'],
              availableEvents: [
                { type: 'APPROVE', source: 'parent' },
                { type: 'CANCEL', source: 'parent' },
                { type: 'QUOTE', source: 'parent' },
                { type: 'EXPIRE', source: 'parent' },
              ],
              output: { total: 2500, note: null, lastQuote: null },
              isProcessing: false,
            },
          },
        },
      },
    });
    expect(submit.responses['423']!.content['application/json']!.schema).toEqual({
      $ref: '#/components/schemas/OrderResponse',
    });
    expect(submit.responses['422']).toEqual({ $ref: '#/components/responses/ValidationFailed' });
    expect(schemas()['OrderResponse']).toEqual({
      type: 'object',
      properties: {
        data: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            state: { type: 'array', items: { $ref: '#/components/schemas/OrderState' } },
            availableEvents: {
              type: 'array',
              items: { $ref: '#/components/schemas/OrderAvailableEvent' },
            },
            output: { $ref: '#/components/schemas/OrderOutput' },
            isProcessing: { type: 'boolean' },
          },
          required: ['id', 'state', 'availableEvents', 'output', 'isProcessing'],
          additionalProperties: false,
        },
      },
      required: ['data'],
      additionalProperties: false,
    });
    expect(schemas()['OrderOutput']).toEqual({
      type: 'object',
      properties: { total: { type: 'number' }, note: {}, lastQuote: {} },
      required: ['total', 'note', 'lastQuote'],
    });
    expect(schemas()['OrderState']).toEqual({
      type: 'string',
      enum: [
        'order.approved',
        'order.cancelled',
        'order.draft',
        'order.expired',
        'order.submitted',
      ],
    });
    expect(schemas()['FulfillmentAvailableEvent']).toEqual({
      type: 'object',
      properties: {
        type: { type: 'string', enum: ['CAPTURE', 'PACK'] },
        source: { type: 'string', enum: ['parent'] },
        region: { type: 'string' },
      },
      required: ['type', 'source'],
      additionalProperties: false,
    });
  });

  it('should describe explained availableEvents only on the routes of a registration that opts in', () => {
    const ref = (path: string, method: string) =>
      operation(document, path, method).responses['200']!.content['application/json']!.schema;
    // order_review has explainAvailableEvents; order does not and keeps the spec's entry.
    expect(ref('/review/orders/{machineId}/status', 'get')).toEqual({
      $ref: '#/components/schemas/OrderExplainedResponse',
    });
    expect(ref('/orders/{machineId}/status', 'get')).toEqual({
      $ref: '#/components/schemas/OrderResponse',
    });
    const items = (schema: string) =>
      (
        (schemas()[schema]!['properties'] as Record<string, JsonSchema>)['data']![
          'properties'
        ] as Record<string, JsonSchema>
      )['availableEvents']!['items'];
    expect(items('OrderExplainedResponse')).toEqual({
      $ref: '#/components/schemas/OrderExplainedAvailableEvent',
    });
    expect(items('OrderReviewApproveResponse')).toEqual({
      $ref: '#/components/schemas/OrderExplainedAvailableEvent',
    });
    expect(schemas()['OrderExplainedAvailableEvent']).toMatchObject({
      properties: {
        type: schemas()['OrderAvailableEvent']!['properties']!['type' as never],
        source: { type: 'string', enum: ['parent'] },
        enabled: { type: ['boolean', 'null'] },
        reason: { type: 'string' },
      },
      required: ['type', 'source', 'enabled'],
      additionalProperties: false,
    });
    expect(Object.keys(schemas()['OrderAvailableEvent']!['properties'] as object)).toEqual([
      'type',
      'source',
    ]);
    // No machine without an opted-in registration gets the explained entry.
    expect(
      Object.keys(schemas()).filter((name) => name.endsWith('ExplainedAvailableEvent')),
    ).toEqual(['OrderExplainedAvailableEvent']);
  });

  it('should answer create with id, state and output only', () => {
    const created = schemas()['OrderCreatedResponse'] as {
      properties: { data: { required: string[] } };
    };
    expect(created.properties.data.required).toEqual(['id', 'state', 'output']);
  });

  it('should filter the output schema by the keys of an output filter', () => {
    const cancel = schemas()['OrderCancelResponse'] as {
      properties: { data: { properties: Record<string, JsonSchema>; required: string[] } };
    };
    expect(cancel.properties.data.properties['output']).toEqual({
      type: 'object',
      properties: { total: { type: 'number' } },
    });
    expect(cancel.properties.data.required).toEqual(['id', 'state', 'output', 'isProcessing']);
  });
});
