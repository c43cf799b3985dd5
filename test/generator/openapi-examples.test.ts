/**
 * The examples of the example document are true: each is checked against the interpreter
 * itself, not against the graph that produced it. A create example shows the state `initialize`
 * starts in; an event example's state is what `transition` reaches from the state its 423
 * example shows (the state the event is accepted in), and that 423 state accepts the event.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { collectMachineDefinitions } from '../../src/generator/build-manifest.js';
import { checkProject } from '../../src/generator/generate.js';
import type { JsonSchema, ManifestRoute } from '../../src/generator/manifest.js';
import { initialize, transition, type MachineDefinition } from '../../src/runtime/index.js';
import exampleConfig from '../../fixtures/example/machine-routes.config.js';
import { EXAMPLE_CONFIG, ROOT } from './support.js';

type Json = Record<string, unknown>;
const document = JSON.parse(
  readFileSync(path.join(ROOT, 'generated-example/openapi.json'), 'utf8'),
) as { paths: Record<string, Record<string, Json>> };
const machines = collectMachineDefinitions(exampleConfig.registrations);
let routes: ManifestRoute[];

beforeAll(async () => {
  const { manifest } = await checkProject({ config: EXAMPLE_CONFIG, cwd: ROOT });
  routes = manifest!.registrations.flatMap((registration) => registration.routes);
});

function example(route: ManifestRoute, status: number): { data: Json } | undefined {
  const op = document.paths[route.path]![route.method.toLowerCase()]!;
  const response = (op['responses'] as Record<string, JsonSchema>)[String(status)];
  const content = response?.['content'] as Record<string, { example?: { data: Json } }> | undefined;
  return content?.['application/json']?.example;
}

function sent(definition: MachineDefinition, value: string[], eventType: string): string[] {
  const snapshot = {
    machineId: definition.id,
    id: 'example',
    value,
    context: definition.createContext(),
    status: 'active' as const,
    sequence: 1,
  };
  return transition(definition, snapshot, { type: eventType, payload: {} }).snapshot.value;
}

describe('examples of the example openapi.json', () => {
  it('should show the initial state in every create example', () => {
    const creates = routes.filter((route) => route.handler === 'create');
    expect(creates.length).toBeGreaterThan(0);
    for (const route of creates) {
      const definition = machines.get(route.machineId)!;
      expect(example(route, 201)!.data['state'], route.name).toEqual(
        initialize(definition).snapshot.value,
      );
    }
  });

  it('should show in each event example a state the event really reaches', () => {
    const events = routes.filter(
      (route) => route.eventType !== null && route.childMachineId === null,
    );
    expect(events.length).toBeGreaterThan(10);
    for (const route of events) {
      const definition = machines.get(route.machineId)!;
      const after = example(route, route.status)!.data['state'];
      // Unbound routes (the calculator) have no 423: they start from the initial state.
      const before = (example(route, 423)?.data['state'] ??
        initialize(definition).snapshot.value) as string[];
      expect(sent(definition, before, route.eventType!), route.name).toEqual(after);
      if (route.availableEvents && example(route, 423) !== undefined) {
        const available = example(route, 423)!.data['availableEvents'] as { type: string }[];
        expect(
          available.map((entry) => entry.type),
          route.name,
        ).toContain(route.eventType);
      }
    }
  });

  it('should show a reachable state in each read example', () => {
    const reads = routes.filter((route) => route.handler === 'read');
    expect(reads.length).toBeGreaterThan(0);
    for (const route of reads) {
      const definition = machines.get(route.machineId)!;
      expect(example(route, 200)!.data['state'], route.name).toEqual(
        initialize(definition).snapshot.value,
      );
    }
  });

  it('should show a state that refuses the event in each 409 example', () => {
    let checked = 0;
    for (const route of routes.filter((r) => r.eventType !== null && r.childMachineId === null)) {
      const body = example(route, 409) as unknown as { message: string } | undefined;
      if (body === undefined) continue;
      // Every state accepts the calculator's events: its 409 is the generic one.
      if (body.message === 'Conflict.') continue;
      const match = /in its current state \('([^']*)'\)|is done \(in '([^']*)'\)/.exec(
        body.message,
      )!;
      const state = (match[1] ?? match[2]!).split(', ');
      const definition = machines.get(route.machineId)!;
      const done = match[2] !== undefined;
      // A done instance refuses every event before the interpreter looks at its states.
      if (done) expect(definition.idMap.get(state[0]!)!.type, route.name).toBe('final');
      else
        // The example is the runtime's own message, events accepted there included.
        expect(() => sent(definition, state, route.eventType!), route.name).toThrow(body.message);
      checked += 1;
    }
    expect(checked).toBeGreaterThan(10);
  });
});
