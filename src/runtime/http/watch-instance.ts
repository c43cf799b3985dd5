/**
 * Following one instance's committed states without polling: one read now, then one read per
 * commit notice (`MachineInstances.watch`), in order, each newer than the last delivered.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import type { MachineInstances } from '../engine/machine-instances.js';
import type { InstanceRead } from '../persistence/types.js';
import { ATTR } from '../telemetry/attributes.js';
import { instruments } from '../telemetry/metrics.js';

/** A started watch: the first read, and how to stop. */
export interface InstanceWatch {
  first: InstanceRead;
  stop(): void;
}

/** A read in flight, started after the notice of `sequence` was delivered. */
interface SharedRead {
  sequence: number;
  read: Promise<InstanceRead>;
}

/**
 * The reads in flight per instance (`<machine>\0<id>`) of each `MachineInstances`: the watchers
 * of one instance share the read of one notice, so a commit watched by N streams costs one read,
 * not N (bench/scale/subscribers.ts). A read started after the notice of sequence `s` was
 * delivered sees `s` or later, so it serves every watcher waiting for `s` or earlier.
 */
const inFlight = new WeakMap<object, Map<string, SharedRead>>();

export function sharedRead<D extends MachineDefinitionBase>(
  instances: MachineInstances<D>,
  definition: D,
  id: string,
  sequence: number,
): Promise<InstanceRead> {
  let reads = inFlight.get(instances);
  if (!reads) inFlight.set(instances, (reads = new Map()));
  const key = `${definition.id}\0${id}`;
  const current = reads.get(key);
  if (current && current.sequence >= sequence) return current.read;
  const entry: SharedRead = { sequence, read: instances.read(definition, id) };
  reads.set(key, entry);
  const forget = (): void => {
    if (reads.get(key) === entry) reads.delete(key);
  };
  entry.read.then(forget, forget);
  return entry.read;
}

/**
 * Reads the instance (throws `MachineNotFoundException` before anything is watched), then
 * calls `onRead` for every later committed state, oldest first. Commits landing between the
 * first read and the subscription are caught by one more read once it is in effect.
 */
export async function watchInstance<D extends MachineDefinitionBase>(
  instances: MachineInstances<D>,
  definition: D,
  id: string,
  onRead: (read: InstanceRead) => void,
  onError: (error: unknown) => void,
): Promise<InstanceWatch> {
  const first = await instances.read(definition, id);
  let last = first.snapshot.sequence;
  let stopped = false;
  let chain: Promise<void> = Promise.resolve();
  // `sequence`: the notice's, or null for the read once subscribed (shared with no one).
  const refresh = (sequence: number | null): void => {
    chain = chain
      .then(async () => {
        if (stopped) return;
        const read =
          sequence === null
            ? await instances.read(definition, id)
            : await sharedRead(instances, definition, id, sequence);
        if (stopped || read.snapshot.sequence <= last) return;
        last = read.snapshot.sequence;
        onRead(read);
      })
      .catch(onError);
  };
  const unsubscribe = await instances.watch(id, (notice) => {
    if (notice.sequence > last) refresh(notice.sequence);
  });
  refresh(null);
  const subscribers = instruments().liveSubscribers;
  const attributes = { [ATTR.machine]: definition.id };
  subscribers.add(1, attributes);
  return {
    first,
    stop: () => {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      subscribers.add(-1, attributes);
    },
  };
}
