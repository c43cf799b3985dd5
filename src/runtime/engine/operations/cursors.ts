/**
 * Opaque page cursors of the operator's lists: the sort key of a page's last row, tagged with
 * the list it belongs to, as base64url JSON. Opaque so callers cannot depend on the key (a
 * later version may change it); tagged so a cursor of one list is refused by another instead of
 * silently skipping rows.
 */
import { InvalidOperationQueryException } from '../../errors.js';
import type { ListPosition } from '../../persistence/instance-queries.js';

/** Which list a cursor continues. */
export type CursorList =
  | { kind: 'instances'; machineId: string; order: 'state' | 'created' }
  | { kind: 'history'; instanceId: string; order: 'asc' | 'desc' };

interface CursorBody {
  list: string;
  position: ListPosition | number;
}

function listTag(list: CursorList): string {
  return list.kind === 'instances'
    ? `instances:${list.machineId}:${list.order}`
    : `history:${list.instanceId}:${list.order}`;
}

/** The cursor after `position` in `list`. */
export function encodeCursor(list: CursorList, position: ListPosition | number): string {
  const body: CursorBody = { list: listTag(list), position };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** The position a cursor of `list` holds; `InvalidOperationQueryException` for any other text. */
export function decodeCursor(
  list: CursorList & { kind: 'instances' },
  cursor: string,
): ListPosition;
export function decodeCursor(list: CursorList & { kind: 'history' }, cursor: string): number;
export function decodeCursor(list: CursorList, cursor: string): ListPosition | number {
  let body: Partial<CursorBody> | null = null;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorBody>;
  } catch {
    body = null;
  }
  const position = body?.position;
  const valid =
    body?.list === listTag(list) &&
    (list.kind === 'history'
      ? Number.isInteger(position)
      : typeof position === 'object' &&
        position !== null &&
        typeof position.time === 'string' &&
        typeof position.rootEventId === 'string');
  if (!valid) {
    const what =
      list.kind === 'history'
        ? `the history of '${list.instanceId}'`
        : `instances of '${list.machineId}'`;
    throw new InvalidOperationQueryException(
      `Cursor '${cursor}' does not continue this list of ${what}: pass the nextCursor of the previous page with the same filters, or no cursor for the first page.`,
      { key: 'cursor' },
    );
  }
  return position!;
}
