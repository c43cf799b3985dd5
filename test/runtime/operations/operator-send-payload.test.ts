/**
 * `MachineOperations.send` (the CLI's `instances send`, the admin route) checks the payload
 * against the event's schema as its endpoint would: a malformed payload is refused with
 * `MachineValidationException` naming the machine, the event and the field, and nothing is
 * stored; a valid one is sent as the schema parses it.
 */
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineEvent, defineMachine } from '../../../src/runtime/definition/index.js';
import { MachineValidationException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineOperations } from '../../../src/runtime/engine/operations/machine-operations.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { sqliteFileBackend } from '../../support/stores.js';

const quoteMachine = defineMachine({
  config: {
    id: 'quote',
    initial: 'open',
    context: { quantity: 0 },
    states: { open: { on: { SET: { actions: 'set' } } } },
  },
  behavior: {
    events: {
      SET: defineEvent({
        type: 'SET',
        payload: z.object({ quantity: z.number().int().min(1), note: z.string().default('') }),
      }),
    },
    actions: {
      set: ({ context, event }) => {
        context.quantity = (event.payload as { quantity: number }).quantity;
      },
    },
  },
});

describe('MachineOperations.send payload check (sqlite file)', () => {
  const backend = sqliteFileBackend();
  let store: Store;
  let runtime: MachineRuntime;
  let operations: MachineOperations;
  let id: string;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
    operations = new MachineOperations({ runtime, machines: [quoteMachine] });
    id = (await runtime.create(quoteMachine)).snapshot.id;
  });
  afterEach(() => runtime.close());

  it('should refuse a payload its schema rejects, storing nothing', async () => {
    const before = (await store.load(id))!;
    for (const payload of [{ quantity: 'two' }, {}, ['x']]) {
      const refusal = await operations
        .send(
          'quote',
          id,
          { type: 'SET', payload: payload as Record<string, unknown> },
          {
            who: 'alice',
          },
        )
        .catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(MachineValidationException);
      expect(refusal).toMatchObject({ code: 'MR_VALIDATION_FAILED', statusCode: 422 });
      const refused = refusal as MachineValidationException;
      expect(Object.keys(refused.errors)).toEqual([
        Array.isArray(payload) ? 'payload' : 'payload.quantity',
      ]);
      expect(refused.message).toMatch(/event 'SET' of machine 'quote'/);
    }
    const after = (await store.load(id))!;
    expect(after.sequence).toBe(before.sequence);
    expect(after.context).toEqual({ quantity: 0 });
  });

  it('should send a valid payload as its schema parses it', async () => {
    await operations.send('quote', id, { type: 'SET', payload: { quantity: 3 } }, { who: 'bob' });
    expect((await store.load(id))!.context).toEqual({ quantity: 3 });
    const sent = (await operations.history('quote', id, { limit: 50 })).items.find(
      (record) => record.type === 'SET',
    );
    expect(sent?.payload).toEqual({ quantity: 3, note: '' });
  });
});
