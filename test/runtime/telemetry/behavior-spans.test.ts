/**
 * `MACHINE_TRACE_BEHAVIORS=true`: every guard, action, calculator and listener call of a step is
 * a `machine_routes.<kind> <name>` span under the step's transition span, with the real SDK;
 * off (the default), no such span is made. A SQLite file store.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { sqliteFileBackend } from '../../support/stores.js';
import { installTelemetry, type TestTelemetry } from '../../support/telemetry.js';

const cart = defineMachine({
  config: {
    id: 'spanned_cart',
    initial: 'open',
    context: { items: 0, total: 0 },
    listen: { entry: 'audit' },
    states: {
      open: {
        on: {
          ADD: { target: 'open', calculators: 'price', guards: 'hasRoom', actions: 'addItem' },
          CHECKOUT: 'paid',
        },
      },
      paid: {},
    },
  },
  behavior: {
    calculators: { price: ({ context }) => void (context.total += 10) },
    guards: { hasRoom: ({ context }) => context.items < 5 },
    actions: { addItem: ({ context }) => void (context.items += 1) },
    listeners: { audit: () => {} },
  },
});

describe('behavior spans (SQLite file)', () => {
  const backend = sqliteFileBackend();
  let telemetry: TestTelemetry;
  const runtimes: MachineRuntime[] = [];
  const open = async (trace: string) => {
    const runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
      machines: [cart],
      env: { MACHINE_TRACE_BEHAVIORS: trace },
    });
    runtimes.push(runtime);
    return runtime;
  };

  beforeAll(async () => {
    telemetry = installTelemetry();
    await backend.setUp();
  });
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });
  afterAll(async () => {
    await backend.tearDown();
    await telemetry.shutdown();
  });

  it('should span each guard, action, calculator and listener under its transition', async () => {
    const runtime = await open('true');
    const { snapshot } = await runtime.create(cart);
    telemetry.reset();
    await runtime.send(cart, snapshot.id, { type: 'ADD' });

    const spans = telemetry.spans();
    const transition = spans.find((span) => span.name === 'machine_routes.transition')!;
    const behaviors = spans.filter((span) =>
      /^machine_routes\.(guard|action|calculator|listener) /.test(span.name),
    );
    expect(behaviors.map((span) => span.name).sort()).toEqual([
      'machine_routes.action addItem',
      'machine_routes.calculator price',
      'machine_routes.guard hasRoom',
      'machine_routes.listener audit',
    ]);
    for (const span of behaviors) {
      expect(span.parentSpanContext?.spanId).toBe(transition.spanContext().spanId);
      expect(span.attributes['machine_routes.machine']).toBe('spanned_cart');
    }
    const guard = behaviors.find((span) => span.name === 'machine_routes.guard hasRoom')!;
    expect(guard.attributes).toMatchObject({
      'machine_routes.behavior.kind': 'guard',
      'machine_routes.behavior.name': 'hasRoom',
    });
    expect((await runtime.restore(cart, snapshot.id)).context).toEqual({ items: 1, total: 10 });
  });

  it('should make no behavior span by default', async () => {
    const runtime = await open('false');
    const { snapshot } = await runtime.create(cart);
    telemetry.reset();
    await runtime.send(cart, snapshot.id, { type: 'ADD' });
    const names = telemetry.spans().map((span) => span.name);
    expect(names).toContain('machine_routes.transition');
    expect(
      names.filter((name) => /^machine_routes\.(guard|action|calculator|listener) /.test(name)),
    ).toEqual([]);
  });
});
