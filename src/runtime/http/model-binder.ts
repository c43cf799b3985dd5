/**
 * Model binding: a model-bound route finds a record by its route parameter and reads (or, on
 * first use, writes) the field holding the machine id. `tableModelBinder` does this for a
 * table in the embedded SQLite or the PostgreSQL store, on the store's own connection.
 */
import type { Store } from '../persistence/store.js';
import { RecordAlreadyBoundError } from '../persistence/transaction.js';
import type { ModelBinder } from './types.js';

export type { ModelBinder };

/** Options of {@link tableModelBinder}. */
export interface TableModelBinderOptions {
  /** A SQLite or PostgreSQL store (its connection is reused; no second pool). */
  store: Store;
  /** Table holding the records (`orders`). */
  table: string;
  /** Column the route parameter is matched against (`id`). */
  key: string;
}

/** A table row as the binder reads it. */
export type TableRecord = Record<string, unknown>;

// Identifiers cannot be bound as parameters: they are checked once and quoted.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A binder for `table`, matching `key` against the route parameter. The registration's
 * `attribute` names the column holding the machine id.
 *
 * @example
 * const router = new MachineRouter({ runtime, models: { Order: tableModelBinder({ store, table: 'orders', key: 'id' }) } });
 * router.register(orderMachine, { prefix: 'orders', model: 'Order', attribute: 'machine_id', modelFor: ['SUBMIT'] });
 */
export function tableModelBinder(options: TableModelBinderOptions): ModelBinder<TableRecord> {
  const table = quote(options.table, 'table');
  const key = quote(options.key, 'key');
  const store = options.store as Store & { database?: SqliteDatabase; pool?: PgPool };
  const run = sqlRunner(store);
  const column = (attribute: string): string => quote(attribute, 'attribute');
  return {
    async find(param) {
      // No stored key holds NUL (PostgreSQL text cannot: the query would fail), so it is a 404.
      if (param.includes('\u0000')) return null;
      const rows = await run.query(
        `SELECT * FROM ${table} WHERE ${key} = ${run.placeholder(1)} LIMIT 1`,
        [param],
      );
      return rows[0] ?? null;
    },
    readMachineId(record, attribute) {
      const value = record[attribute];
      return typeof value === 'string' && value !== '' ? value : null;
    },
    claimMachineId(record, attribute, id) {
      // Only a record still without a machine is bound: a concurrent first request that
      // committed first leaves 0 rows to update, and this commit rolls back.
      const sql = `UPDATE ${table} SET ${column(attribute)} = ${run.placeholder(1)} WHERE ${key} = ${run.placeholder(2)} AND (${column(attribute)} IS NULL OR ${column(attribute)} = '')`;
      const params = [id, record[options.key]];
      const described = `${options.table}.${options.key} = ${String(record[options.key])}`;
      return (transaction) => {
        if (transaction.kind === 'sqlite') {
          const changes = transaction.database.prepare(sql).run(...params).changes;
          if (changes !== 1) throw new RecordAlreadyBoundError(described);
          record[attribute] = id;
          return;
        }
        return transaction.client.query(sql, params).then((result) => {
          if (result.rowCount !== 1) throw new RecordAlreadyBoundError(described);
          record[attribute] = id;
        });
      };
    },
    async writeMachineId(record, attribute, id) {
      await run.query(
        `UPDATE ${table} SET ${column(attribute)} = ${run.placeholder(1)} WHERE ${key} = ${run.placeholder(2)}`,
        [id, record[options.key]],
      );
      record[attribute] = id;
    },
  };
}

interface SqliteDatabase {
  prepare(sql: string): {
    all(...params: unknown[]): unknown[];
    run(...params: unknown[]): unknown;
    reader: boolean;
  };
}
interface PgPool {
  query(sql: string, params: unknown[]): Promise<{ rows: unknown[] }>;
}
interface SqlRunner {
  placeholder(index: number): string;
  query(sql: string, params: unknown[]): Promise<TableRecord[]>;
}

function sqlRunner(store: Store & { database?: SqliteDatabase; pool?: PgPool }): SqlRunner {
  if (store.kind === 'sqlite' && store.database) {
    const db = store.database;
    return {
      placeholder: () => '?',
      async query(sql, params) {
        const statement = db.prepare(sql);
        if (statement.reader) return statement.all(...params) as TableRecord[];
        statement.run(...params);
        return [];
      },
    };
  }
  if (store.kind === 'postgres' && store.pool) {
    const pool = store.pool;
    return {
      placeholder: (index) => `$${index}`,
      async query(sql, params) {
        return (await pool.query(sql, params)).rows as TableRecord[];
      },
    };
  }
  throw new Error(`tableModelBinder needs a SQLite or PostgreSQL store, got '${store.kind}'.`);
}

function quote(identifier: string, option: string): string {
  if (!IDENTIFIER.test(identifier)) {
    throw new Error(
      `tableModelBinder: '${option}' must be a plain SQL identifier, got '${identifier}'.`,
    );
  }
  return `"${identifier}"`;
}
