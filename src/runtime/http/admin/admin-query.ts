/**
 * The admin list and history routes' query strings as `MachineOperations` options. Values the
 * operations check themselves (a state, a time, a cursor) are handed on as written; a value
 * that is not one string (`state[a]=x`, a repeated key) or a limit that is not a number is a
 * 400 naming the parameter.
 */
import { InvalidOperationQueryException } from '../../errors.js';
import type {
  HistoryPageOptions,
  InstanceListOptions,
} from '../../engine/operations/instance-reads.js';
import type { HistorySource } from '../../interpreter/types.js';

type Query = Record<string, unknown>;

function text(query: Query, key: string): string | undefined {
  const value = query[key];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') {
    throw new InvalidOperationQueryException(
      `Query parameter '${key}' takes one text value: send ${key}=<value> once.`,
      { key },
    );
  }
  return value;
}

function oneOf<T extends string>(query: Query, key: string, allowed: readonly T[]): T | undefined {
  const value = text(query, key);
  if (value === undefined || (allowed as readonly string[]).includes(value)) return value as T;
  throw new InvalidOperationQueryException(
    `Query parameter '${key}' is '${value}': send one of ${allowed.join(', ')}.`,
    { key },
  );
}

function limitOf(query: Query): number | undefined {
  const value = text(query, 'limit');
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw new InvalidOperationQueryException(
      `Query parameter 'limit' is '${value}': send a whole number from 1 to 500.`,
      { key: 'limit' },
    );
  }
  return Number(value);
}

/** `state`, `key`, `status`, `createdFrom`, `createdBefore`, `updatedFrom`, `updatedBefore`, `cursor`, `limit`. */
export function listOptions(query: Query): InstanceListOptions {
  const options: InstanceListOptions = {};
  const state = text(query, 'state');
  if (state !== undefined) options.state = state;
  const key = text(query, 'key');
  if (key !== undefined) options.businessKey = key;
  const status = oneOf(query, 'status', ['active', 'done'] as const);
  if (status !== undefined) options.status = status;
  for (const field of ['createdFrom', 'createdBefore', 'updatedFrom', 'updatedBefore'] as const) {
    const value = text(query, field);
    if (value !== undefined) options[field] = value;
  }
  const cursor = text(query, 'cursor');
  if (cursor !== undefined) options.cursor = cursor;
  const limit = limitOf(query);
  if (limit !== undefined) options.limit = limit;
  return options;
}

/** `order`, `source`, `cursor`, `limit`. */
export function historyOptions(query: Query): HistoryPageOptions {
  const options: HistoryPageOptions = {};
  const order = oneOf(query, 'order', ['asc', 'desc'] as const);
  if (order !== undefined) options.order = order;
  const source = oneOf<HistorySource>(query, 'source', ['external', 'internal']);
  if (source !== undefined) options.source = source;
  const cursor = text(query, 'cursor');
  if (cursor !== undefined) options.cursor = cursor;
  const limit = limitOf(query);
  if (limit !== undefined) options.limit = limit;
  return options;
}
