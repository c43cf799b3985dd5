/**
 * The component schemas of the admin route group's answers (`Admin*`), as the admin routes
 * (src/runtime/http/admin) write them: `MachineOperations`' pages, records and repairs.
 */
import type { JsonSchema } from '../manifest.js';
import { stateEventSchema } from './openapi-live-state.js';

export const ADMIN_ERROR = 'AdminErrorResponse';
const SUMMARY = 'AdminInstanceSummary';
export const RECORD = 'AdminInstanceRecord';
export const ADMIN_STATE_MESSAGE_NAME = 'AdminStateMessage';
export const ADMIN_STATE_EVENT = 'AdminStateEvent';

export function ref(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

export const string: JsonSchema = { type: 'string' };
const time: JsonSchema = { type: 'string', format: 'date-time' };
const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });
const strings: JsonSchema = { type: 'array', items: string };

export function object(
  properties: Record<string, JsonSchema>,
  optional: readonly string[] = [],
  closed = true,
): JsonSchema {
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((key) => !optional.includes(key)),
    ...(closed ? { additionalProperties: false } : {}),
  };
}

/**
 * The `data` of each admin state stream message (`AdminStateMessage`); the stream's messages are
 * `AdminStateEvent`s carrying it as JSON text (`stateEventSchema`).
 */
const ADMIN_STATE_MESSAGE: JsonSchema = object({
  id: string,
  sequence: { type: 'integer' },
  state: strings,
  status: { type: 'string', enum: ['active', 'done'] },
});

const page = (items: string): JsonSchema =>
  object({ items: { type: 'array', items: ref(items) }, nextCursor: nullable(string) });

/** The component schemas of the admin operations, by name. */
export function adminSchemas(): Record<string, JsonSchema> {
  return {
    [ADMIN_ERROR]: object(
      {
        message: string,
        code: {
          type: 'string',
          description: 'The error class code (MR_...), when the runtime refused.',
        },
      },
      ['code'],
    ),
    AdminValidationErrorResponse: object({
      message: string,
      errors: { type: 'object', additionalProperties: strings },
    }),
    [SUMMARY]: object(
      {
        id: string,
        machineId: string,
        value: strings,
        status: { type: 'string', enum: ['active', 'done'] },
        sequence: { type: 'integer' },
        createdAt: time,
        updatedAt: time,
        businessKey: nullable(string),
        parent: nullable({ type: 'object' }),
        pausedAt: nullable(time),
        state: object({ id: string, enteredAt: time }),
      },
      ['state'],
    ),
    AdminInstancePage: page(SUMMARY),
    AdminHistoryRecord: object({
      id: string,
      sequence: { type: 'integer' },
      createdAt: time,
      machineId: string,
      rootEventId: string,
      source: { type: 'string', enum: ['external', 'internal'] },
      type: string,
      payload: nullable({ type: 'object' }),
      value: strings,
      context: nullable({ type: 'object' }),
      version: { type: 'integer' },
      actor: nullable(string),
    }),
    AdminHistoryPage: page('AdminHistoryRecord'),
    [RECORD]: object({
      instance: ref(SUMMARY),
      context: { type: 'object' },
      states: { type: 'array', items: object({ id: string, enteredAt: time }) },
      lock: nullable(
        object({
          ownerId: string,
          context: nullable(string),
          acquiredAt: time,
          expiresAt: time,
          expired: { type: 'boolean' },
        }),
      ),
      children: {
        type: 'array',
        items: object(
          {
            id: string,
            childMachineId: string,
            status: string,
            createdAt: time,
            completedAt: nullable(time),
          },
          [],
          false,
        ),
      },
      timers: {
        type: 'array',
        items: object({
          key: string,
          stateId: string,
          kind: { type: 'string', enum: ['after', 'every', 'cron'] },
          eventType: string,
          dueAt: nullable(time),
          fireCount: { type: 'integer' },
          stateEnteredAt: time,
          registered: { type: 'boolean' },
        }),
      },
      scenario: nullable(object({ slug: string, params: { type: 'object' } })),
      failedJobs: {
        type: 'array',
        items: object({
          id: string,
          name: string,
          payload: {},
          key: nullable(string),
          attempts: { type: 'integer' },
          lastError: string,
        }),
      },
    }),
    AdminMachineList: object({
      machines: {
        type: 'array',
        items: object({
          id: string,
          states: {
            type: 'array',
            items: object({ id: string, type: string, parent: nullable(string) }),
          },
          events: strings,
          cancelEvent: nullable(string),
        }),
      },
    }),
    AdminActionResponse: object({
      action: {
        type: 'string',
        enum: ['cancel', 'send', 'retry', 'fire', 'release', 'pause', 'resume'],
      },
      result: { type: 'object', description: "What the repair did (MachineOperations' answer)." },
      instance: ref(RECORD),
    }),
    [ADMIN_STATE_MESSAGE_NAME]: ADMIN_STATE_MESSAGE,
    [ADMIN_STATE_EVENT]: stateEventSchema(
      ADMIN_STATE_MESSAGE_NAME,
      "the instance's id, sequence, states and status after that commit",
    ),
  };
}
