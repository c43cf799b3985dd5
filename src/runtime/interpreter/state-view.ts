/**
 * The read-only state view behaviors receive (`args.state`).
 */
import type { StateView } from '../definition/behavior-types.js';

/**
 * True when `stateId` (full, or without the machine id prefix) is an active state id in `value`
 * or an ancestor of one.
 */
export function matchesState(
  machineId: string,
  value: readonly string[],
  stateId: string,
): boolean {
  const full =
    stateId === machineId || stateId.startsWith(`${machineId}.`)
      ? stateId
      : `${machineId}.${stateId}`;
  for (const id of value) {
    if (
      id === full ||
      (id.length > full.length && id.startsWith(full) && id.charCodeAt(full.length) === 46)
    )
      return true;
  }
  return false;
}

/**
 * A view reading `value` from its source, so one object serves a whole macrostep while the
 * configuration changes. A class rather than closures: views are made per macrostep, and
 * per-instance closures cost more than a prototype method there.
 */
export class LiveStateView implements StateView {
  constructor(
    private readonly machineId: string,
    private readonly source: { readonly value: readonly string[] },
  ) {}

  get value(): readonly string[] {
    return this.source.value;
  }

  matches(stateId: string): boolean {
    return matchesState(this.machineId, this.source.value, stateId);
  }
}
