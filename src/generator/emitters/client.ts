/**
 * Emits the typed fetch client: `client.gen.ts` and a copy of the client runtime
 * (`client-runtime.gen.ts`). Its types are printed from the OpenAPI document's component
 * schemas (openapi.ts builds them), so the document and the client cannot drift apart.
 */
import { isThirdPartyRoute } from '../../runtime/http/plan-callbacks.js';
import { readFileSync } from 'node:fs';
import { pathParamsOf } from '../../runtime/definition/uri.js';
import { setAsideFlatLines } from '../flat-layout.js';
import {
  verbatimPlaceholder,
  type GeneratedFile,
  type ManifestRoute,
  type RouteManifest,
} from '../manifest.js';
import { camelCase, sortBy } from '../naming.js';
import { schemaToType } from '../schema-to-type.js';
import { GENERATED_HEADER, clientRuntimeSource, renderTemplate } from '../templates.js';
import { printLiteral, quoteString } from '../ts-literal.js';
import {
  buildComponentSchemas,
  errorResponses,
  payloadSchemaName,
  responseSchemaName,
  routeTypeName,
  scenarioSlugSchemaName,
  stateSchemaName,
} from './openapi.js';
import { emitTanstackQuery } from './tanstack.js';
import type { EmitOptions } from './types.js';

// The source beside the build (scripts/copy-client-runtime.js) or in src/.
const COMPONENT_PREFIX = '#/components/schemas/';
/** How src/client/runtime.ts imports its types, and how the emitted copy imports theirs. */
const TYPES_IMPORT = "from './runtime-types.js';";
const TYPES_COPY_IMPORT = "from './client-runtime-types.gen.js';";

interface TypeView {
  name: string;
  type: string;
}

interface MethodView {
  name: string;
  method: string;
  path: string;
  routeName: string;
  /** Said after the route name in the method's doc comment (create-or-send routes). */
  note?: string;
  inputType: string;
  resultType: string;
  spec: string;
}

/** Component references become the names of the types emitted for the components. */
function resolveComponent(ref: string): string {
  return ref.startsWith(COMPONENT_PREFIX) ? ref.slice(COMPONENT_PREFIX.length) : 'unknown';
}

/**
 * Method name of a route in its registration group: `create`, `submit`, `confirmPayment`; a
 * read's name under the group's `read` object (`status` for `client.order.read.status`).
 */
export function clientMethodName(route: ManifestRoute): string {
  if (route.read !== null) return camelCase(route.read);
  return route.eventType === null ? 'create' : camelCase(route.eventType);
}

/**
 * The result union of a route: one member per body type, its statuses grouped, so a check of
 * `status` narrows the body (422 field errors, 423 contention snapshot).
 */
function resultType(route: ManifestRoute): string {
  const response = responseSchemaName(route);
  // Grouped by body and by success, so that `ok` narrows as well as `status` (423 is not ok).
  const members = new Map<string, { body: string; statuses: number[] }>([
    [`ok ${response}`, { body: response, statuses: [route.status] }],
  ]);
  for (const error of errorResponses(route)) {
    const body = error.status === 423 ? response : schemaToType(error.schema, resolveComponent);
    const member = members.get(`error ${body}`) ?? { body, statuses: [] };
    member.statuses.push(error.status);
    members.set(`error ${body}`, member);
  }
  return [...members.values()]
    .map(({ body, statuses }) => `ClientResponse<${statuses.join(' | ')}, ${body}>`)
    .join(' | ');
}

export function methodView(
  route: ManifestRoute,
  statusSet: (statuses: number[]) => string,
): { result: TypeView; method: MethodView } {
  const inputMembers = pathParamsOf(route.path).map((name) => `${name}: string`);
  if (route.payloadSchema !== null) inputMembers.push(`payload: ${payloadSchemaName(route)}`);
  if (route.scenarios) {
    inputMembers.push(
      `scenario?: ${scenarioSlugSchemaName(route.machineId)} | null`,
      'scenarioParams?: Record<string, unknown>',
    );
  }
  const statuses = [route.status, ...errorResponses(route).map((error) => error.status)];
  const event = route.handler === 'create' ? null : route.eventType;
  const input = inputMembers.length > 0;
  const name = `${routeTypeName(route)}Result`;
  return {
    result: { name, type: resultType(route) },
    method: {
      name: clientMethodName(route),
      method: route.method,
      path: route.path,
      routeName: route.name,
      ...(route.binding.kind === 'key'
        ? {
            note: `: to the instance whose business key is \`payload.${route.binding.field}\`, created with the event when there is none`,
          }
        : {}),
      inputType: input ? `{ ${inputMembers.join('; ')} }` : 'null',
      resultType: name,
      spec: `{ method: ${quoteString(route.method)}, path: ${quoteString(route.path)}, event: ${printLiteral(event)}, input: ${input}, statuses: ${statusSet(statuses)} }`,
    },
  };
}

/**
 * `subscribe` (the state stream, `stream: true`) and `waitFor` (a waiting read on the
 * registration's first read), as method-table lines.
 */
function liveMethods(
  planned: readonly ManifestRoute[],
  views: ReadonlyArray<{ method: MethodView }>,
  routes: readonly ManifestRoute[],
): string[] {
  const lines: string[] = [];
  const events = planned.find((route) => route.handler === 'events');
  if (events !== undefined) {
    const input = pathParamsOf(events.path)
      .map((name) => `${name}: string`)
      .join('; ');
    lines.push(
      `/** \`GET ${events.path}\` (${events.name}): each committed state, as server-sent events */`,
      `subscribe: method.stream<{ ${input} }, ${responseSchemaName(events)}>({ method: 'GET', path: ${quoteString(events.path)}, event: null, input: true, statuses: [200] }),`,
    );
  }
  const index = planned
    .filter((route) => route.read !== null)
    .map((read) => routes.indexOf(read))
    .find((found) => found !== -1);
  if (index !== undefined) {
    const read = routes[index]!;
    const view = views[index]!.method;
    const input = pathParamsOf(read.path)
      .map((name) => `${name}: string`)
      .join('; ');
    lines.push(
      `/** \`GET ${read.path}?waitFor=&timeout=\` (${read.name}): answers once the instance is in \`state\`, or after \`timeout\` ms */`,
      `waitFor: method.wait<{ ${input} }, ${stateSchemaName(read.machineId)}, ${view.resultType}>(${view.spec}),`,
    );
  }
  return lines;
}

/** Builds the view of `templates/client.hbs` (exported so it can be tested without rendering). */
export function buildClientView(manifest: RouteManifest): {
  types: TypeView[];
  statusSets: Array<{ name: string; statuses: string }>;
  groups: Array<{ property: string; methods: MethodView[]; reads: MethodView[]; live: string[] }>;
} {
  // Result unions repeat across routes (every event of a machine usually answers alike): the
  // first route with a union spells it out, the others alias it. This keeps the client compact,
  // and prettier, whose cost grows with the unions it lays out, fast on large APIs.
  const unions = new Map<string, string>();
  const resultView = (view: TypeView): TypeView => {
    const first = unions.get(view.type);
    if (first !== undefined) return { name: view.name, type: first };
    unions.set(view.type, view.name);
    return view;
  };
  // Status lists repeat across routes: each distinct list is one constant, numbered in order of use.
  const statusSets = new Map<string, string>();
  const statusSet = (statuses: number[]): string => {
    const key = statuses.join(', ');
    if (!statusSets.has(key)) statusSets.set(key, `STATUSES_${statusSets.size + 1}`);
    return statusSets.get(key)!;
  };
  const types: TypeView[] = Object.entries(buildComponentSchemas(manifest)).map(
    ([name, schema]) => ({
      name,
      type: schemaToType(schema, resolveComponent),
    }),
  );
  const groups = manifest.registrations.map((registration) => {
    const all = sortBy(registration.routes, (route) => route.name);
    // Callback URLs and webhooks are called by third parties, not through the client.
    const routes = all.filter((route) => route.handler !== 'events' && !isThirdPartyRoute(route));
    const views = routes.map((route) => methodView(route, statusSet));
    types.push(...views.map((view) => resultView(view.result)));
    return {
      property: camelCase(registration.name),
      methods: views.filter((_, index) => routes[index]!.read === null).map((view) => view.method),
      reads: views.filter((_, index) => routes[index]!.read !== null).map((view) => view.method),
      live: liveMethods(registration.routes, views, routes),
    };
  });
  return {
    types,
    statusSets: [...statusSets].map(([statuses, name]) => ({ name, statuses })),
    groups,
  };
}

/**
 * The object `createClient` returns, in its final layout: a method per line under its doc
 * comment, indented for its place in the template (spliced in after formatting).
 */
function methodTable(groups: ReturnType<typeof buildClientView>['groups']): string {
  const methodLines = (methods: readonly MethodView[], indent: string): string[] =>
    methods.flatMap((method) => [
      `${indent}/** \`${method.method} ${method.path}\` (${method.routeName})${method.note ?? ''} */`,
      `${indent}${method.name}: method<${method.inputType}, ${method.resultType}>(${method.spec}),`,
    ]);
  const lines = groups.flatMap(({ property, methods, reads, live }) => [
    `    ${property}: {`,
    ...methodLines(methods, '      '),
    ...live.map((line) => `      ${line}`),
    // Reads by name under `read`, apart from the event methods they could share a name with.
    ...(reads.length === 0 ? [] : ['      read: {', ...methodLines(reads, '        '), '      },']),
    '    },',
  ]);
  return ['{', ...lines, '  }'].join('\n');
}

/**
 * Emits `client.gen.ts` and `client-runtime.gen.ts`, and the TanStack Query bindings beside
 * them when the config asks for them (`client.tanstackQuery`).
 */
export function emitClient(manifest: RouteManifest, options: EmitOptions): GeneratedFile[] {
  const runtime = readFileSync(clientRuntimeSource('runtime.ts'), 'utf8');
  if (!runtime.includes(TYPES_IMPORT))
    throw new Error(`client runtime.ts no longer imports its types ${TYPES_IMPORT}`);
  const runtimeTypes = readFileSync(clientRuntimeSource('runtime-types.ts'), 'utf8');
  const { groups, types, statusSets } = buildClientView(manifest);
  const defaultBaseUrl =
    options.client.baseUrl === null ? null : quoteString(options.client.baseUrl);
  // The method table is verbatim block 0; the declarations that fit their line follow.
  const declarations = setAsideFlatLines(
    types.map(({ name, type }) => `export type ${name} = ${type};`),
    1,
  );
  return [
    {
      path: 'client.gen.ts',
      contents: renderTemplate('client', {
        declarations: declarations.lines,
        statusSets,
        defaultBaseUrl,
        methods: verbatimPlaceholder(0),
      }),
      verbatim: [methodTable(groups), ...declarations.blocks],
    },
    // Copies of src/client/runtime.ts and runtime-types.ts, formatted with the same options.
    {
      path: 'client-runtime.gen.ts',
      contents: `${GENERATED_HEADER}\n${runtime.replaceAll(TYPES_IMPORT, TYPES_COPY_IMPORT)}`,
      formatted: true,
    },
    {
      path: 'client-runtime-types.gen.ts',
      contents: `${GENERATED_HEADER}\n${runtimeTypes}`,
      formatted: true,
    },
    ...(options.client.tanstackQuery === true ? emitTanstackQuery(manifest) : []),
  ];
}
