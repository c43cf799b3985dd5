/**
 * `node --import ./bench/startup/count-modules.mjs <entry>`: counts the modules a server loads
 * until it is stopped (SIGTERM, as bench/startup/run.ts --modules stops it), then prints one
 * `modules loaded: {json}` line: every module by group (machine-routes' dist/, the server's own
 * files, each package of node_modules) and the total. ES modules are seen by a loader hook (in
 * Node's loader thread, reported over a port), CommonJS ones in `require.cache`. Only for
 * counting: the hook thread slows the start, so timed runs go without it.
 */
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const { port1, port2 } = new MessageChannel();
const urls = new Set();
port1.on('message', (url) => urls.add(url));
port1.unref();
register('./count-modules-hooks.mjs', {
  parentURL: import.meta.url,
  data: { port: port2 },
  transferList: [port2],
});

const require = createRequire(import.meta.url);

/** The group of a loaded file: the package under node_modules, dist/ of this repository, or the server's own. */
function groupOf(file) {
  const nodeModules = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
  if (nodeModules !== null) return nodeModules[1];
  if (file.includes('/dist/')) return 'machine-routes (dist)';
  return 'own files';
}

process.once('SIGTERM', () => {
  const files = new Set(
    [...urls].filter((url) => url.startsWith('file:')).map((url) => new URL(url).pathname),
  );
  for (const file of Object.keys(require.cache)) files.add(file);
  const groups = {};
  for (const file of files) groups[groupOf(file)] = (groups[groupOf(file)] ?? 0) + 1;
  const sorted = Object.fromEntries(Object.entries(groups).sort((a, b) => b[1] - a[1]));
  process.stdout.write(
    `modules loaded: ${JSON.stringify({ total: files.size, groups: sorted })}\n`,
  );
  process.exit(0);
});
