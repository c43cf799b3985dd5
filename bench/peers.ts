/**
 * Peers of the comparison benchmarks (DBOS Transact, graphile-worker): installed on demand into
 * bench/.peers (gitignored), so the project's package-lock does not carry them. Versions are
 * pinned here: a figure names the version it was taken with.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The peers and the versions the figures in bench/README.md were taken with. */
export const PEERS = {
  '@dbos-inc/dbos-sdk': '5.3.0',
  '@dbos-inc/postgres-datasource': '4.24.16',
  'graphile-worker': '0.17.3',
} as const;
export type PeerName = keyof typeof PEERS;

/** bench/.peers, where the peers are installed. */
export const PEERS_DIRECTORY = fileURLToPath(new URL('./.peers/', import.meta.url));

function resolvePeer(name: string): string | null {
  const require = createRequire(`${PEERS_DIRECTORY}package.json`);
  try {
    return require.resolve(name);
  } catch {
    return null;
  }
}

/**
 * Makes sure `names` are installed in bench/.peers (one `npm install --prefix` of all that are
 * missing) and returns a line saying why not when they cannot be, else null.
 */
export function ensurePeers(names: readonly PeerName[]): string | null {
  const missing = names.filter((name) => resolvePeer(name) === null);
  if (missing.length === 0) return null;
  const specs = missing.map((name) => `${name}@${PEERS[name]}`);
  console.log(`installing ${specs.join(' ')} into bench/.peers`);
  const result = spawnSync(
    'npm',
    ['install', '--prefix', PEERS_DIRECTORY, '--no-save', '--no-audit', '--no-fund', ...specs],
    { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' },
  );
  const still = names.filter((name) => resolvePeer(name) === null);
  if (result.status === 0 && still.length === 0) return null;
  const reason = (result.stderr || result.error?.message || '').trim().split('\n').slice(-2);
  return `cannot install ${still.join(', ')} (${reason.join(' ') || `npm exited ${result.status}`})`;
}

/** Imports an installed peer (`ensurePeers` first). */
export async function importPeer<T>(name: PeerName): Promise<T> {
  const path = resolvePeer(name);
  if (path === null || !existsSync(path))
    throw new Error(`${name} is not installed in bench/.peers`);
  return (await import(pathToFileURL(path).href)) as T;
}
