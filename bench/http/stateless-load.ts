/**
 * The load the stateless-route benches (alloc, alloc-sites, cpu, profile-diff) drive through
 * bench/http/server.ts: a scenario name's path, one JSON body, and a POST burst that fails on
 * any non-2xx answer, so a broken route cannot pass for a fast one.
 */
import autocannon from 'autocannon';

/** Path of each named scenario; any other scenario is a path itself (`BENCH_SCENARIOS`). */
export const STATELESS_PATHS: Readonly<Record<string, string>> = {
  raw: '/raw/increment',
  'mr-stateless': '/quotes/increment',
};

/** The body every request sends. */
export const STATELESS_BODY = JSON.stringify({ payload: { by: 1 } });

/** Sends `amount` POSTs of `scenario` to the server on `port`, `connections` at a time. */
export async function driveStateless(
  port: number,
  scenario: string,
  amount: number,
  connections = 10,
): Promise<void> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${STATELESS_PATHS[scenario] ?? scenario}`,
    connections,
    amount,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: STATELESS_BODY,
  });
  if (result.non2xx + result.errors > 0) throw new Error(`${scenario}: non-2xx answers`);
}
