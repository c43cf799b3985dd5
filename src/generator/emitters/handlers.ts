/**
 * Emits the server side for the chosen framework: one routes file per registration (payload
 * types and its planned routes as one data table, a route per line), `machines.gen.ts`
 * (definitions taken from the config), `app.gen.ts` (`buildApp` on the runtime's store, which
 * mounts every table with one generic call) and `server.gen.ts` (an entry that listens and
 * prints the URL and a curl to try).
 */
import { isFlatLine, setAsideFlatLines } from '../flat-layout.js';
import {
  verbatimPlaceholder,
  type GeneratedFile,
  type ManifestRegistration,
  type ManifestRoute,
  type RouteManifest,
} from '../manifest.js';
import { camelCase } from '../naming.js';
import { schemaToType } from '../schema-to-type.js';
import { renderTemplate } from '../templates.js';
import { printLiteral } from '../ts-literal.js';
import { payloadSchemaName } from './openapi.js';
import type { EmitOptions } from './types.js';

/** File name of a registration's routes, without directories: `order-admin.routes.gen.ts`. */
export function routesFileName(registration: ManifestRegistration): string {
  return `${registration.name.replace(/[^A-Za-z0-9_-]+/g, '-')}.routes.gen.ts`;
}

/** What a reader looks for first in a route; any other key follows in code-unit order. */
const ROUTE_KEY_ORDER = [
  'name',
  'method',
  'path',
  'handler',
  'eventType',
  'read',
  'endpointIndex',
  'binding',
  'middleware',
  'status',
  'availableEvents',
  'output',
];

/** The planned route alone (schemas and examples are for emitters), as a one-line literal. */
function plannedRouteLiteral(route: ManifestRoute): string {
  const {
    payloadSchema: _payload,
    outputSchema: _output,
    scenarios: _scenarios,
    example: _example,
    ...planned
  } = route;
  return printLiteral(planned, ROUTE_KEY_ORDER);
}

function routesView(registration: ManifestRegistration) {
  const payloads = registration.routes
    .filter((route) => route.payloadSchema !== null)
    .map((route) => ({
      name: payloadSchemaName(route),
      routeName: route.name,
      eventType: route.eventType,
      type: schemaToType(route.payloadSchema!, () => 'unknown'),
    }));
  return {
    registration: registration.name,
    machineId: registration.machineId,
    machineIdLiteral: printLiteral(registration.machineId),
    routeCount: registration.routes.length,
    payloads,
    routesName: `${camelCase(registration.name)}Routes`,
    table: verbatimPlaceholder(0),
  };
}

/** The route table in its final layout: one route per line (spliced in after formatting). */
function routeTable(registration: ManifestRegistration): string {
  if (registration.routes.length === 0) return '[]';
  return `[\n${registration.routes.map((route) => `  ${plannedRouteLiteral(route)},\n`).join('')}]`;
}

/** A public route worth trying first: a create route, else a stateless one; none when all need credentials. */
function tryRoute(
  manifest: RouteManifest,
): { method: string; path: string; curlTail: string } | null {
  const routes = manifest.registrations.flatMap((registration) => registration.routes);
  const route =
    routes.find(
      (candidate) => candidate.handler === 'create' && candidate.middleware.length === 0,
    ) ??
    routes.find(
      (candidate) => candidate.binding.kind === 'none' && candidate.middleware.length === 0,
    ) ??
    null;
  if (route === null) return null;
  const body =
    route.handler === 'create' ? '' : ` -H 'content-type: application/json' -d '{"payload":{}}'`;
  return { method: route.method, path: route.path, curlTail: body };
}

/** Emits every server-side file for `options.framework`. */
export function emitHandlers(manifest: RouteManifest, options: EmitOptions): GeneratedFile[] {
  const fastify = options.framework === 'fastify';
  const registrations = manifest.registrations.map((registration) => ({
    registration,
    file: routesFileName(registration),
    view: routesView(registration),
  }));
  // Route tables are verbatim block 0 of their files; the app's import and mount lines follow.
  const imports = setAsideFlatLines(
    registrations.map(
      ({ file, view }) => `import { ${view.routesName} } from './${file.replace(/\.ts$/, '.js')}';`,
    ),
    0,
  );
  // Inside the app's `mount: (router) => { ... }` (templates/app.hbs).
  const mounts = setAsideFlatLines(
    registrations.map(
      ({ view }) => `    router.mount(machineOf(${view.machineIdLiteral}), ${view.routesName});`,
    ),
    imports.blocks.length,
    4,
  );
  return [
    ...registrations.map(({ registration, file, view }) => ({
      path: file,
      contents: renderTemplate('routes', view),
      verbatim: [routeTable(registration)],
      // The template is laid out as prettier would; the payload types are when each fits its line.
      formatted: view.payloads.every(({ name, type }) =>
        isFlatLine(`export type ${name} = ${type};`),
      ),
    })),
    {
      path: 'machines.gen.ts',
      contents: renderTemplate('machines', { configModule: manifest.configModule }),
    },
    {
      path: 'app.gen.ts',
      contents: renderTemplate('app', {
        fastify,
        framework: fastify ? 'Fastify' : 'Express',
        docs:
          (options.docs ?? null) === null
            ? false
            : {
                titleLiteral: JSON.stringify(options.openapi.title),
                prefixLiteral: JSON.stringify(options.docs?.prefix ?? ''),
              },
        // The console draws each machine's diagram from the SVGs `generate` drew.
        adminDiagrams: (options.admin ?? null) !== null,
        configModule: manifest.configModule,
        imports: imports.lines,
        mounts: mounts.lines,
      }),
      verbatim: [...imports.blocks, ...mounts.blocks],
    },
    {
      path: 'server.gen.ts',
      contents: renderTemplate('server', {
        framework: options.framework,
        tryRoute: tryRoute(manifest),
      }),
    },
  ];
}
