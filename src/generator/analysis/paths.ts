/**
 * Path analysis (the spec's path-analysis command, "Limits": `--max-paths`, 1000 by default):
 * every way from the initial configuration to a final one, as the events sent, the guards that
 * passed and the states visited. A path never visits a configuration twice, so a loop shows as
 * the paths around it, never unrolled. Pure: reads the state graph only.
 */
import type { HistoryRecord } from '../../runtime/interpreter/types.js';
import type { GraphEdge, GraphStep, StateGraph } from './state-graph.js';

/** The spec's default of `--max-paths`. */
export const DEFAULT_MAX_PATHS = 1000;

/** One way from the initial state to a final state. */
export interface MachinePath {
  /** The final configuration reached (state ids). */
  final: string[];
  /** Configurations visited, the initial one first (state ids of each). */
  states: string[][];
  /** Events sent by a client (or a child / timer: `@done`, `@timeout`), in order. */
  events: string[];
  /** Every microstep, automatic ones (`@always`, `@done`) included, with the guards taken. */
  steps: GraphStep[];
}

/** What {@link enumeratePaths} found. */
export interface PathReport {
  machineId: string;
  maxPaths: number;
  /** True when enumeration stopped at `maxPaths` (more paths exist). */
  truncated: boolean;
  paths: MachinePath[];
  /** Final configurations no path reaches from the initial state (sorted keys): none expected. */
  unreachableFinals: string[];
}

/**
 * Depth-first, in the graph's edge order: the paths from each initial configuration to every
 * final configuration, at most `maxPaths` of them.
 */
export function enumeratePaths(
  graph: StateGraph,
  maxPaths: number = DEFAULT_MAX_PATHS,
): PathReport {
  const outgoing = new Map<string, GraphEdge[]>();
  for (const edge of graph.edges) {
    if (edge.from === edge.to) continue;
    const list = outgoing.get(edge.from) ?? [];
    list.push(edge);
    outgoing.set(edge.from, list);
  }
  const nodes = new Map(graph.nodes.map((node) => [node.key, node]));
  const paths: MachinePath[] = [];
  let truncated = false;
  const onPath = new Set<string>();
  const trail: GraphEdge[] = [];

  const walk = (key: string, start: string): void => {
    if (truncated) return;
    const node = nodes.get(key)!;
    if (node.final) {
      if (paths.length >= maxPaths) {
        truncated = true;
        return;
      }
      paths.push(pathOf(nodes, start, trail, node.value));
      return;
    }
    onPath.add(key);
    for (const edge of outgoing.get(key) ?? []) {
      if (onPath.has(edge.to)) continue;
      trail.push(edge);
      walk(edge.to, start);
      trail.pop();
      if (truncated) break;
    }
    onPath.delete(key);
  };
  for (const initial of graph.initial) walk(initial.key, initial.key);

  const reached = new Set(paths.map((path) => path.final.join(',')));
  const unreachableFinals = truncated
    ? []
    : graph.nodes
        .filter((node) => node.final && !reached.has(node.key))
        .map((node) => node.key)
        .sort();
  return { machineId: graph.machineId, maxPaths, truncated, paths, unreachableFinals };
}

function pathOf(
  nodes: ReadonlyMap<string, { value: string[] }>,
  start: string,
  trail: readonly GraphEdge[],
  final: string[],
): MachinePath {
  return {
    final,
    states: [nodes.get(start)!.value, ...trail.map((edge) => nodes.get(edge.to)!.value)],
    events: trail.map((edge) => edge.event),
    steps: trail.flatMap((edge) => edge.steps),
  };
}

/** One path as a line: `order.draft -SUBMIT-> order.submitted -APPROVE [withinLimit]-> order.approved`. */
export function formatPath(path: MachinePath): string {
  let line = path.states[0]!.join(' + ');
  path.steps.forEach((step) => {
    const guards = step.guards.length > 0 ? ` [${step.guards.join(', ')}]` : '';
    line += ` -${step.event}${guards}-> ${step.to.join(' + ')}`;
  });
  return line;
}

/** An observed transition: the state before an event, the event, the state after. */
export interface VisitedTransition {
  from: string[];
  event: string;
  to: string[];
}

/** Which paths a set of observed transitions covers, and which events of each it missed. */
export interface PathCoverage {
  covered: MachinePath[];
  uncovered: { path: MachinePath; missing: VisitedTransition[] }[];
}

/**
 * A path is covered when every one of its edges (state before, event, state after) was observed:
 * the original's use of paths to tell which flows a test suite exercised.
 */
export function pathCoverage(
  report: PathReport,
  visited: readonly VisitedTransition[],
): PathCoverage {
  const key = (t: VisitedTransition): string => `${t.from.join(',')} ${t.event} ${t.to.join(',')}`;
  const seen = new Set(visited.map(key));
  const coverage: PathCoverage = { covered: [], uncovered: [] };
  for (const path of report.paths) {
    const edges = path.events.map((event, index) => ({
      from: path.states[index]!,
      event,
      to: path.states[index + 1]!,
    }));
    const missing = edges.filter((edge) => !seen.has(key(edge)));
    if (missing.length === 0) coverage.covered.push(path);
    else coverage.uncovered.push({ path, missing });
  }
  return coverage;
}

/**
 * The transitions one instance's history shows: each external event with the state before it
 * (where the previous macrostep ended) and after it (where its own macrostep ended).
 */
export function transitionsOfHistory(records: readonly HistoryRecord[]): VisitedTransition[] {
  const sorted = [...records].sort((a, b) => a.sequence - b.sequence);
  const visited: VisitedTransition[] = [];
  let settled: string[] | null = null;
  let pending: { from: string[]; event: string } | null = null;
  let current: string[] = [];
  for (const record of sorted) {
    if (record.source === 'external') {
      if (pending !== null) visited.push({ ...pending, to: current });
      settled = current;
      pending = { from: settled, event: record.type };
    }
    current = record.value;
  }
  if (pending !== null) visited.push({ ...pending, to: current });
  return visited;
}
