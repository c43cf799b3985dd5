/**
 * Where the runtime reports what nobody awaits (failed jobs, timer sweeps, deferred sends) and
 * the HTTP layer reports unexpected errors: the host framework's logger. The shape is pino's
 * (`log.error({ err }, message)`), so Fastify's `app.log` / `request.log` and pino-http's
 * `req.log` are passed as they are.
 */

/** The part of a pino-style logger the runtime uses. */
export interface Logger {
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * The logger used when the application gives none (a worker process without a framework):
 * one JSON line per error on stderr, pino's fields (`level` 50, `time`, `msg`, `err`).
 */
export const stderrLogger: Logger = {
  error(fields, message) {
    const { err, ...rest } = fields;
    process.stderr.write(
      `${JSON.stringify({
        level: 50,
        time: Date.now(),
        name: 'machine-routes',
        msg: message,
        ...rest,
        ...(err === undefined ? {} : { err: serializeError(err) }),
      })}\n`,
    );
  },
};

function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  return {
    type: error.name,
    message: error.message,
    ...(code === undefined ? {} : { code }),
    stack: error.stack,
  };
}
