/**
 * Emits the TanStack Query bindings of the client (config `client.tanstackQuery`):
 * `query.gen.ts`, whose `createQueries(client, queryClient)` returns option objects per route
 * (a query per read and per instance, a mutation per event), and a copy of their runtime
 * (`query-runtime.gen.ts`). Kept apart from the client emitter: the client does not change
 * with the option.
 */
import { isThirdPartyRoute } from '../../runtime/http/plan-callbacks.js';
import { readFileSync } from 'node:fs';
import { pathParamsOf } from '../../runtime/definition/uri.js';
import {
  verbatimPlaceholder,
  type GeneratedFile,
  type ManifestRegistration,
  type ManifestRoute,
  type RouteManifest,
} from '../manifest.js';
import { camelCase, compareCodeUnits, pascalCase, sortBy } from '../naming.js';
import { GENERATED_HEADER, clientRuntimeSource, renderTemplate } from '../templates.js';
import { quoteString } from '../ts-literal.js';
import { clientMethodName, methodView } from './client.js';
import {
  payloadSchemaName,
  responseSchemaName,
  routeTypeName,
  scenarioSlugSchemaName,
} from './openapi.js';

/** The runtime's import of the client runtime, and where its copy finds it. */
const RUNTIME_IMPORT = "from './runtime.js';";
const RUNTIME_COPY_IMPORT = "from './client-runtime.gen.js';";

const resultName = (route: ManifestRoute): string => `${routeTypeName(route)}Result`;
const instanceTypeName = (machineId: string): string => `${pascalCase(machineId)}Instance`;
const paramsType = (route: ManifestRoute): string =>
  `{ ${pathParamsOf(route.path)
    .map((name) => `${name}: string`)
    .join('; ')} }`;

/**
 * The read that fetches a registration's instance entry: the first (by name) whose answer is
 * the full envelope (default output, availableEvents), else the first read; `null`: none.
 */
export function instanceRead(routes: readonly ManifestRoute[]): ManifestRoute | null {
  const reads = sortBy(
    routes.filter((route) => route.read !== null),
    (route) => route.name,
  );
  return (
    reads.find((read) => read.output.kind === 'default' && read.availableEvents) ?? reads[0] ?? null
  );
}

/** The route that names a registration's instances (its parameters type the instance key). */
function instanceRoute(registration: ManifestRegistration): ManifestRoute | null {
  const routes = sortBy(queryRoutes(registration.routes), (route) => route.name);
  return (
    instanceRead(routes) ??
    // Create-or-send routes name their instance in the payload, not in the path: not these.
    routes.find((route) => route.binding.kind === 'machineId' || route.binding.kind === 'model') ??
    null
  );
}

/**
 * The routes that are queries or mutations: not the state stream (`stream: true`), which the
 * client follows with `subscribe`.
 */
function queryRoutes(routes: readonly ManifestRoute[]): ManifestRoute[] {
  // Callback URLs and webhooks are called by third parties, not through the client.
  return routes.filter((route) => route.handler !== 'events' && !isThirdPartyRoute(route));
}

/** A registration's state stream (`stream: true`), which its `live` query follows. */
const streamRoute = (registration: ManifestRegistration): ManifestRoute | undefined =>
  registration.routes.find((route) => route.handler === 'events');

/** The lines of one registration in the `createQueries` table. */
function registrationLines(registration: ManifestRegistration): string[] {
  const group = camelCase(registration.name);
  const machine = quoteString(registration.machineId);
  const client = (route: ManifestRoute) =>
    route.read === null
      ? `client.${group}.${clientMethodName(route)}`
      : `client.${group}.read.${clientMethodName(route)}`;
  const lines: string[] = [];
  const named = instanceRoute(registration);
  if (named !== null) {
    const params = paramsType(named);
    const type = instanceTypeName(registration.machineId);
    const read = instanceRead(registration.routes);
    lines.push(
      `/** Key prefix of one instance (its envelope and reads), for \`invalidateQueries\`. */`,
      `key: q.key<${params}>(${machine}),`,
      read === null
        ? `/** The instance's last envelope, as its mutations wrote it (no read fetches it). */`
        : `/** The instance's last envelope: fetched with \`${read.method} ${read.path}\`, written by every event. */`,
      read === null
        ? `instance: q.cachedInstance<${params}, ${type}>(${machine}),`
        : `instance: q.instance<${params}, ${type}, ${resultName(read)}>(${machine}, ${client(read)}),`,
    );
    const stream = streamRoute(registration);
    if (stream !== undefined)
      lines.push(
        `/** The instance followed live: \`GET ${stream.path}\` (${stream.name}), each state also written to \`instance\`. */`,
        `live: q.live<${paramsType(stream)}, ${responseSchemaName(stream)}>(${machine}, client.${group}.subscribe),`,
      );
  }
  const routes = sortBy(queryRoutes(registration.routes), (route) => route.name);
  for (const route of routes.filter((candidate) => candidate.read === null)) {
    const doc = `/** \`${route.method} ${route.path}\` (${route.name}) */`;
    if (route.handler === 'create') {
      lines.push(
        doc,
        `create: q.create<${resultName(route)}>(${machine}, ${quoteString(route.name)}, ${client(route)}),`,
      );
      continue;
    }
    const view = methodView(route, () => '').method;
    const params = pathParamsOf(route.path).map(quoteString).join(', ');
    const bound = route.binding.kind === 'none' ? 'null' : machine;
    lines.push(
      doc,
      `${view.name}: q.event<${view.inputType}, ${resultName(route)}>(${bound}, ${quoteString(route.name)}, [${params}], ${client(route)}),`,
    );
  }
  const reads = routes.filter((route) => route.read !== null);
  if (reads.length > 0) {
    lines.push('read: {');
    for (const read of reads) {
      lines.push(
        `  /** \`${read.method} ${read.path}\` (${read.name}) */`,
        `  ${clientMethodName(read)}: q.read<${paramsType(read)}, ${resultName(read)}>(${machine}, ${quoteString(read.name)}, ${client(read)}),`,
      );
    }
    lines.push('},');
  }
  return [`    ${group}: {`, ...lines.map((line) => `      ${line}`), '    },'];
}

/**
 * Per machine with instances, the result types whose envelopes its instance entry can hold:
 * every bound event and create of its registrations, and the read fetching the entry.
 */
function instanceTypes(
  manifest: RouteManifest,
): Array<{ name: string; results: string; messages: string }> {
  const byMachine = new Map<string, Set<string>>();
  // The messages of state streams, which `live` writes to the entry too.
  const messagesOf = new Map<string, Set<string>>();
  for (const registration of manifest.registrations) {
    if (instanceRoute(registration) === null) continue;
    const stream = streamRoute(registration);
    if (stream !== undefined) {
      const messages = messagesOf.get(registration.machineId) ?? new Set<string>();
      messagesOf.set(registration.machineId, messages.add(responseSchemaName(stream)));
    }
    const results = byMachine.get(registration.machineId) ?? new Set<string>();
    for (const route of queryRoutes(registration.routes)) {
      if (route.read === null && (route.handler === 'create' || route.binding.kind !== 'none'))
        results.add(resultName(route));
    }
    const read = instanceRead(registration.routes);
    if (read !== null) results.add(resultName(read));
    byMachine.set(registration.machineId, results);
  }
  return [...byMachine]
    .sort(([a], [b]) => compareCodeUnits(a, b))
    .map(([machineId, results]) => ({
      name: instanceTypeName(machineId),
      results: [...results].sort(compareCodeUnits).join(' | '),
      messages: [...(messagesOf.get(machineId) ?? [])].sort(compareCodeUnits).join(' | '),
    }));
}

/** Emits `query.gen.ts` and `query-runtime.gen.ts`. */
export function emitTanstackQuery(manifest: RouteManifest): GeneratedFile[] {
  const runtime = readFileSync(clientRuntimeSource('query-runtime.ts'), 'utf8');
  if (!runtime.includes(RUNTIME_IMPORT))
    throw new Error(`query-runtime.ts no longer imports the client runtime ${RUNTIME_IMPORT}`);
  const table = [
    '{',
    ...manifest.registrations.flatMap((registration) => registrationLines(registration)),
    '  }',
  ].join('\n');
  // The result types, and the payload and scenario types the inputs name.
  const results = new Set<string>();
  for (const registration of manifest.registrations) {
    for (const route of queryRoutes(registration.routes)) {
      results.add(resultName(route));
      if (route.read !== null || route.handler === 'create') continue;
      if (route.payloadSchema !== null) results.add(payloadSchemaName(route));
      if (route.scenarios) results.add(scenarioSlugSchemaName(route.machineId));
    }
    const stream = streamRoute(registration);
    if (stream !== undefined && instanceRoute(registration) !== null)
      results.add(responseSchemaName(stream));
  }
  return [
    {
      path: 'query.gen.ts',
      contents: renderTemplate('query', {
        results: [...results].sort(compareCodeUnits),
        instances: instanceTypes(manifest),
        table: verbatimPlaceholder(0),
      }),
      verbatim: [table],
    },
    {
      path: 'query-runtime.gen.ts',
      contents: `${GENERATED_HEADER}\n${runtime.replace(RUNTIME_IMPORT, RUNTIME_COPY_IMPORT)}`,
    },
  ];
}
