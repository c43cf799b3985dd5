/**
 * The generated `server.gen.ts` as a library function: read the settings, build, listen, and
 * shut down gracefully on SIGTERM or SIGINT, then exit 0 (docs/operating.md "Shutdown").
 */
import { readEnvironment, type Environment } from '../runtime/environment.js';
import { MachineRoutesError } from '../runtime/errors.js';
import type { BuiltApp, CloseReport } from './app-parts.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Printed after the listening line, with `{url}` replaced by the base URL (a curl to try). */
  hint?: string;
  /** Environment of PORT, HOST and `MACHINE_*` (default `process.env`). */
  env?: Environment;
  /** Where the lines go (default `console.log` / `console.error`). */
  log?: (line: string) => void;
  error?: (line: unknown) => void;
  /** Ends the process (default `process.exit`); tests pass their own. */
  exit?: (code: number) => void;
}

/** What {@link serve} started. */
export interface Served {
  url: string;
  /** Resolves with the close's report once a signal has shut the app down. */
  stopped: Promise<CloseReport>;
}

/**
 * Builds the app with `build`, listens on PORT and HOST, and on the first SIGTERM or SIGINT
 * closes it gracefully (`app.shutdown()`: stop accepting, 503 with Retry-After for requests on open
 * connections, requests in flight and running jobs finish within `MACHINE_SHUTDOWN_TIMEOUT`,
 * store closed), then exits 0. A second signal ends the process at once. A settings or config
 * problem is printed as its message and exits 1.
 *
 * @example
 * // server.gen.ts
 * void serve(buildApp, { hint: 'try: curl -X POST {url}/orders/create' });
 */
export async function serve(
  build: () => Promise<BuiltApp<unknown>>,
  options: ServeOptions = {},
): Promise<Served | null> {
  const log = options.log ?? ((line: string) => console.log(line));
  const error = options.error ?? ((line: unknown) => console.error(line));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  try {
    // Every setting (PORT, HOST, MACHINE_*) checked at once: all bad values in one message.
    const { port, host } = readEnvironment(options.env);
    const app = await build();
    const url = await app.listen(port, host);
    log(`machine-routes: listening on ${url}`);
    if (options.hint !== undefined) log(options.hint.replaceAll('{url}', url));
    const stopped = new Promise<CloseReport>((resolve) => {
      const stop = (signal: NodeJS.Signals): void => {
        for (const name of SIGNALS) process.removeListener(name, stop);
        // A second signal takes the default action: the process ends at once.
        log(`machine-routes: ${signal}, shutting down`);
        void app.shutdown().then(
          (report) => {
            if (report.cutRequests > 0)
              error(
                `machine-routes: ${report.cutRequests} request(s) still in flight after the shutdown timeout were cut`,
              );
            log(`machine-routes: stopped in ${report.elapsedMs} ms`);
            resolve(report);
            exit(0);
          },
          (failure: unknown) => {
            error(failure);
            exit(1);
          },
        );
      };
      for (const name of SIGNALS) process.once(name, stop);
    });
    return { url, stopped };
  } catch (failure) {
    // A problem of settings or config is its message; anything else keeps its stack.
    error(
      failure instanceof MachineRoutesError
        ? `${failure.name} [${failure.code}] ${failure.message}`
        : failure,
    );
    exit(1);
    return null;
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
