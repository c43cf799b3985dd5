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
 * writes and polls nothing; states committed in quick succession may arrive as the latest one
 * only. The stream ends after a final state; a comment line every 15 s keeps proxies from
 * closing an idle connection.
 */
import { Readable } from 'node:stream';
import type { MachineDefinitionBase } from '../definition/types.js';
import type { InstanceRead } from '../persistence/types.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import type { HttpServices } from './http-services.js';
import { readRoute } from './read-handler.js';
import { defaultHttpLogger, guarded } from './responses.js';
import type { PlannedRoute, RouteHandler } from './types.js';
import { watchInstance } from './watch-instance.js';

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
    let stop = (): void => {};
    // Messages are written in commit order: each waits for the envelope before it.
    let queue: Promise<void> = Promise.resolve();
    const stream = new Readable({
      read() {},
      destroy(error, callback) {
        clearInterval(heartbeat);
        stop();
        callback(error);
      },
    });
    const write = (current: InstanceRead): void => {
      queue = queue
        .then(async () => {
          const body = await read.envelope(current);
          if (stream.destroyed) return;
          stream.push(
            `id: ${current.snapshot.sequence}\nevent: state\ndata: ${JSON.stringify(body)}\n\n`,
          );
          if (current.snapshot.status === 'done') {
            clearInterval(heartbeat);
            stop();
            stream.push(null);
          }
        })
        .catch(logError);
    };
    // Unknown ids throw here, before the stream starts: a JSON 404.
    const watch = await watchInstance(services.instances, definition, id, write, logError);
    stop = watch.stop;
    heartbeat = setInterval(() => stream.push(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    // A retry hint, then the current state unless the client already has it.
    stream.push('retry: 1000\n\n');
    if (watch.first.snapshot.sequence > seen) write(watch.first);
    else if (watch.first.snapshot.status === 'done') {
      // The client has the final state already: nothing will follow.
      clearInterval(heartbeat);
      stop();
      stream.push(null);
    }
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
