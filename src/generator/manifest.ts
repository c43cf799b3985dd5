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
}

/** A machine definition, as far as the emitted files need it. */
export interface ManifestMachine {
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
}

/** The placeholder of verbatim block `index` in a file's unformatted contents. */
export function verbatimPlaceholder(index: number): string {
  return `__machine_routes_verbatim_${index}__`;
}
