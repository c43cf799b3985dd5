/**
 * The route manifest: the one plain-data description of an application that every emitter
 * reads. It is built from the runtime's own planning functions (build-manifest.ts) and must
 * survive `JSON.parse(JSON.stringify(manifest))`: no functions, classes, Maps or undefined.
 */
import type { PlannedRoute } from '../runtime/http/types.js';

/** A JSON Schema document (draft 2020-12), as produced by `z.toJSONSchema`. */
export type JsonSchema = { [key: string]: JsonValue };

/** Any JSON value. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * One HTTP route: the runtime's planned route (the very table `MachineRouter.register` mounts)
 * plus the JSON Schemas the emitters need.
 */
export interface ManifestRoute extends PlannedRoute {
  /** JSON Schema of `payload` (request body or GET query); `null` when the event has none. */
  payloadSchema: JsonSchema | null;
  /**
   * JSON Schema of `data.output`; on forwarded routes, of `data.child.output` (the child's
   * context, filtered by an output key list).
   */
  outputSchema: JsonSchema;
  /**
   * The route reads `scenario` / `scenarioParams` and may answer `availableScenarios` /
   * `activeScenario`: the config documents scenarios (`scenarios: true`) and the route sends
   * an event of its own machine (not create, not a forward).
   */
  scenarios: boolean;
  /**
   * The route's example, run through the machine at generate time (example-runs.ts): the
   * payload sent and the `data.output` the runtime answers before and after it. `null` when no
   * run could be made (the document then shows the graph's states and the initial output) and
   * on forwarded and read routes.
   */
  example: ManifestRouteExample | null;
}

/** A route's example, run in memory from a new instance along the shortest path. */
export interface ManifestRouteExample {
  /** The request's `payload`; `null` for an event without a payload schema (and create). */
  payload: JsonValue | null;
  /** `data.output` in the state the event is sent in (a 423 shows it); `null` on create. */
  outputBefore: JsonValue | null;
  /** `data.output` of the answer: after the event (on create, of the new instance). */
  outputAfter: JsonValue;
}

/** One transition of an event: the state declaring it, its target, the guards of the branch. */
export interface ManifestTransition {
  /** Full id of the declaring state (the machine id when declared at the root). */
  from: string;
  /** Full id of the target; `null` for a targetless transition (the state does not change). */
  to: string | null;
  guards: string[];
  /** The transition's `description`. */
  description: string | null;
}

/** An event sent in a reachable state, and the state it leads to (nearest the initial state). */
export interface ManifestEventExample {
  before: string[];
  after: string[];
  /** `availableEvents` of the instance in `before` / `after` (own events, no forwards). */
  availableEventsBefore: JsonValue[];
  availableEventsAfter: JsonValue[];
}

/** What the documentation says about one event of a machine. */
export interface ManifestEvent {
  transitions: ManifestTransition[];
  /** `null` when no reachable state accepts the event. */
  example: ManifestEventExample | null;
  /**
   * A reachable state that does not accept the event (what a 409 reports), and the events it
   * accepts (its availableEvents' types, which the 409 message lists); `null`: none.
   */
  refusedIn: { state: string[]; done: boolean; accepts: string[] } | null;
}

/** Documentation facts of a machine, read from its definition (describe-machine.ts). */
export interface ManifestMachineDocs {
  /** The machine's `description`. */
  description: string | null;
  /** Mermaid `stateDiagram-v2` source. */
  diagram: string;
  /** `description` of the states that have one, by full state id. */
  stateDescriptions: Record<string, string>;
  /** `data.state` of a new instance. */
  initialState: string[];
  initialAvailableEvents: JsonValue[];
  /** The default output of a new instance (initial context and computed values). */
  initialOutput: { [key: string]: JsonValue };
  /** By event type, sorted. */
  events: Record<string, ManifestEvent>;
  /**
   * Event types in the order the machine's flow first sends them, breadth first from the
   * initial state (the reference lists operations so); events never sent are left out.
   */
  flow: string[];
  /** Forwarded events (parent-facing type): a reachable state in which the child runs. */
  forwardStates: Record<string, string[]>;
}

/** A machine definition, as far as the emitted files need it. */
export interface ManifestMachine extends ManifestMachineDocs {
  /** Definition id (`order`): prefix of every state id and the OpenAPI tag. */
  id: string;
  /** Every state id an instance can report in `data.state`, sorted. */
  stateIds: string[];
  /** Every user-sendable event type, sorted. */
  eventTypes: string[];
  /** Events that reach this machine through a forward (listed with `source: 'forward'`). */
  forwardedEventTypes: string[];
  /** Whether some state of the machine is parallel (availableEvents entries carry `region`). */
  hasRegions: boolean;
  /** Slugs of the machine's scenarios, sorted. */
  scenarioSlugs: string[];
  /** JSON Schema of the default `data.output`: the context plus computed values. */
  outputSchema: JsonSchema;
}

/** One `MachineRouter.register` call of the config. */
export interface ManifestRegistration {
  /** Route-name prefix (defaults to the machine id); unique in a manifest. */
  name: string;
  /** Definition id of the registered machine. */
  machineId: string;
  prefix: string;
  routes: ManifestRoute[];
}

/** The whole application: what `generate` emits files from. */
export interface RouteManifest {
  /** Format version of this structure (not a package version). */
  manifestVersion: 1;
  /** The config file, relative to the output directory, `/`-separated: generated server code imports it. */
  configModule: string;
  /** Registered machines and their forwarding children, sorted by id. */
  machines: ManifestMachine[];
  /** Registrations sorted by name. */
  registrations: ManifestRegistration[];
  /** Declared middleware names, sorted. */
  middleware: string[];
}

/** One file an emitter produces: a path relative to the output directory and its text. */
export interface GeneratedFile {
  path: string;
  contents: string;
  /**
   * Blocks already in their final layout (large data tables), kept out of prettier: `contents`
   * holds `verbatimPlaceholder(index)` where block `index` goes, right after a
   * `// prettier-ignore` comment, so that formatting the finished file changes nothing.
   * Formatting splices them in; formatted files have none left.
   */
  verbatim?: readonly string[];
  /**
   * True when the emitter laid `contents` out as prettier would (flat-layout.ts): formatting
   * leaves it as it is, apart from splicing in the verbatim blocks.
   */
  formatted?: boolean;
}

/** The placeholder of verbatim block `index` in a file's unformatted contents. */
export function verbatimPlaceholder(index: number): string {
  return `__machine_routes_verbatim_${index}__`;
}

/**
 * The placeholder of verbatim block `index` when the block is whole lines (complete statements,
 * with their own indentation): a line comment, which formatting keeps on its own line and the
 * splice replaces, indentation included.
 */
export function verbatimLine(index: number): string {
  return `// ${verbatimPlaceholder(index)}`;
}
