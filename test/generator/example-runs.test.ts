/**
 * Example outputs are run through the machine at generate time (example-runs.ts): the document
 * shows what an action writes, not the initial context. Checked on the committed example
 * document (the order's SUBMIT and QUOTE, whose actions store the payload) and on a cart whose
 * CHECKOUT is reached only after ADD_ITEM changed the context (a path run, a guard on the way).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { analyzeMachine } from '../../src/generator/describe-machine.js';
import { examplePayload } from '../../src/generator/example-payload.js';
import { routeExample } from '../../src/generator/example-runs.js';
import type { JsonSchema } from '../../src/generator/manifest.js';
import { defineEvent, defineMachine } from '../../src/runtime/index.js';
import { ROOT } from './support.js';

type Json = Record<string, unknown>;
const document = JSON.parse(
  readFileSync(path.join(ROOT, 'generated-example/openapi.json'), 'utf8'),
) as { paths: Record<string, Record<string, Json>> };

/** The `application/json` example of a response (or, with `'request'`, of the request body). */
function example(route: string, method: string, status: number | 'request'): Json {
  const op = document.paths[route]![method]!;
  const part =
    status === 'request'
      ? (op['requestBody'] as Json)
      : (op['responses'] as Record<string, Json>)[String(status)]!;
  return (part['content'] as Record<string, { example: Json }>)['application/json']!.example;
}

function output(body: Json): Json {
  return (body['data'] as Json)['output'] as Json;
}

describe('example outputs of the example openapi.json', () => {
  it("should show SUBMIT's total as its action stores it from the request's example payload", () => {
    const request = example('/orders/{machineId}/submit', 'post', 'request');
    const amount = (request['payload'] as Json)['amount'];
    expect(request).toEqual({ type: 'SUBMIT', payload: { amount } });
    const created = output(example('/orders/create', 'post', 201));
    expect(created['total']).toBe(0);
    const after = output(example('/orders/{machineId}/submit', 'post', 200));
    expect(after['total']).toBe(amount);
    expect(after).not.toEqual(created);
    // The 423 shows the instance before the event: the initial total.
    expect(output(example('/orders/{machineId}/submit', 'post', 423))['total']).toBe(0);
  });

  it('should show the quote the QUOTE action computes from the example query', () => {
    const op = document.paths['/orders/{machineId}/quote']!['get']!;
    const quantity = (op['parameters'] as Json[]).find((p) => p['name'] === 'quantity')!;
    expect(quantity['example']).toEqual(expect.any(Number));
    const after = output(example('/orders/{machineId}/quote', 'get', 200));
    expect(after['lastQuote']).toBe((quantity['example'] as number) * 25);
  });

  it("should show an approval's summary output of the submitted order", () => {
    const submitted = output(example('/orders/{machineId}/submit', 'post', 200));
    const approved = output(example('/orders/{machineId}/approve', 'patch', 200));
    expect(approved).toEqual({ total: submitted['total'], approved: true });
  });
});

const AddItem = defineEvent({
  type: 'ADD_ITEM',
  payload: z.object({
    sku: z.string().min(3),
    price: z
      .number()
      .int()
      .min(1)
      .meta({ examples: [1250] }),
    gift: z.boolean().optional(),
  }),
});

const cart = defineMachine({
  config: {
    id: 'cart',
    initial: 'open',
    context: { items: [] as string[], total: 0, checkedOutAt: null as string | null },
    states: {
      open: {
        on: {
          ADD_ITEM: { actions: 'add' },
          CHECKOUT: { target: 'ordered', guards: 'notEmpty', actions: 'stamp' },
        },
      },
      ordered: { type: 'final' },
    },
  },
  behavior: {
    events: { ADD_ITEM: AddItem },
    guards: { notEmpty: ({ context }) => context.total > 0 },
    actions: {
      add: ({ context, event }) => {
        context.items.push(event.payload.sku);
        context.total += event.payload.price;
      },
      stamp: ({ context }) => {
        context.checkedOutAt = new Date().toISOString();
      },
    },
    computed: { count: ({ context }) => context.items.length },
  },
  endpoints: [AddItem, 'CHECKOUT'],
});

const jsonSchema = (schema: z.ZodType): JsonSchema => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as JsonSchema;
  return rest;
};

describe('example runs of a cart', () => {
  const route = (eventType: string, endpointIndex: number) =>
    ({ handler: 'machineIdBound', eventType, endpointIndex, childMachineId: null }) as const;

  it('should show the total after ADD_ITEM, not the initial context', () => {
    const runs = analyzeMachine(cart, jsonSchema).runs;
    expect(routeExample(cart, route('ADD_ITEM', 0), runs)).toEqual({
      payload: { sku: 'string', price: 1250 },
      outputBefore: { items: [], total: 0, checkedOutAt: null, count: 0 },
      outputAfter: { items: ['string'], total: 1250, checkedOutAt: null, count: 1 },
    });
  });

  it('should run the path to an event whose guard needs an earlier action', () => {
    const runs = analyzeMachine(cart, jsonSchema).runs;
    const checkout = routeExample(cart, route('CHECKOUT', 1), runs);
    expect(checkout?.outputBefore).toMatchObject({ total: 1250, count: 1 });
    expect(checkout?.outputAfter).toMatchObject({ total: 1250, checkedOutAt: expect.any(String) });
    expect(runs.events.get('CHECKOUT')?.after.value).toEqual(['cart.ordered']);
  });

  it('should show the new instance on create, with the fixed example id', () => {
    const runs = analyzeMachine(cart, jsonSchema).runs;
    expect(runs.initial?.id).toBe('01JCZ8Q4M7X9V2K5N3P6R8T0WY');
    expect(
      routeExample(
        cart,
        { handler: 'create', eventType: null, endpointIndex: null, childMachineId: null },
        runs,
      ),
    ).toEqual({
      payload: null,
      outputBefore: null,
      outputAfter: { items: [], total: 0, checkedOutAt: null, count: 0 },
    });
  });

  it('should have no run where no example payload passes the schema', () => {
    const strict = defineMachine({
      config: { id: 'strict', initial: 'a', states: { a: { on: { CODE: 'b' } }, b: {} } },
      behavior: {
        events: {
          CODE: defineEvent({
            type: 'CODE',
            payload: z.object({ code: z.string().regex(/^[A-Z]{3}$/) }),
          }),
        },
      },
      endpoints: ['CODE'],
    });
    const runs = analyzeMachine(strict, jsonSchema).runs;
    expect(runs.events.has('CODE')).toBe(false);
    expect(routeExample(strict, route('CODE', 0), runs)).toBeNull();
  });
});

describe('examplePayload', () => {
  it('should build the smallest value the keywords allow, the schema example first', () => {
    expect(
      examplePayload(
        jsonSchema(
          z.object({
            n: z.number().positive(),
            i: z.number().int().min(3).multipleOf(5),
            s: z.string().min(8),
            e: z.enum(['b', 'a']),
            at: z.iso.datetime(),
            list: z.array(z.object({ id: z.uuid() })),
            maybe: z.string().nullable(),
            named: z.string().meta({ examples: ['Ada'] }),
            optional: z.string().optional(),
          }),
        ),
      ),
    ).toEqual({
      n: 1,
      i: 5,
      s: 'stringxx',
      e: 'b',
      at: '2025-01-01T00:00:00.000Z',
      list: [{ id: '00000000-0000-4000-8000-000000000000' }],
      maybe: 'string',
      named: 'Ada',
    });
  });
});
