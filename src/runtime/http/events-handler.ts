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
 * writes and polls nothing, and the streams of one instance share the subscription, the read of
 * each notice and the formatted message (live-followers.ts); states committed in quick
 * succession, or while the client is not reading, may arrive as the latest one only
 * (state-stream.ts: about one message is queued per stream). The stream ends after a final
 * state; a comment line every 15 s keeps proxies from closing an idle connection.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import { runMiddleware, type ResolvedMiddleware } from './middleware-registry.js';
import type { HttpServices } from './http-services.js';
import { LiveFollowers } from './live-followers.js';
import { readRoute } from './read-handler.js';
import { StateStream } from './state-stream.js';
import { guarded } from './responses.js';
import { defaultHttpLogger } from './http-logger.js';
import type { PlannedRoute, RouteHandler } from './types.js';

/** Builds the handler of one planned stream route (`route.handler === 'events'`). */
export function createEventsHandler<D extends MachineDefinitionBase>(
  definition: D,
  route: PlannedRoute,
  middleware: readonly ResolvedMiddleware[],
  services: HttpServices<D>,
): RouteHandler {
  const read = readRoute(definition, route, middleware, services);
  const followers = new LiveFollowers(services.instances, definition, (current) => {
    const envelope = read.envelope(current);
    return envelope instanceof Promise
      ? envelope.then((data) => message(current.snapshot.sequence, data))
      : message(current.snapshot.sequence, envelope);
  });

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
    const stream = new StateStream();
    stream.comment('retry: 1000');
    // Unknown ids throw here, before the stream starts: a JSON 404.
    await followers.follow(id, seen, stream, logError);
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

function message(sequence: number, envelope: unknown): string {
  return `id: ${sequence}\nevent: state\ndata: ${JSON.stringify(envelope)}\n\n`;
}
