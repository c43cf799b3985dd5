/**
 * The instance's HTTP surface in the OpenAPI document (docs/http.md "OPTIONS, Allow and
 * Machine-Events", "Conditional requests"): the OPTIONS operation of every path, the `ETag`,
 * `Allow` and `Machine-Events` response headers, the `If-None-Match` (304) and `If-Match` (412)
 * request headers. Kept apart from openapi.ts, which calls it per operation.
 */
import { pathParamsOf } from '../../runtime/definition/uri.js';
import { planOptionsRoutes, type OptionsRoute } from '../../runtime/http/plan-options.js';
import type { JsonSchema, ManifestRoute } from '../manifest.js';

/** The component schema of a 412 body. */
export const PRECONDITION_FAILED_SCHEMA = 'PreconditionFailedResponse';

/** `{ message, etag }`: what failed and the instance's current version (`null`: no machine yet). */
export const PRECONDITION_FAILED_BODY: JsonSchema = {
  type: 'object',
  properties: { message: { type: 'string' }, etag: { type: ['string', 'null'] } },
  required: ['message', 'etag'],
  additionalProperties: false,
};

const ETAG_PATTERN = '^"[^"]*"$';

/** The `ETag` response header: the instance version an answer shows. */
const ETAG_HEADER: JsonSchema = {
  description:
    'The instance version this answer shows (strong, `"<instance id>:<sequence>"`): send it as If-None-Match on a read, or If-Match on an event. Absent while the instance is processing (isProcessing true).',
  schema: { type: 'string', pattern: ETAG_PATTERN },
};

const ALLOW_HEADER: JsonSchema = {
  description:
    'The methods routed at this path (HEAD with GET, OPTIONS). Whether the instance accepts the event now is Machine-Events.',
  required: true,
  schema: { type: 'string' },
};

const MACHINE_EVENTS_HEADER: JsonSchema = {
  description:
    "The event types the instance accepts now (its availableEvents' types), sorted, comma-separated; empty in a final state.",
  required: true,
  schema: { type: 'string', pattern: '^([^, ]+(, [^, ]+)*)?$' },
};

/** Whether a route sends an event to a persisted instance (If-Match applies, 409 has headers). */
function sendsToInstance(route: ManifestRoute): boolean {
  return (
    route.binding.kind !== 'none' &&
    route.handler !== 'create' &&
    route.handler !== 'read' &&
    route.handler !== 'events'
  );
}

/** The conditional request headers of a route's operation (none for most routes). */
export function conditionalParameters(route: ManifestRoute): JsonSchema[] {
  if (route.handler === 'read') {
    return [
      {
        name: 'If-None-Match',
        in: 'header',
        required: false,
        description:
          'The ETag of an answer you hold: while the instance is at that version (and not processing), the answer is 304 without a body.',
        schema: { type: 'string' },
      },
    ];
  }
  if (!sendsToInstance(route)) return [];
  return [
    {
      name: 'If-Match',
      in: 'header',
      required: false,
      description:
        'Send the event only if the instance is still at this version (the ETag of an earlier answer; `*`: any version). Checked under the instance lock; otherwise 412 and nothing is written.',
      schema: { type: 'string' },
    },
  ];
}

/** The answer of one status the surface adds (304, 412), or `undefined` for any other. */
export function surfaceResponse(status: number): JsonSchema | undefined {
  if (status === 304) {
    return {
      description:
        'Not Modified: the instance is still at the version If-None-Match names. No body.',
      headers: { ETag: ETAG_HEADER },
    };
  }
  if (status !== 412) return undefined;
  return {
    description:
      'Precondition Failed: If-Match names a version the instance has moved on from (or the record has no machine yet). Nothing was written; `etag` (and the ETag header) is the current version.',
    headers: { ETag: ETAG_HEADER },
    content: {
      'application/json': {
        schema: { $ref: `#/components/schemas/${PRECONDITION_FAILED_SCHEMA}` },
        example: {
          message: `Precondition Failed: the instance is at "01JCZ8Q4M7X9V2K5N3P6R8T0WY:7" now; read it again and send with that ETag.`,
          etag: '"01JCZ8Q4M7X9V2K5N3P6R8T0WY:7"',
        },
      },
    },
  };
}

/**
 * The surface's response headers on an operation's answers: `ETag` on the success of reads and
 * of instance event routes, `Allow` and `Machine-Events` on their 409. Changes `responses`.
 */
export function addSurfaceHeaders(
  route: ManifestRoute,
  responses: Record<string, JsonSchema>,
): void {
  const instanceAnswer = route.handler === 'read' || sendsToInstance(route);
  if (!instanceAnswer) return;
  const success = responses[String(route.status)];
  if (success !== undefined) {
    success['headers'] = { ...(success['headers'] as JsonSchema | undefined), ETag: ETAG_HEADER };
  }
  const conflict = responses['409'];
  if (sendsToInstance(route) && conflict !== undefined && conflict['$ref'] === undefined) {
    conflict['headers'] = {
      Allow: { ...ALLOW_HEADER, required: false },
      'Machine-Events': {
        ...MACHINE_EVENTS_HEADER,
        required: false,
        description: `${String(MACHINE_EVENTS_HEADER['description'])} Present when the refusal is the instance's state (no transition, no running child).`,
      },
    };
  }
}

/** Options of {@link optionsOperations}: the shared responses it refers to, by status. */
export interface OptionsOperationParts {
  /** `#/components/responses/...` of a shared status (401, 404, 500, 503). */
  sharedResponse(status: 401 | 404 | 500 | 503): JsonSchema;
  /** The description of a path parameter, as a route of the path describes it. */
  pathParameter(route: ManifestRoute, name: string): string;
  /** The security requirement of `auth` guards. */
  security(guards: readonly string[]): JsonSchema[];
}

/** The OPTIONS operation of every path of `routes` (plan-options.ts), by path. */
export function optionsOperations(
  routes: readonly ManifestRoute[],
  parts: OptionsOperationParts,
): Map<string, JsonSchema> {
  const operations = new Map<string, JsonSchema>();
  for (const route of planOptionsRoutes(routes)) {
    // A route of the registration under that path describes its parameters.
    const source =
      routes.find(
        (candidate) =>
          candidate.registration === route.registration &&
          (candidate.path === route.path || candidate.path.startsWith(`${route.path}/`)),
      ) ?? routes.find((candidate) => candidate.registration === route.registration)!;
    operations.set(route.path, optionsOperation(route, source, parts));
  }
  return operations;
}

function optionsOperation(
  route: OptionsRoute,
  source: ManifestRoute,
  parts: OptionsOperationParts,
): JsonSchema {
  const bound = route.binding.kind !== 'none';
  const headers: JsonSchema = { Allow: ALLOW_HEADER };
  if (bound) headers['Machine-Events'] = MACHINE_EVENTS_HEADER;
  const responses: JsonSchema = {
    '204': {
      description: bound
        ? 'The methods of this path (Allow) and the events the instance accepts now (Machine-Events). Nothing is read but the instance; nothing is written.'
        : 'The methods of this path (Allow).',
      headers,
    },
    '400': {
      description:
        'The request cannot be read: the query string is malformed (bad percent-encoding, nested over 32 levels, over 1000 pairs). Nothing happened.',
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorResponse' },
          example: { message: 'Malformed query string.' },
        },
      },
    },
  };
  if (route.authGuards !== null) responses['401'] = parts.sharedResponse(401);
  if (bound) responses['404'] = parts.sharedResponse(404);
  responses['500'] = parts.sharedResponse(500);
  responses['503'] = parts.sharedResponse(503);
  const op: JsonSchema = {
    operationId: route.name,
    tags: [route.machineId],
    summary: bound
      ? `Methods of this path and the events the ${route.machineId} accepts now`
      : 'Methods of this path',
    description: bound
      ? `Answers 204 with \`Allow\` and \`Machine-Events\` (the ${route.machineId}'s availableEvents types, as a generic client or cache sees them); 404 when no such ${route.machineId} exists.`
      : 'Answers 204 with `Allow`.',
  };
  const parameters = pathParamsOf(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    description: parts.pathParameter(source, name),
    schema: { type: 'string' },
  }));
  if (parameters.length > 0) op['parameters'] = parameters;
  if (route.authGuards !== null) op['security'] = parts.security(route.authGuards);
  op['responses'] = responses;
  return op;
}
