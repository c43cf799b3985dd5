/**
 * The admin route group in the OpenAPI document (config `admin`, docs/operations.md "Admin
 * routes"): its operations under the tag `admin`, with their own component schemas (`Admin*`)
 * and every status they answer. Self-contained: it refers to no shared response of the machine
 * routes, so adding it changes nothing else in the document. The console page and its diagrams
 * are served beside these routes but, like `/docs`, are not API operations.
 */
import type { JsonSchema } from '../manifest.js';

import {
  ADMIN_ERROR as ERROR,
  ADMIN_STATE_EVENT,
  ADMIN_STATE_MESSAGE_NAME,
  adminSchemas,
  object,
  RECORD,
  ref,
  string,
} from './openapi-admin-schemas.js';

function errorAnswer(description: string, status: number): JsonSchema {
  // A payload the event's schema refuses names its fields, as an endpoint's 422 does.
  const schema =
    status === 422 ? { anyOf: [ref('AdminValidationErrorResponse'), ref(ERROR)] } : ref(ERROR);
  return { description, content: { 'application/json': { schema } } };
}

/** Every error answer an admin operation can give, by status. */
function errors(statuses: readonly number[], middleware: string): Record<string, JsonSchema> {
  const texts: Record<number, string> = {
    400: 'A malformed query string or body, or a query the operations refuse (an unknown state, a malformed time, a cursor of another list, a limit out of 1..500): `code` MR_INVALID_OPERATION_QUERY.',
    401: `Refused by the admin middleware (${middleware}): no or wrong credentials.`,
    403: `Refused by the admin middleware (${middleware}): not allowed.`,
    404: 'No such machine, or no such instance of it.',
    409: 'The instance refuses: paused (MR_INSTANCE_PAUSED), its lock held by a live step past the wait (MR_MACHINE_ALREADY_RUNNING), or no transition takes the event in its state (MR_NO_TRANSITION).',
    413: 'Body too large.',
    415: 'The body is not JSON.',
    422: "The event's payload or a validation guard rejected it.",
    500: 'Unexpected error.',
    503: 'The server is shutting down: send the request again after Retry-After seconds.',
  };
  return Object.fromEntries(
    statuses.map((status) => [String(status), errorAnswer(texts[status]!, status)]),
  );
}

const READ_ERRORS = [400, 401, 403, 404, 500, 503];
const ACTION_ERRORS = [400, 401, 403, 404, 409, 413, 415, 422, 500, 503];

function query(name: string, description: string, schema: JsonSchema = string): JsonSchema {
  return { name, in: 'query', required: false, description, schema };
}

const PATH_PARAMS: JsonSchema[] = [
  {
    name: 'machine',
    in: 'path',
    required: true,
    description: 'Machine id (`order`).',
    schema: string,
  },
  { name: 'id', in: 'path', required: true, description: 'Instance id.', schema: string },
];

const ACTIONS: Record<string, { summary: string; fields: Record<string, JsonSchema> }> = {
  cancel: {
    summary: "Cancel the instance: send its machine's cancel event (or `event`)",
    fields: { event: string },
  },
  send: {
    summary: 'Send any event of the machine (an operator-only event too)',
    fields: { type: string, payload: { type: 'object' } },
  },
  retry: { summary: 'Retry its failed jobs (or the job `jobId`)', fields: { jobId: string } },
  fire: { summary: 'Fire a pending timer now (`timer`: its key)', fields: { timer: string } },
  release: { summary: 'Free its lock when expired or its holder is dead', fields: {} },
  pause: { summary: 'Pause it: it refuses events (409) and fires no timers', fields: {} },
  resume: { summary: 'Resume a paused instance', fields: {} },
};

/**
 * The admin group's paths and its tag, under `prefix` (`/admin`); `middleware` names what
 * protects them (in the descriptions and the 401/403 answers).
 */
export function adminPaths(
  prefix: string,
  middleware: readonly string[],
): { tag: JsonSchema; paths: Record<string, Record<string, JsonSchema>> } {
  const named = middleware.map((name) => `\`${name}\``).join(', ');
  const operation = (
    id: string,
    summary: string,
    success: JsonSchema,
    errorStatuses: readonly number[],
    extra: JsonSchema = {},
  ): JsonSchema => ({
    operationId: `admin.${id}`,
    tags: ['admin'],
    summary,
    description: `${summary}. Behind the admin middleware ${named} (docs/operations.md "Admin routes").`,
    ...extra,
    responses: { '200': success, ...errors(errorStatuses, named) },
  });
  const json = (name: string, description: string): JsonSchema => ({
    description,
    content: { 'application/json': { schema: ref(name) } },
  });
  const api = `${prefix}/api/machines`;
  const instance = `${api}/{machine}/instances/{id}`;
  const paths: Record<string, Record<string, JsonSchema>> = {
    [api]: {
      get: operation(
        'machines',
        'List the machines',
        json('AdminMachineList', 'The machines.'),
        [400, 401, 403, 500, 503],
      ),
    },
    [`${api}/{machine}/instances`]: {
      get: operation(
        'list',
        'List instances of a machine',
        json('AdminInstancePage', 'A page of instances.'),
        READ_ERRORS,
        {
          parameters: [
            PATH_PARAMS[0]!,
            query(
              'state',
              'A state (full or relative id): instances where it or a state inside it is active, longest stay first.',
            ),
            query('key', 'The business key the instance was bound to.'),
            query('status', '`active` or `done`.', { type: 'string', enum: ['active', 'done'] }),
            query('createdFrom', 'Created at or after (ISO-8601).'),
            query('createdBefore', 'Created before (ISO-8601).'),
            query('updatedFrom', 'Last commit at or after (ISO-8601).'),
            query('updatedBefore', 'Last commit before (ISO-8601).'),
            query('cursor', "The previous page's nextCursor."),
            query('limit', 'Rows per page, 1 to 500 (default 50).', {
              type: 'string',
              pattern: '^[0-9]+$',
            }),
          ],
        },
      ),
    },
    [instance]: {
      get: operation(
        'show',
        'Show one instance: state, context, lock, children, timers, failed jobs',
        json(RECORD, 'The instance.'),
        READ_ERRORS,
        { parameters: PATH_PARAMS },
      ),
    },
    [`${instance}/history`]: {
      get: operation(
        'history',
        "Read one instance's history as a timeline",
        json('AdminHistoryPage', 'A page of history records.'),
        READ_ERRORS,
        {
          parameters: [
            ...PATH_PARAMS,
            query('order', '`asc` (default) or `desc`.', { type: 'string', enum: ['asc', 'desc'] }),
            query('source', '`external` (what callers sent) or `internal` (the steps).', {
              type: 'string',
              enum: ['external', 'internal'],
            }),
            query('cursor', "The previous page's nextCursor."),
            query('limit', 'Records per page, 1 to 500 (default 50).', {
              type: 'string',
              pattern: '^[0-9]+$',
            }),
          ],
        },
      ),
    },
    [`${instance}/stream`]: {
      get: operation(
        'stream',
        "Follow one instance's committed states (Server-Sent Events)",
        {
          description:
            'Server-sent events, one per committed state, oldest first: `id` is its sequence number, `event` is `state`, `data` the JSON of AdminStateMessage. The first message is the current state; the stream ends after a final state.',
          content: {
            // Typed as a registration's stream is (openapi-live-state.ts): the sequence of its
            // messages, each message's data by its contentSchema.
            'text/event-stream': {
              schema: { type: 'array', items: ref(ADMIN_STATE_EVENT) },
              'x-data-schema': ref(ADMIN_STATE_MESSAGE_NAME),
            },
          },
        },
        READ_ERRORS,
        { parameters: PATH_PARAMS },
      ),
    },
  };
  for (const [action, { summary, fields }] of Object.entries(ACTIONS)) {
    paths[`${instance}/${action}`] = {
      post: operation(
        action,
        summary,
        json('AdminActionResponse', 'Done: what the repair did, and the instance after it.'),
        ACTION_ERRORS,
        {
          parameters: PATH_PARAMS,
          requestBody: {
            required: false,
            content: {
              'application/json': {
                schema: object(
                  {
                    who: {
                      type: 'string',
                      description:
                        'The operator recorded in history as operator:<who> (default `admin`).',
                    },
                    ...fields,
                  },
                  [
                    'who',
                    ...Object.keys(fields).filter((key) => !(action === 'send' && key === 'type')),
                  ],
                ),
              },
            },
          },
        },
      ),
    };
  }
  return {
    tag: {
      name: 'admin',
      description: `Find, inspect and repair the instances of every machine (docs/operations.md). Every route is behind the admin middleware ${named}; the console page is served at \`${prefix}/console\`.`,
    },
    paths,
  };
}

/**
 * `document` with the admin group added when `admin` is set: its paths after the machines',
 * its tag last, its schemas among the components (sorted by name, as the others).
 */
export function withAdminGroup(
  admin: { prefix: string; middleware: readonly string[] } | null,
  document: JsonSchema,
): JsonSchema {
  if (admin === null) return document;
  const group = adminPaths(admin.prefix, admin.middleware);
  const components = document['components'] as { schemas: Record<string, JsonSchema> };
  const schemas = { ...components.schemas, ...adminSchemas() };
  return {
    ...document,
    tags: [...(document['tags'] as JsonSchema[]), group.tag],
    paths: { ...(document['paths'] as Record<string, JsonSchema>), ...group.paths },
    components: {
      ...components,
      schemas: Object.fromEntries(
        Object.keys(schemas)
          .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
          .map((name) => [name, schemas[name]!]),
      ),
    },
  };
}
