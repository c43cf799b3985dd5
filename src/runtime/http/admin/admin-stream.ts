/**
 * `GET <prefix>/api/machines/{machine}/instances/{id}/stream`: the instance's committed states
 * as Server-Sent Events, for the console's live page. The same following as a registration's
 * state stream (live-followers.ts, one read per commit notice, nothing polled), with a message the
 * console needs whatever the machine's registrations: `{ id, sequence, state, status }`. The
 * console reads the record and the timeline again on each message. It ends after a final state;
 * `Last-Event-ID` resumes after the sequence it names, as a registration's stream does.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { MachineRuntime } from '../../engine/machine-runtime.js';
import type { InstanceRead } from '../../persistence/types.js';
import { LiveFollowers } from '../live-followers.js';
import { defaultHttpLogger } from '../http-logger.js';
import { StateStream } from '../state-stream.js';
import type { EndpointRequest, EndpointResponse } from '../types.js';

/** One message of the admin stream. */
export interface AdminStateMessage {
  id: string;
  sequence: number;
  state: string[];
  status: 'active' | 'done';
}

function message(read: InstanceRead): string {
  const { snapshot } = read;
  const data: AdminStateMessage = {
    id: snapshot.id,
    sequence: snapshot.sequence,
    state: [...snapshot.value],
    status: snapshot.status,
  };
  return `id: ${snapshot.sequence}\nevent: state\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The admin streams of each runtime and machine, grouped by instance (live-followers.ts). */
const followersOf = new WeakMap<
  MachineRuntime,
  WeakMap<MachineDefinition, LiveFollowers<MachineDefinition>>
>();

function followers(
  runtime: MachineRuntime,
  definition: MachineDefinition,
): LiveFollowers<MachineDefinition> {
  let byDefinition = followersOf.get(runtime);
  if (byDefinition === undefined) followersOf.set(runtime, (byDefinition = new WeakMap()));
  let found = byDefinition.get(definition);
  if (found === undefined) {
    found = new LiveFollowers<MachineDefinition>(runtime, definition, message);
    byDefinition.set(definition, found);
  }
  return found;
}

/** The stream's answer; an unknown instance throws before it starts (a JSON 404). */
export async function adminStream(
  runtime: MachineRuntime,
  definition: MachineDefinition,
  request: EndpointRequest,
): Promise<EndpointResponse> {
  const logger = request.log ?? defaultHttpLogger;
  const logError = (error: unknown): void =>
    logger.error('Admin state stream: reading a committed state failed', {
      error,
      route: 'admin.stream',
    });
  // Last-Event-ID (an EventSource reconnecting): only states newer than the one it has.
  const lastEventId = Number(request.headers['last-event-id'] ?? '');
  const seen = Number.isInteger(lastEventId) ? lastEventId : -1;
  const stream = new StateStream();
  stream.comment('retry: 1000');
  await followers(runtime, definition).follow(request.params['id'] ?? '', seen, stream, logError);
  return {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    },
    body: stream,
  };
}
