/**
 * The state stream of an instance (`stream: true`): `GET {prefix}/{machineId}/events` as
 * Server-Sent Events. Each message is the read envelope of one committed state:
 *
 *   id: <sequence>
 *   event: state
 *   data: {"data":{"id":...,"state":[...],"availableEvents":[...],"output":...,"isProcessing":false}}
 *
 * The first message is the current state, unless `Last-Event-ID` already names its sequence (a
 * reconnecting client is sent only what is newer). States follow commit notices, so a stream
 * writes and polls nothing; states committed in quick succession, or while the client is not
 * reading, may arrive as the latest one only (state-stream.ts: about one message is queued per
 * stream). The stream ends after a final state; a comment line every 15 s keeps proxies from
 * closing an idle connection.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import type { HttpServices } from './http-services.js';
import { readRoute } from './read-handler.js';
import { StateStream } from './state-stream.js';
import { defaultHttpLogger, guarded } from './responses.js';
import type { PlannedRoute, RouteHandler } from './types.js';
import { watchInstance, type InstanceWatch } from './watch-instance.js';

/** Milliseconds between keep-alive comments. */
const HEARTBEAT_MS = 15_000;

/** Builds the handler of one planned stream route (`route.handler === 'events'`). */
export function createEventsHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const read = readRoute(definition, route, middleware, services);

  return guarded(route, services.logger, async (request) => {
    if (middleware.length > 0) {
      const shortCircuit = await runMiddleware(middleware, request);
      if (shortCircuit) return shortCircuit;
    }
    const id = await read.instanceId(request);
    // After the answer has started: logged, as `guarded` would, by the router's or the request's logger.
    const logger = services.logger ?? request.log ?? defaultHttpLogger;
    const logError = (error: unknown): void =>
      logger.error('State stream: reading a committed state failed', {
        error,
        route: route.name,
      });
    const lastEventId = Number(request.headers['last-event-id'] ?? '');
    const seen = Number.isInteger(lastEventId) ? lastEventId : -1;

    let heartbeat: NodeJS.Timeout | undefined;
    // Only the watch's stop is kept for the stream's life: its first read is not (bench/scale/subscribers-heap.ts).
    let stopWatch: (() => void) | undefined;
    let stopped = false;
    const stream = new StateStream({
      format: async (current) =>
        `id: ${current.snapshot.sequence}\nevent: state\ndata: ${JSON.stringify(await read.envelope(current))}\n\n`,
      stop: () => {
        stopped = true;
        clearInterval(heartbeat);
        stopWatch?.();
      },
      onError: logError,
    });
    // Unknown ids throw here, before the stream starts: a JSON 404.
    const watch: InstanceWatch = await watchInstance(
      services.instances,
      definition,
      id,
      (current) => stream.offer(current),
      logError,
    );
    // A final state or a client gone while the subscription was being made.
    stopWatch = watch.stop;
    if (stopped) watch.stop();
    else {
      heartbeat = setInterval(() => stream.comment(': keep-alive'), HEARTBEAT_MS);
      heartbeat.unref();
    }
    // A retry hint, then the current state unless the client already has it.
    stream.comment('retry: 1000');
    if (watch.first.snapshot.sequence > seen) stream.offer(watch.first);
    // The client has the final state already: nothing will follow.
    else if (watch.first.snapshot.status === 'done') stream.finish();
    return {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      },
      body: stream,
    };
  });
}
