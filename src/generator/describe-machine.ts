/**
 * What the documentation says about a machine, read from its definition: descriptions, the
 * transitions of each event, the Mermaid diagram, and examples that are true of the machine
 * (the state an instance is created in, a state each event really reaches, computed from the
 * reachable-state graph). Plain data for the manifest.
 */
import type { ZodType } from 'zod';
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import { availableEvents } from '../runtime/interpreter/available-events.js';
import { responseContext } from '../runtime/interpreter/output.js';
import { buildStateGraph, type StateGraph } from './analysis/state-graph.js';
import { machineDiagram } from './analysis/mermaid.js';
import type {
  JsonValue,
  ManifestEvent,
  ManifestMachineDocs,
  ManifestTransition,
} from './manifest.js';
import { compareCodeUnits } from './naming.js';
import { runExamples, type ExampleRuns } from './example-runs.js';
import type { JsonSchema } from './manifest.js';

/** The transitions of `eventType`, in document order of the states declaring them. */
function transitionsOf(definition: MachineDefinition, eventType: string): ManifestTransition[] {
  const transitions: ManifestTransition[] = [];
  const nodes = [...definition.idMap.values()].sort((a, b) => a.order - b.order);
  for (const node of nodes) {
    const transition = node.on.get(eventType);
    if (transition === undefined) continue;
    for (const branch of transition.branches) {
      transitions.push({
        from: node.id,
        to: branch.target?.id ?? null,
        guards: branch.guards.map((guard) => guard.name),
        description: branch.description ?? null,
      });
    }
  }
  return transitions;
}

function availableAt(definition: MachineDefinition, value: string[]): JsonValue[] {
  const final = value.some(
    (id) =>
      definition.idMap.get(id)?.parent === definition.root &&
      definition.idMap.get(id)?.type === 'final',
  );
  const events = availableEvents(definition, {
    machineId: definition.id,
    id: '',
    value,
    context: {},
    status: final ? 'done' : 'active',
    sequence: 0,
  });
  return events.map((event) => ({ ...event }) as { [key: string]: JsonValue });
}

/** The first edge of the graph (breadth first: nearest the initial state) sending each event. */
function eventExamples(
  definition: MachineDefinition,
  graph: StateGraph,
): Map<string, ManifestEvent['example']> {
  const examples = new Map<string, ManifestEvent['example']>();
  const nodes = new Map(graph.nodes.map((node) => [node.key, node]));
  for (const edge of graph.edges) {
    if (examples.has(edge.event)) continue;
    const before = nodes.get(edge.from)!.value;
    const after = nodes.get(edge.to)!.value;
    examples.set(edge.event, {
      before,
      after,
      availableEventsBefore: availableAt(definition, before),
      availableEventsAfter: availableAt(definition, after),
    });
  }
  return examples;
}

/**
 * The first reachable configuration (breadth first) in which no edge sends `eventType`, with
 * the events it accepts (what the runtime's 409 message lists).
 */
function refusingState(
  definition: MachineDefinition,
  graph: StateGraph,
  eventType: string,
): ManifestEvent['refusedIn'] {
  const accepting = new Set(
    graph.edges.filter((edge) => edge.event === eventType).map((edge) => edge.from),
  );
  const node = graph.nodes.find((candidate) => !accepting.has(candidate.key));
  if (node === undefined) return null;
  const accepts = new Set(
    availableAt(definition, node.value).map((event) => String((event as { type: JsonValue }).type)),
  );
  return { state: node.value, done: node.final, accepts: [...accepts] };
}

/**
 * The default output of a new instance: its context (once its entry actions ran, when the run
 * could start it) plus computed values.
 */
function initialOutput(
  definition: MachineDefinition,
  runs: ExampleRuns,
): { [key: string]: JsonValue } {
  try {
    let output: Record<string, unknown>;
    if (runs.initial !== null) output = responseContext(definition, runs.initial);
    else {
      const context = definition.createContext();
      output = { ...context };
      for (const [key, compute] of definition.computed) output[key] = compute({ context });
    }
    return JSON.parse(JSON.stringify(output)) as { [key: string]: JsonValue };
  } catch {
    // A context that does not serialize (or a computed value that throws) has no example.
    return {};
  }
}

/** What the documentation of a machine is computed from: its graph and its example runs. */
export interface MachineAnalysis {
  graph: StateGraph;
  examples: Map<string, ManifestEvent['example']>;
  runs: ExampleRuns;
}

/**
 * The reachable-state graph, each event's example edge, and the examples run through the
 * machine. `jsonSchema` (JSON Schema of a payload schema) lets events with a payload run;
 * without it only events without one do.
 */
export function analyzeMachine(
  definition: MachineDefinition,
  jsonSchema: (schema: ZodType) => JsonSchema = () => {
    throw new Error('no JSON Schema conversion');
  },
  /** Run the machine for example outputs (false: commands that only check, like `worker`). */
  withRuns = true,
): MachineAnalysis {
  const graph = buildStateGraph(definition);
  const examples = eventExamples(definition, graph);
  const edges = new Map(
    [...examples].flatMap(([type, example]) =>
      example === null ? [] : [[type, example] as const],
    ),
  );
  return {
    graph,
    examples,
    runs: withRuns ? runExamples(definition, graph, edges, jsonSchema) : NO_RUNS,
  };
}

// Without example runs the document falls back to the initial context (docs/generator.md).
const NO_RUNS: ExampleRuns = { initial: null, events: new Map() };

/** Documentation facts of one machine. */
export function describeMachine(
  definition: MachineDefinition,
  analysis: MachineAnalysis = analyzeMachine(definition),
): ManifestMachineDocs {
  const { graph, examples, runs } = analysis;
  const stateDescriptions: Record<string, string> = {};
  for (const node of definition.idMap.values()) {
    const description = node.config.description;
    if (node !== definition.root && description !== undefined && description.trim() !== '')
      stateDescriptions[node.id] = description.trim();
  }
  const events: Record<string, ManifestEvent> = {};
  const types = new Set<string>([...definition.eventTypes, ...examples.keys()]);
  for (const type of [...types].sort(compareCodeUnits)) {
    events[type] = {
      transitions: transitionsOf(definition, type),
      example: examples.get(type) ?? null,
      refusedIn: refusingState(definition, graph, type),
    };
  }
  const initialState = graph.initial[0]?.value ?? [];
  const forwardStates: Record<string, string[]> = {};
  for (const forward of definition.forwards) {
    // The first reachable configuration in which the delegating state is active.
    const node = graph.nodes.find((candidate) =>
      candidate.value.some((id) => id === forward.stateId || id.startsWith(`${forward.stateId}.`)),
    );
    forwardStates[forward.parentEventType] = node?.value ?? [forward.stateId];
  }
  return {
    description: definition.config.description?.trim() || null,
    diagram: machineDiagram(definition),
    stateDescriptions: Object.fromEntries(
      Object.entries(stateDescriptions).sort(([a], [b]) => compareCodeUnits(a, b)),
    ),
    initialState,
    initialAvailableEvents: availableAt(definition, initialState),
    initialOutput: initialOutput(definition, runs),
    events,
    flow: [...examples.keys()],
    forwardStates: Object.fromEntries(
      Object.entries(forwardStates).sort(([a], [b]) => compareCodeUnits(a, b)),
    ),
  };
}
