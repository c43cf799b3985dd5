/**
 * The admin group's repair routes: each one body field set (`who`, and the action's own) handed
 * to one `MachineOperations` repair. Every repair goes through the engine's locked step and is
 * recorded with `operator:<who>` (docs/operations.md "Repairing").
 */
import { InvalidOperationQueryException } from '../../errors.js';
import type { MachineOperations } from '../../engine/operations/machine-operations.js';
import type { InstanceResult } from '../../persistence/types.js';

/** The operator named when a request names none. */
export const DEFAULT_ADMIN_OPERATOR = 'admin';

/** One repair route: its action (the last path segment) and what it does. */
export interface AdminRepair {
  action: 'cancel' | 'send' | 'retry' | 'fire' | 'release' | 'pause' | 'resume';
  run(machineId: string, id: string, body: Record<string, unknown>): Promise<unknown>;
}

function optionalText(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw new InvalidOperationQueryException(`Body field '${key}' takes a non-empty string.`, {
      key,
    });
  }
  return value;
}

function who(body: Record<string, unknown>): string {
  return optionalText(body, 'who') ?? DEFAULT_ADMIN_OPERATOR;
}

/** What a sent event did: the instance's state after it. */
function stepOf(result: InstanceResult): { sequence: number; state: string[]; status: string } {
  const { snapshot } = result;
  return { sequence: snapshot.sequence, state: [...snapshot.value], status: snapshot.status };
}

/** The repairs, in the order the console shows their buttons. */
export function adminRepairs(operations: MachineOperations): AdminRepair[] {
  return [
    {
      action: 'cancel',
      run: async (machineId, id, body) => {
        const event = optionalText(body, 'event');
        return stepOf(
          await operations.cancel(machineId, id, { who: who(body), ...(event ? { event } : {}) }),
        );
      },
    },
    {
      action: 'send',
      run: async (machineId, id, body) => {
        const type = optionalText(body, 'type');
        if (type === undefined) {
          throw new InvalidOperationQueryException(
            'Sending an operator event takes its type: { "type": "RECALCULATE", "payload": { ... } }.',
            { key: 'type' },
          );
        }
        // MachineOperations.send checks the payload against the event's schema (422).
        const payload = body['payload'] as Record<string, unknown> | undefined;
        const event = payload === undefined ? { type } : { type, payload };
        return stepOf(await operations.send(machineId, id, event, { who: who(body) }));
      },
    },
    {
      action: 'retry',
      run: (machineId, id, body) => {
        const jobId = optionalText(body, 'jobId');
        return operations.retry(machineId, id, { who: who(body), ...(jobId ? { jobId } : {}) });
      },
    },
    {
      action: 'fire',
      run: (machineId, id, body) => {
        const timer = optionalText(body, 'timer');
        return operations.fire(machineId, id, { who: who(body), ...(timer ? { timer } : {}) });
      },
    },
    {
      action: 'release',
      run: (machineId, id, body) => operations.releaseLock(machineId, id, { who: who(body) }),
    },
    {
      action: 'pause',
      run: async (machineId, id, body) => ({
        changed: (await operations.pause(machineId, id, { who: who(body) })).record !== null,
      }),
    },
    {
      action: 'resume',
      run: async (machineId, id, body) => ({
        changed: (await operations.resume(machineId, id, { who: who(body) })).record !== null,
      }),
    },
  ];
}
