/**
 * Reads one setting from the environment under its names: the short name and the spec's
 * `MACHINE_PARALLEL_DISPATCH_*` alias. Both set to different values is a problem, not a guess.
 */
export type EnvSetting =
  | { kind: 'unset' }
  | { kind: 'set'; name: string; value: string }
  | { kind: 'conflict'; problem: string };

export function readEnvSetting(
  names: readonly string[],
  env: Record<string, string | undefined>,
): EnvSetting {
  const set = names.filter((name) => (env[name] ?? '').trim() !== '');
  if (set.length === 0) return { kind: 'unset' };
  if (new Set(set.map((name) => env[name]!.trim())).size > 1) {
    return {
      kind: 'conflict',
      problem: `${set.join(' and ')} are both set, to different values; set only one.`,
    };
  }
  return { kind: 'set', name: set[0]!, value: env[set[0]!]!.trim() };
}
