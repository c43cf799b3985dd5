/**
 * What a reader of the reference page meets in the example's document: operations in the
 * order of the machine's flow (create, then each event where the flow first sends it, then
 * reads), a description on every path parameter, and a 400 that says what of that request
 * could not be read.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support.js';

interface Operation {
  operationId: string;
  tags: string[];
  parameters?: { name: string; in: string; description?: string }[];
  responses: Record<string, { description?: string; $ref?: string }>;
}

const document = JSON.parse(
  readFileSync(path.join(ROOT, 'generated-example/openapi.json'), 'utf8'),
) as { paths: Record<string, Record<string, Operation>> };
const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
/** The operations of routes: OPTIONS (the HTTP surface of each path) left out. */
const routeOperations = Object.values(document.paths).flatMap((item) =>
  Object.entries(item)
    .filter(([method]) => method !== 'options')
    .map(([, operation]) => operation),
);

describe('the example OpenAPI document, as the reference page shows it', () => {
  it("should list the order's operations in the order of its flow", () => {
    const ids = routeOperations
      .filter((operation) => operation.tags[0] === 'order')
      .map((operation) => operation.operationId);
    expect(ids.slice(0, 5)).toEqual([
      'order.create',
      'order.quote',
      'order.submit',
      'order.approve',
      'order.cancel',
    ]);
  });

  it('should describe every path parameter', () => {
    const parameters = operations.flatMap((operation) =>
      (operation.parameters ?? []).filter((parameter) => parameter.in === 'path'),
    );
    expect(parameters.length).toBeGreaterThan(10);
    expect(parameters.filter((parameter) => !parameter.description)).toEqual([]);
    const submit = document.paths['/orders/{machineId}/submit']!['post']!;
    expect(submit.parameters![0]!.description).toBe(
      'Id of the order instance: `data.id` of the answer that created it (a ULID). An unknown id is a 404.',
    );
  });

  it("should say what each operation's 400 is for", () => {
    const badRequests = operations.map((operation) => operation.responses['400']);
    expect(badRequests.filter((answer) => answer?.description === undefined)).toEqual([]);
    expect(new Set(badRequests.map((answer) => answer!.description)).size).toBeGreaterThan(10);
    expect(
      document.paths['/orders/{machineId}/submit']!['post']!.responses['400']!.description,
    ).toBe(
      'The request cannot be read: the body is not JSON, not a JSON object (`{ "payload": ... }` of SUBMIT) or nested over 32 levels; or the query string is malformed (bad percent-encoding, nested over 32 levels, over 1000 pairs). Nothing happened: SUBMIT is not sent to the order.',
    );
    expect(document.paths['/orders/create']!['post']!.responses['400']!.description).toBe(
      'The request cannot be read: the query string is malformed (bad percent-encoding, nested over 32 levels, over 1000 pairs). Nothing happened: no order is created.',
    );
  });
});
