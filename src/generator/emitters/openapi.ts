/**
 * Emits `openapi.json`, an OpenAPI 3.1 document of every route of the manifest.
 *
 * Every named schema (error bodies, state ids, availableEvents entries, each route's payload
 * and success body) is a component built once by `buildComponentSchemas`; the client emitter
 * prints its types from the same components, so the document and the client cannot disagree.
 */
import type { GeneratedFile, JsonSchema, ManifestRoute, RouteManifest } from '../manifest.js';
import { verbatimPlaceholder } from '../manifest.js';
import { compareCodeUnits, sortBy } from '../naming.js';
import { GENERATED_HEADER } from '../templates.js';
import type { MachinesById } from './openapi-examples.js';
import { machineTagDescription, pathParameterDescription } from './openapi-text.js';
import { withAdminGroup } from './openapi-admin.js';
import { optionsOperations } from './openapi-http-surface.js';
import { webhookItem } from './openapi-callbacks.js';
import { buildComponentSchemas } from './openapi-components.js';
import { BEARER_AUTH_SCHEME, isProtected, operation } from './openapi-operation.js';
import { SHARED_RESPONSES, sharedResponses } from './openapi-responses.js';
import type { EmitOptions } from './types.js';

// The names, the error answers, the components and the operations moved to modules of their
// own; their importers keep this one.
export * from './openapi-names.js';
export { errorResponses, type ErrorResponse } from './openapi-responses.js';
export { buildComponentSchemas } from './openapi-components.js';
export { BEARER_AUTH_SCHEME, isProtected } from './openapi-operation.js';

const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** The document's server when the config names none: the origin serving it. */
const DEFAULT_SERVER = { url: '/', description: 'The server that serves this document' };

const DEFAULT_BEARER_AUTH_DESCRIPTION =
  'Send `Authorization: Bearer <token>`. The roles of a requirement name the guards of the route (`auth:<guard>`) the token must be valid for.';

function usedResponses(...groups: Record<string, Record<string, JsonSchema>>[]): Set<string> {
  const used = new Set<string>();
  for (const item of groups.flatMap((paths) => Object.values(paths)))
    for (const op of Object.values(item))
      for (const response of Object.values(op['responses'] as Record<string, JsonSchema>)) {
        const target = response['$ref'];
        if (typeof target === 'string') used.add(target.slice(target.lastIndexOf('/') + 1));
      }
  return used;
}

/**
 * The routes in the order a reader follows a machine (Redoc lists a tag's operations in the
 * order of `paths`): by registration, create first, then each event where the machine's flow
 * first sends it (breadth first from the initial state), then reads and streams; path and
 * method settle the rest, so the order is deterministic.
 */
function inFlowOrder(routes: readonly ManifestRoute[], machines: MachinesById): ManifestRoute[] {
  const rank = (route: ManifestRoute): string => {
    const flow = machines.get(route.machineId)?.flow ?? [];
    const step = route.eventType === null ? -1 : flow.indexOf(route.eventType);
    const kind =
      route.handler === 'create' ? 0 : route.read !== null || route.eventType === null ? 2 : 1;
    const position = step === -1 ? flow.length : step;
    return `${route.registration}\u0000${kind}${String(position).padStart(6, '0')}\u0000${route.path} ${route.method}`;
  };
  return sortBy(routes, rank);
}

/** Builds the OpenAPI 3.1 document as a plain object (exported for tests and the client emitter). */
export function buildOpenApiDocument(manifest: RouteManifest, options: EmitOptions): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const routes = manifest.registrations.flatMap((registration) => registration.routes);
  const machines: MachinesById = new Map(manifest.machines.map((machine) => [machine.id, machine]));
  // Provider webhooks are the document's `webhooks` (OpenAPI 3.1), not operations of `paths`.
  const webhooks: Record<string, Record<string, JsonSchema>> = {};
  for (const route of sortBy(
    routes.filter((route) => route.handler === 'webhook'),
    (route) => route.name,
  ))
    webhooks[route.name] = webhookItem(route);
  const optionsByPath = optionsOperations(routes, {
    sharedResponse: (status) => ({
      $ref: `#/components/responses/${SHARED_RESPONSES[status].name}`,
    }),
    security: (guards) => [{ [BEARER_AUTH_SCHEME]: [...guards].sort(compareCodeUnits) }],
    pathParameter: (route, name) => pathParameterDescription(route, name),
  });
  for (const route of inFlowOrder(
    routes.filter((route) => route.handler !== 'webhook'),
    machines,
  )) {
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase()] = operation(route, machines);
  }
  // The OPTIONS operation of each path, after its other operations; instance paths
  // (`{prefix}/{machineId}`) have no other, and come after the registration's routes.
  for (const [path, op] of optionsByPath) (paths[path] ??= {})['options'] = op;
  const info: JsonSchema = { title: options.openapi.title, version: options.openapi.version };
  if (options.openapi.description !== null) info['description'] = options.openapi.description;
  const license = options.openapi.license ?? null;
  if (license !== null) info['license'] = { ...license };
  const components: JsonSchema = {
    schemas: buildComponentSchemas(manifest),
    responses: sharedResponses(usedResponses(paths, webhooks)),
  };
  // Declared only when some route uses it: operations without `security` are public.
  if (routes.some(isProtected)) {
    components['securitySchemes'] = {
      [BEARER_AUTH_SCHEME]: {
        type: 'http',
        scheme: 'bearer',
        description: options.openapi.bearerAuthDescription ?? DEFAULT_BEARER_AUTH_DESCRIPTION,
      },
    };
  }
  return withAdminGroup(options.admin ?? null, {
    openapi: '3.1.0',
    info,
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    servers: options.openapi.servers ?? [DEFAULT_SERVER],
    // Operations are public unless they say otherwise (routes behind `auth` carry their own).
    security: [],
    tags: [...new Set(routes.map((route) => route.machineId))]
      .sort(compareCodeUnits)
      .map((name) => ({ name, description: machineTagDescription(machines.get(name)!) })),
    paths,
    ...(Object.keys(webhooks).length === 0 ? {} : { webhooks }),
    components,
  });
}

/**
 * Emits `openapi.json` (already in its final layout: JSON.stringify with two spaces) and each
 * machine's state diagram, `diagrams/<machine>.gen.mmd` (the Mermaid source its tag embeds).
 */
export function emitOpenApi(manifest: RouteManifest, options: EmitOptions): GeneratedFile[] {
  const json = `${JSON.stringify(buildOpenApiDocument(manifest, options), null, 2)}\n`;
  // The served reference reads the document from a module: a file beside the app would need
  // `import.meta.url`, which a CommonJS build of the app cannot compile.
  const served =
    (options.docs ?? null) === null
      ? []
      : [
          {
            path: 'openapi.gen.ts',
            contents: `${GENERATED_HEADER}\n// prettier-ignore\n${verbatimPlaceholder(0)}\n`,
            verbatim: [`export const openapiDocument = ${JSON.stringify(json)};`],
          },
        ];
  return [
    { path: 'openapi.json', contents: json },
    ...served,
    ...manifest.machines.map((machine) => ({
      path: `diagrams/${machine.id}.gen.mmd`,
      contents: machine.diagram,
    })),
  ];
}
