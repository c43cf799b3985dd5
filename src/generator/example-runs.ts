/**
 * Examples computed by running the machine: the interpreter is pure, so at generate time a new
 * instance is started in memory and sent, along the shortest path of the reachable-state graph,
 * the events that lead to where each event's example is sent, every payload an example built
 * from its schema. The snapshots before and after each example event are what the documented
 * answers show (state, output), so an example output is what the action really writes, not the
 * initial context. Deterministic: a fixed instance id and clock. No I/O: child machines, jobs,
 * sends and timers are effects the run leaves unapplied. A run that cannot be made (a payload
 * without an example its schema accepts, a guard that refuses on the way, an automatic event on
 * the path, a behavior that throws) is simply absent, and the document falls back to the graph.
 */
import type { ZodType } from 'zod';
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import type { EventObject } from '../runtime/definition/types.js';
import { initialize } from '../runtime/interpreter/initialize.js';
import { transition } from '../runtime/interpreter/transition.js';
import { resolveOutput } from '../runtime/interpreter/output.js';
import type { MachineSnapshot } from '../runtime/interpreter/types.js';
import type { PlannedRoute } from '../runtime/http/types.js';
import type { StateGraph } from './analysis/state-graph.js';
import type { JsonSchema, JsonValue, ManifestRouteExample } from './manifest.js';
import { EXAMPLE_ID } from './emitters/openapi-examples.js';
import { examplePayload } from './example-payload.js';

/** The clock of example runs (a fixed instant, so the output is the same at every generate). */
const EXAMPLE_TIME = new Date('2025-01-01T00:00:00.000Z');

const OPTIONS = { id: EXAMPLE_ID, now: () => EXAMPLE_TIME, history: false } as const;

/** One event's example, run: the payload sent, the snapshots before and after. */
export interface ExampleRun {
  /** The event as sent (its payload parsed by its schema, as the runtime parses it). */
  event: EventObject;
  /** The payload as a client writes it (before parsing); `null` for an event without a schema. */
  payload: JsonValue | null;
  before: MachineSnapshot;
  after: MachineSnapshot;
}

/** The runs of a machine: the new instance, and each event's example by type. */
export interface ExampleRuns {
  /** The snapshot of a new instance; `null` when starting it throws. */
  initial: MachineSnapshot | null;
  events: ReadonlyMap<string, ExampleRun>;
}

/** Sorted state ids, to compare a snapshot with a graph node whatever the order. */
function keyOf(value: readonly string[]): string {
  return [...value].sort().join(',');
}

/**
 * Runs each event's example: `examples` names, by event type, the graph edge (from, to) nearest
 * the initial state sending it. `jsonSchema` turns a payload schema into JSON Schema, from which
 * the example payload is built.
 */
export function runExamples(
  definition: MachineDefinition,
  graph: StateGraph,
  examples: ReadonlyMap<string, { before: string[]; after: string[] }>,
  jsonSchema: (schema: ZodType) => JsonSchema,
): ExampleRuns {
  let initial: MachineSnapshot;
  try {
    initial = initialize(definition, OPTIONS).snapshot;
  } catch {
    return { initial: null, events: new Map() };
  }
  const runs = new Map<string, ExampleRun>();
  const { paths, loops } = shortestPaths(graph, keyOf(initial.value));
  // Each snapshot reached, by graph node: a path is run once up to where examples share it.
  const reached = new Map<string, MachineSnapshot>([[keyOf(initial.value), initial]]);
  /**
   * Sends `type` in `snapshot` expecting node `to`. When a guard refuses (the context is still
   * the initial one), an event that stays in the node (an ADD_ITEM before a CHECKOUT that needs
   * an item) is sent first, then `type` again.
   */
  const step = (snapshot: MachineSnapshot, type: string, to: string): ExampleRun | null => {
    const direct = sendExample(definition, snapshot, type, jsonSchema);
    if (direct !== null && keyOf(direct.after.value) === to) return direct;
    const here = keyOf(snapshot.value);
    for (const loop of loops.get(here) ?? []) {
      if (loop === type) continue;
      const primed = sendExample(definition, snapshot, loop, jsonSchema);
      if (primed === null || keyOf(primed.after.value) !== here) continue;
      const retried = sendExample(definition, primed.after, type, jsonSchema);
      if (retried !== null && keyOf(retried.after.value) === to) return retried;
    }
    return null;
  };
  const reach = (key: string): MachineSnapshot | null => {
    const known = reached.get(key);
    if (known !== undefined) return known;
    const path = paths.get(key);
    if (path === undefined) return null;
    const from = reach(path.from);
    const run = from === null ? null : step(from, path.event, key);
    if (run === null) return null;
    reached.set(key, run.after);
    return run.after;
  };
  for (const [type, example] of examples) {
    const before = reach(keyOf(example.before));
    const run = before === null ? null : step(before, type, keyOf(example.after));
    if (run !== null) runs.set(type, run);
  }
  return { initial, events: runs };
}

/** Sends `type` with its example payload; `null` when there is none or the step fails. */
function sendExample(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  type: string,
  jsonSchema: (schema: ZodType) => JsonSchema,
): ExampleRun | null {
  // Automatic events (`@done`, `@timeout`, ...) are the runtime's, not sendable.
  if (type.startsWith('@') || snapshot.status === 'done') return null;
  const schema = definition.events.get(type)?.payload;
  let payload: JsonValue | null = null;
  let event: EventObject = { type };
  if (schema !== undefined) {
    try {
      payload = examplePayload(jsonSchema(schema));
    } catch {
      return null;
    }
    const parsed = payload === undefined ? null : schema.safeParse(payload);
    if (parsed === null || !parsed.success) return null;
    event = { type, payload: parsed.data as Record<string, unknown> };
  }
  try {
    const result = transition(definition, snapshot, event, OPTIONS);
    if (result.validationFailure !== null) return null;
    return { event, payload, before: snapshot, after: result.snapshot };
  } catch {
    return null;
  }
}

/**
 * By node key (sorted ids): the edge that reaches it first, breadth first from `start`, and the
 * sendable events that leave each node where it is (targetless transitions, self-loops).
 */
function shortestPaths(
  graph: StateGraph,
  start: string,
): {
  paths: Map<string, { from: string; event: string }>;
  loops: Map<string, string[]>;
} {
  const sortedKey = new Map(graph.nodes.map((node) => [node.key, keyOf(node.value)]));
  const outgoing = new Map<string, { to: string; event: string }[]>();
  const loops = new Map<string, string[]>();
  for (const edge of graph.edges) {
    // Automatic events cannot be sent: paths and loops use sendable events only.
    if (edge.event.startsWith('@')) continue;
    const from = sortedKey.get(edge.from)!;
    const to = sortedKey.get(edge.to)!;
    if (from === to) {
      const list = loops.get(from) ?? [];
      if (!list.includes(edge.event)) list.push(edge.event);
      loops.set(from, list);
      continue;
    }
    const list = outgoing.get(from) ?? [];
    list.push({ to, event: edge.event });
    outgoing.set(from, list);
  }
  const paths = new Map<string, { from: string; event: string }>();
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length > 0) {
    const key = queue.shift()!;
    for (const edge of outgoing.get(key) ?? []) {
      if (seen.has(edge.to)) continue;
      seen.add(edge.to);
      paths.set(edge.to, { from: key, event: edge.event });
      queue.push(edge.to);
    }
  }
  return { paths, loops };
}

/** A value as JSON carries it; `undefined` when it does not serialize. */
function asJson(value: unknown): JsonValue | undefined {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  } catch {
    return undefined;
  }
}

/**
 * The example of a route of the machine itself (create or an event route, not a forward or a
 * read): its payload and `data.output` before and after, resolved as the runtime resolves them
 * (`resolveOutput` with the endpoint's `output`). `null` without a run.
 */
export function routeExample(
  definition: MachineDefinition,
  route: Pick<PlannedRoute, 'handler' | 'eventType' | 'endpointIndex' | 'childMachineId'>,
  runs: ExampleRuns,
): ManifestRouteExample | null {
  try {
    if (route.handler === 'create') {
      if (runs.initial === null) return null;
      const outputAfter = asJson(resolveOutput(definition, runs.initial, null));
      return outputAfter === undefined ? null : { payload: null, outputBefore: null, outputAfter };
    }
    if (route.childMachineId !== null || route.eventType === null || route.endpointIndex === null)
      return null;
    const run = runs.events.get(route.eventType);
    const output = definition.endpoints[route.endpointIndex]?.output ?? null;
    if (run === undefined) return null;
    const outputBefore = asJson(
      resolveOutput(definition, run.before, output, { event: run.event }),
    );
    const outputAfter = asJson(resolveOutput(definition, run.after, output, { event: run.event }));
    if (outputBefore === undefined || outputAfter === undefined) return null;
    return { payload: run.payload, outputBefore, outputAfter };
  } catch {
    // An output behavior that throws on the example's context: no example output.
    return null;
  }
}
