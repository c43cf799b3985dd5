/**
 * The HTTP layer's error logging: the logger it writes to when neither the application nor the
 * framework gives one, the adapter from a pino-style logger, and the request fields a line carries.
 */
import { stderrLogger, type Logger } from '../logger.js';
import { traceIdOf } from '../telemetry/tracing.js';
import type { EndpointRequest, HttpLogger, HttpLogMeta } from './types.js';

/** The request id and trace id a log line of `request` carries. */
export function requestLogFields(
  request: EndpointRequest,
): Pick<HttpLogMeta, 'requestId' | 'traceId'> {
  const traceId = traceIdOf(request.headers);
  return {
    ...(request.id === undefined ? {} : { requestId: request.id }),
    ...(traceId === undefined ? {} : { traceId }),
  };
}

/** An `HttpLogger` writing to a pino-style logger: `log.error({ err, route }, message)`. */
export function httpLoggerOf(log: Logger): HttpLogger {
  return {
    error(message, meta) {
      // pino's and OpenTelemetry's log-correlation names: `reqId` (Fastify), `trace_id`.
      log.error(
        {
          err: meta.error,
          ...(meta.route === undefined ? {} : { route: meta.route }),
          ...(meta.requestId === undefined ? {} : { reqId: meta.requestId }),
          ...(meta.traceId === undefined ? {} : { trace_id: meta.traceId }),
        },
        message,
      );
    },
  };
}

/** The HTTP layer's logger when neither the application nor the framework gives one. */
export const defaultHttpLogger: HttpLogger = httpLoggerOf(stderrLogger);

/**
 * @deprecated Use `defaultHttpLogger`, or better the framework's logger (`httpLoggerOf(app.log)`).
 * Kept for code written against earlier versions; it writes JSON lines to stderr now.
 */
export const consoleLogger: HttpLogger = defaultHttpLogger;
