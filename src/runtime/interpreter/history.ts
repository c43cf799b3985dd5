/**
 * History records of one macrostep and the ids they carry.
 *
 * ## Naming scheme
 *
 * Types follow the original implementation (`<m>` is the machine id, `<route>` a state path
 * without the machine id, `<EVENT>` an event type):
 *
 * | Type | When |
 * |---|---|
 * | `<EVENT>` (source `external`) | an event sent to the machine, with its payload |
 * | `<EVENT>` (source `internal`) | a raised event, when it is processed |
 * | `<m>.start` / `<m>.finish` | machine initialized / a top-level final state reached |
 * | `<m>.entry.start` / `.finish`, `<m>.exit.start` / `.finish` | root `entry` / `exit` behaviors (only when the root has some) |
 * | `<m>.state.<route>.enter` | a state was entered (every entered state, ancestors first) |
 * | `<m>.state.<route>.entry.start` / `.entry.finish` | around its entry actions (only when it has some) |
 * | `<m>.state.<route>.exit.start` / `.exit.finish` | around its exit actions (only when it has some) |
 * | `<m>.state.<route>.exit` | a state was left (deepest first) |
 * | `<m>.transition.<route>.<EVENT>.start` / `.finish` / `.fail` | a transition chosen for an event; `fail` when no branch passed. `<route>` is the active leaf the event was resolved from (the original's rule), or the completed state for `@done` |
 * | `<m>.action.<name>.start` / `.finish` | a transition, entry or exit action |
 * | `<m>.guard.<name>.pass` / `.fail` | a guard; a failed validation guard's payload is `{ <field>: [message] }` |
 * | `<m>.calculator.<name>.pass` / `.fail` | a calculator; `fail` carries `{ error: 'Calculator failed: ...' }` |
 * | `<m>.event.<TYPE>.raised` | `raise()` was called (the event itself is recorded when processed) |
 * | `<m>.parallel.<route>.region.enter` | before entering a region of a parallel state (`<route>` = the region) |
 * | `<m>.parallel.<route>.done` | every region of a parallel state is final |
 * | `<m>.parallel.<route>.fail` | a region job of the parallel state failed its last attempt (parallel dispatch) |
 * | `<m>.listen.entry|exit|transition.start` / `.finish` | around `config.listen` listeners |
 *
 * Internal steps (`@always`, `@done`) appear as `<m>.transition.<route>.@always.start` and so on.
 * Differences from the original, all to keep rows meaningful and the hot path short: entry/exit
 * `start`/`finish` rows only frame actually existing actions, the triggering event is not written
 * again for each `@always` step, and a targetless transition writes no `state.<route>.enter` row
 * (nothing is entered).
 *
 * Sequence numbers continue the input snapshot's `sequence` without gaps. All records of a
 * macrostep share one `createdAt`. Only the last record carries the full context (restore reads
 * it); the others have `context: null`.
 */
import { monotonicUlidFactory, pooledRandom } from '../ids.js';
import type { Context, EventObject } from '../definition/types.js';
import type { HistoryRecord, HistorySource } from './types.js';

const ENCODING = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const RANDOM_START = 10;
// The pooled source matters: one crypto value per character costs ~40 us for the first id of
// every millisecond.
const seedFactory = monotonicUlidFactory(pooledRandom);

let lastTime = -1;
let prefix = '';
let lastDigit = 0;

/**
 * A new record id: a ULID, monotonic within the process. The factory seeds each new
 * millisecond; ids within one millisecond increment the random part locally, which is what a
 * monotonic factory does too but without re-encoding the whole id per record (records are the
 * hot path).
 */
export function nextRecordId(time: number): string {
  if (time > lastTime) {
    const seed = seedFactory(time);
    lastTime = time;
    prefix = seed.slice(0, 25);
    lastDigit = ENCODING.indexOf(seed.charAt(25));
    return seed;
  }
  if (lastDigit < 31) {
    lastDigit += 1;
    return prefix + ENCODING.charAt(lastDigit);
  }
  const carried = incrementRandom(prefix);
  if (carried === null) return nextRecordId(lastTime + 1);
  prefix = carried;
  lastDigit = 0;
  return prefix + ENCODING.charAt(0);
}

/** Adds one to the base32 random digits of a 25-character id prefix; `null` on overflow. */
function incrementRandom(value: string): string | null {
  const chars = value.split('');
  for (let index = chars.length - 1; index >= RANDOM_START; index--) {
    const digit = ENCODING.indexOf(chars[index] ?? '0');
    if (digit < 31) {
      chars[index] = ENCODING.charAt(digit + 1);
      return chars.join('');
    }
    chars[index] = '0';
  }
  return null;
}

let lastIsoTime = Number.NaN;
let lastIso = '';

/** `toISOString` is costly next to a record; consecutive macrosteps in one millisecond share it. */
export function isoTime(time: number): string {
  if (time !== lastIsoTime) {
    lastIso = new Date(time).toISOString();
    lastIsoTime = time;
  }
  return lastIso;
}

/** Appends the records of one macrostep. */
export class HistoryWriter {
  readonly records: HistoryRecord[] = [];
  private sequence: number;
  private readonly createdAt: string;

  constructor(
    private readonly machineId: string,
    private readonly rootEventId: string,
    lastSequence: number,
    private readonly time: number,
    /** `false`: records are counted (sequence numbers) but not built. */
    private readonly keep = true,
  ) {
    this.sequence = lastSequence;
    // Only records carry it.
    this.createdAt = keep ? isoTime(time) : '';
  }

  /** Sequence number of the last record written (or of the input snapshot when none was). */
  get lastSequence(): number {
    return this.sequence;
  }

  push(
    type: string,
    source: HistorySource,
    payload: Record<string, unknown> | null,
    value: string[],
    event: EventObject,
    id?: string,
  ): void {
    this.sequence += 1;
    if (!this.keep) return;
    this.records.push({
      id: id ?? nextRecordId(this.time),
      sequence: this.sequence,
      createdAt: this.createdAt,
      machineId: this.machineId,
      rootEventId: this.rootEventId,
      source,
      type,
      payload,
      value,
      context: null,
      version: source === 'external' ? (event.version ?? 1) : 1,
      actor: event.actor ?? null,
    });
  }

  /** Puts the full context on the last record, the one restore reads. */
  seal(context: Context): void {
    const last = this.records[this.records.length - 1];
    if (last !== undefined) last.context = context;
  }
}
