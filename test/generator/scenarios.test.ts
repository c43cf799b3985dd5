import { Validator } from '@seriousme/openapi-schema-validator';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildClientView } from '../../src/generator/emitters/client.js';
import { buildOpenApiDocument } from '../../src/generator/emitters/openapi.js';
import { checkProject } from '../../src/generator/generate.js';
import type { JsonSchema, RouteManifest } from '../../src/generator/manifest.js';
import { ROOT } from './support.js';

const options = {
  framework: 'fastify',
  openapi: { title: 't', version: '1', description: null, bearerAuthDescription: null },
  client: { baseUrl: null },
} as const;

type Operation = {
  parameters?: Array<{ name: string }>;
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
  responses: Record<string, unknown>;
};

let manifest: RouteManifest;
let document: JsonSchema;
const operation = (doc: JsonSchema, path: string, method: string): Operation =>
  (doc['paths'] as Record<string, Record<string, Operation>>)[path]![method]!;
const schemas = (doc: JsonSchema) =>
  (doc['components'] as { schemas: Record<string, JsonSchema> }).schemas;
const bodyProperties = (op: Operation) =>
  Object.keys((op.requestBody!.content['application/json'].schema['properties'] ?? {}) as object);

beforeAll(async () => {
  const report = await checkProject({
    config: 'fixtures/generator/scenarios/machine-routes.config.ts',
    cwd: ROOT,
  });
  expect(report.issues).toEqual([]);
  manifest = report.manifest!;
  document = buildOpenApiDocument(manifest, options);
  // Loading a config (jiti, every machine) took over 30 s on a machine loaded to 10+.
}, 120_000);

describe('scenarios in the OpenAPI document and the client (config scenarios: true)', () => {
  it('should stay a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
  });

  it('should describe scenario and scenarioParams on event routes, with the slugs as an enum', () => {
    const pay = operation(document, '/orders/{machineId}/pay', 'post');
    expect(pay.requestBody!.content['application/json'].schema['properties']).toMatchObject({
      scenario: {
        anyOf: [{ $ref: '#/components/schemas/OrderScenarioSlug' }, { type: 'null' }],
      },
      scenarioParams: { type: 'object' },
    });
    expect(schemas(document)['OrderScenarioSlug']).toEqual({
      type: 'string',
      enum: ['declined', 'retry-blocked', 'review-fails'],
    });
    expect(schemas(document)['OrderScenario']).toMatchObject({
      required: ['slug', 'description', 'hasContinuation'],
    });
    // An unknown slug is a 404 on every route reading the field.
    expect(Object.keys(pay.responses)).toContain('404');
  });

  it('should add the optional answer fields to event answers only', () => {
    const data = (schemas(document)['OrderResponse']!['properties'] as Record<string, JsonSchema>)[
      'data'
    ]!;
    expect(Object.keys(data['properties'] as object)).toEqual([
      'id',
      'state',
      'availableEvents',
      'output',
      'isProcessing',
      'availableScenarios',
      'activeScenario',
    ]);
    expect(data['required']).not.toContain('availableScenarios');
    expect(data['required']).not.toContain('activeScenario');
    const created = JSON.stringify(schemas(document)['OrderCreatedResponse']);
    expect(created).not.toContain('Scenario');
    // Forwarded routes read no scenario fields and answer none.
    const forward = operation(document, '/shops/{machineId}/provide-card', 'post');
    expect(bodyProperties(forward)).not.toContain('scenario');
    expect(JSON.stringify(schemas(document)['ShopProvideCardResponse'])).not.toContain('Scenario');
  });

  it('should type the client input with the slugs', () => {
    const methods = buildClientView(manifest).groups.find(
      (group) => group.property === 'order',
    )!.methods;
    expect(methods.find((method) => method.name === 'pay')!.inputType).toBe(
      '{ machineId: string; scenario?: OrderScenarioSlug | null; scenarioParams?: Record<string, unknown> }',
    );
    expect(methods.find((method) => method.name === 'create')!.inputType).toBe('null');
  });

  it('should describe no scenario field without the switch', async () => {
    // The example's machines (the order machine has a scenario), with `scenarios: false`.
    const example = (
      await checkProject({
        config: 'fixtures/generator/express/machine-routes.config.ts',
        cwd: ROOT,
      })
    ).manifest!;
    const doc = buildOpenApiDocument(example, options);
    expect(JSON.stringify(doc)).not.toContain('"scenario"');
    expect(JSON.stringify(doc)).not.toContain('Scenario');
  });
});
