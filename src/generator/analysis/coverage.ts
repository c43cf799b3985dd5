/**
 * Transition coverage: what test runs recorded (the configurations before and after each
 * event, the states entered) against a machine's state graph, the graph `paths` reads. A
 * transition is an edge of the graph (configuration, event, configuration); a state is a leaf
 * of a reachable configuration. Pure: the caller reads the recorded files.
 */
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import type { VisitedTransition } from './paths.js';
import { buildStateGraph } from './state-graph.js';

/** What runs recorded for one machine (`machine-routes/testing` writes it per test runtime). */
export interface RecordedCoverage {
  transitions: readonly VisitedTransition[];
  /** Leaf state ids ever active. */
  states: readonly string[];
}

/** One machine's coverage. */
export interface MachineCoverage {
  machineId: string;
  transitions: { total: number; covered: number; missing: VisitedTransition[] };
  states: { total: number; covered: number; missing: string[] };
  /** The graph stopped at its node limit: the totals are lower bounds. */
  truncated: boolean;
}

/** The identity of a transition: configuration before, event, configuration after. */
export function transitionKey(t: VisitedTransition): string {
  return `${t.from.join(',')} ${t.event} ${t.to.join(',')}`;
}

/** Merges recorded data of several runs (files) into one per machine id. */
export function mergeRecorded(
  runs: readonly Readonly<Record<string, RecordedCoverage>>[],
): Map<string, RecordedCoverage> {
  const merged = new Map<string, { transitions: VisitedTransition[]; states: Set<string> }>();
  for (const run of runs) {
    for (const [machineId, data] of Object.entries(run)) {
      const entry = merged.get(machineId) ?? { transitions: [], states: new Set<string>() };
      entry.transitions.push(...data.transitions);
      for (const state of data.states) entry.states.add(state);
      merged.set(machineId, entry);
    }
  }
  return new Map(
    [...merged].map(([id, entry]) => [
      id,
      { transitions: entry.transitions, states: [...entry.states] },
    ]),
  );
}

/**
 * The coverage of `definition` by `recorded` (none: nothing covered). Edges of the graph are
 * counted once each, in discovery order; transitions recorded outside the graph (an instance
 * started by a test in a configuration the graph never reaches) count for nothing.
 */
export function machineCoverage(
  definition: MachineDefinition,
  recorded: RecordedCoverage | undefined,
): MachineCoverage {
  const graph = buildStateGraph(definition);
  const seen = new Set((recorded?.transitions ?? []).map(transitionKey));
  const edges = new Map<string, VisitedTransition>();
  const values = new Map(graph.nodes.map((node) => [node.key, node.value]));
  for (const edge of graph.edges) {
    const transition = {
      from: values.get(edge.from)!,
      event: edge.event,
      to: values.get(edge.to)!,
    };
    edges.set(transitionKey(transition), transition);
  }
  const missingTransitions = [...edges].filter(([key]) => !seen.has(key)).map(([, t]) => t);
  const states = [...new Set(graph.nodes.flatMap((node) => node.value))];
  const entered = new Set(recorded?.states ?? []);
  const missingStates = states.filter((state) => !entered.has(state));
  return {
    machineId: definition.id,
    transitions: {
      total: edges.size,
      covered: edges.size - missingTransitions.length,
      missing: missingTransitions,
    },
    states: {
      total: states.length,
      covered: states.length - missingStates.length,
      missing: missingStates,
    },
    truncated: graph.truncated,
  };
}
