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
  const refresh = (): void => {
    chain = chain
      .then(async () => {
        if (stopped) return;
        const read = await instances.read(definition, id);
        if (stopped || read.snapshot.sequence <= last) return;
        last = read.snapshot.sequence;
        onRead(read);
      })
      .catch(onError);
  };
  const unsubscribe = await instances.watch(id, (notice) => {
    if (notice.sequence > last) refresh();
  });
  refresh();
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
