/**
 * Builds the RouteManifest from a loaded config. Routes come from the runtime's own
 * `planRegistration` (the function `MachineRouter.register` mounts), so generated code and a
 * run-time registration cannot disagree; this module only adds what emitters need on top:
 * JSON Schemas of payloads and outputs, and each machine's state ids.
 */
import path from 'node:path';
import type { MachineRoutesError } from '../runtime/errors.js';
import type { MachineDefinition } from '../runtime/definition/machine-definition.js';
import { isLeaf } from '../runtime/definition/state-node.js';
import type { ZodType } from 'zod';
import { declaredMiddleware, registrationName, type RegistrationConfig } from './config.js';
import type { LoadedConfig } from './load-config.js';
import type {
  JsonSchema,
  ManifestMachine,
  ManifestRegistration,
  ManifestRoute,
  RouteManifest,
} from './manifest.js';
import { analyzeMachine, describeMachine, type MachineAnalysis } from './describe-machine.js';
import { routeExample } from './example-runs.js';
import { compareCodeUnits, sortBy } from './naming.js';
import { validateConfig } from './validate-config.js';

/** The manifest, or every problem that keeps it from being built. */
export type ManifestResult =
  { ok: true; manifest: RouteManifest } | { ok: false; issues: MachineRoutesError[] };

/** Options of {@link buildManifest}. */
export interface BuildManifestOptions {
  loaded: LoadedConfig;
  /** Output directory (absolute): the manifest records the config's path relative to it. */
  outputDir: string;
  /**
   * Run each machine in memory for the document's example outputs (default true). Commands that
   * only check the config before running (`worker`, `timers`, `instances`) leave it off: the
   * runs call the machine's actions, which must not run at their start.
   */
  exampleRuns?: boolean;
}

const ANY_OBJECT: JsonSchema = { type: 'object' };

/** What `data.state` can hold (leaf state ids), and the facts of the state tree emitters need. */
function describeStates(definition: MachineDefinition): Omit<MachineInfo, 'definition'> {
  const nodes = [...definition.idMap.values()];
  return {
    stateIds: nodes
      .filter(isLeaf)
      .map((node) => node.id)
      .sort(compareCodeUnits),
    hasRegions: nodes.some((node) => node.type === 'parallel'),
    hasStateOutput: nodes.some((node) => node.output !== null),
    children: nodes.map((node) => node.delegation?.machine).filter(isMachineDefinition),
  };
}

function isMachineDefinition(value: unknown): value is MachineDefinition {
  return (
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'machine'
  );
}

/** A JSON Schema of a zod schema, embeddable in OpenAPI (no `$schema` key). */
function toJsonSchema(loaded: LoadedConfig, schema: ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = loaded.zod.z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    // A transform or a date has no JSON Schema: describe it as "any" rather than failing.
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

function isZodSchema(value: unknown): value is ZodType {
  return typeof value === 'object' && value !== null && '_zod' in value;
}

/** JSON Schema of the default output: the context plus computed values. */
function contextSchema(loaded: LoadedConfig, definition: MachineDefinition): JsonSchema {
  const context = definition.config.context;
  const computed = Object.keys(definition.behavior.computed ?? {});
  let base: JsonSchema;
  if (isZodSchema(context)) {
    base = toJsonSchema(loaded, context, 'output');
  } else {
    // A plain initial context: its keys are known, their types only as far as the initial values say.
    const properties: Record<string, JsonSchema> = {};
    for (const [key, value] of Object.entries(context ?? {}))
      properties[key] = schemaOfValue(value);
    base = { type: 'object', properties, required: Object.keys(properties) };
  }
  if (computed.length === 0) return base;
  const properties = { ...((base['properties'] as Record<string, JsonSchema> | undefined) ?? {}) };
  for (const key of computed) properties[key] = {};
  const { additionalProperties: _closed, ...open } = base;
  return { ...open, properties };
}

function schemaOfValue(value: unknown): JsonSchema {
  if (typeof value === 'string') return { type: 'string' };
  if (typeof value === 'number') return { type: 'number' };
  if (typeof value === 'boolean') return { type: 'boolean' };
  if (Array.isArray(value)) return { type: 'array' };
  if (typeof value === 'object' && value !== null) return { type: 'object' };
  // null or undefined initially: the type is only known at run time.
  return {};
}

function pickKeys(schema: JsonSchema, keys: readonly string[]): JsonSchema {
  const properties = (schema['properties'] as Record<string, JsonSchema> | undefined) ?? {};
  const picked = Object.fromEntries(keys.map((key) => [key, properties[key] ?? {}]));
  return { type: 'object', properties: picked };
}

interface MachineInfo {
  definition: MachineDefinition;
  stateIds: string[];
  hasRegions: boolean;
  hasStateOutput: boolean;
  children: MachineDefinition[];
}

function outputSchema(
  loaded: LoadedConfig,
  route: ManifestRouteBase,
  machine: MachineInfo,
  machines: Map<string, MachineInfo>,
): JsonSchema {
  const keys = route.output.kind === 'keys' ? route.output.keys : null;
  if (route.childMachineId !== null) {
    // A forward answers with the child's context (data.child.output), filtered by an output key list.
    const child = machines.get(route.childMachineId);
    if (child === undefined) return ANY_OBJECT;
    const context = contextSchema(loaded, child.definition);
    return keys === null ? context : pickKeys(context, keys);
  }
  if (route.output.kind === 'behavior') return ANY_OBJECT;
  return keys === null
    ? defaultOutputSchema(loaded, machine)
    : pickKeys(contextSchema(loaded, machine.definition), keys);
}

/** What an instance answers with when nothing else is configured. */
function defaultOutputSchema(loaded: LoadedConfig, machine: MachineInfo): JsonSchema {
  // A state-level output replaces the context in some states: only "an object" is certain.
  return machine.hasStateOutput ? ANY_OBJECT : contextSchema(loaded, machine.definition);
}

type ManifestRouteBase = Omit<
  ManifestRoute,
  'payloadSchema' | 'outputSchema' | 'scenarios' | 'example'
>;

function payloadSchema(
  loaded: LoadedConfig,
  route: ManifestRouteBase,
  definition: MachineDefinition,
): JsonSchema | null {
  if (route.endpointIndex === null) return null;
  const event =
    route.childMachineId === null
      ? definition.endpoints[route.endpointIndex]?.event
      : definition.forwards[route.endpointIndex]?.childEvent;
  return event?.payload === undefined ? null : toJsonSchema(loaded, event.payload, 'input');
}

/** The registrations' machines and the children they delegate to, by definition id. */
export function collectMachineDefinitions(
  registrations: readonly RegistrationConfig[],
): Map<string, MachineDefinition> {
  return new Map(
    [...collectMachines(registrations)].map(([id, info]) => [id, info.definition] as const),
  );
}

function collectMachines(registrations: readonly RegistrationConfig[]): Map<string, MachineInfo> {
  const machines = new Map<string, MachineInfo>();
  const add = (definition: MachineDefinition): void => {
    if (machines.has(definition.id)) return;
    const info = { definition, ...describeStates(definition) };
    machines.set(definition.id, info);
    info.children.forEach(add);
  };
  registrations.forEach((registration) => add(registration.machine));
  return machines;
}

/**
 * Plans every registration with the runtime and assembles the manifest. Router problems are
 * collected across all registrations and returned together.
 */
export function buildManifest(options: BuildManifestOptions): ManifestResult {
  const { loaded } = options;
  const issues: MachineRoutesError[] = [
    ...loaded.definitionIssues,
    ...validateConfig(loaded.config),
  ];
  // What the run time will provide, so unknown middleware and models fail here and not at boot.
  const context = {
    middleware: declaredMiddleware(loaded.config),
    models: Object.keys(loaded.config.models ?? {}),
  };
  const machines = collectMachines(loaded.config.registrations);
  // Each machine's graph and example runs, once: routes and machine docs read them.
  const analyses = new Map<string, MachineAnalysis>();
  const analysisOf = (definition: MachineDefinition): MachineAnalysis => {
    let analysis = analyses.get(definition.id);
    if (analysis === undefined) {
      analysis = analyzeMachine(
        definition,
        (schema) => toJsonSchema(loaded, schema, 'input'),
        options.exampleRuns !== false,
      );
      analyses.set(definition.id, analysis);
    }
    return analysis;
  };
  issues.push(
    ...loaded.runtime.checkTimerRegistrations(
      [...machines.values()].map((info) => info.definition),
      loaded.config.timers,
    ),
  );
  const registrations: ManifestRegistration[] = [];
  for (const registration of loaded.config.registrations) {
    const { machine, ...routerOptions } = registration;
    const plan = loaded.runtime.planRegistration(machine, routerOptions);
    issues.push(
      ...plan.issues,
      ...loaded.runtime.validateRouteNames(plan.routes, routerOptions, context),
    );
    const info = machines.get(machine.id)!;
    const routes: ManifestRoute[] = plan.routes.map((route) => ({
      ...route,
      payloadSchema: payloadSchema(loaded, route, machine),
      outputSchema: outputSchema(loaded, route, info, machines),
      // Event routes of the machine itself: not create, not reads, not forwards.
      scenarios:
        loaded.config.scenarios === true &&
        route.eventType !== null &&
        route.handler !== 'create' &&
        route.childMachineId === null,
      example: routeExample(machine, route, analysisOf(machine).runs),
    }));
    registrations.push({
      name: registrationName(registration),
      machineId: machine.id,
      prefix: routerOptions.prefix,
      routes,
    });
  }
  if (issues.length > 0) return { ok: false, issues };

  const manifestMachines: ManifestMachine[] = sortBy(
    [...machines.values()],
    (info) => info.definition.id,
  ).map((info) => ({
    id: info.definition.id,
    stateIds: info.stateIds,
    eventTypes: [...info.definition.eventTypes].sort(compareCodeUnits),
    forwardedEventTypes: info.definition.forwards
      .map((forward) => forward.parentEventType)
      .sort(compareCodeUnits),
    hasRegions: info.hasRegions,
    scenarioSlugs: [...info.definition.scenarios.keys()].sort(compareCodeUnits),
    outputSchema: defaultOutputSchema(loaded, info),
    ...describeMachine(info.definition, analysisOf(info.definition)),
  }));
  const configModule = path
    .relative(options.outputDir, loaded.file)
    .split(path.sep)
    .join('/')
    .replace(/\.ts$/, '.js');
  return {
    ok: true,
    manifest: {
      manifestVersion: 1,
      configModule: configModule.startsWith('.') ? configModule : `./${configModule}`,
      machines: manifestMachines,
      registrations: sortBy(registrations, (registration) => registration.name),
      middleware: declaredMiddleware(loaded.config).sort(compareCodeUnits),
    },
  };
}
