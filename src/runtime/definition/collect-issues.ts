/**
 * Issue-collecting mode of `defineMachine`: inside `collectDefinitionIssues(fn)` a machine with
 * problems records them and returns a definition marked `invalid` instead of throwing, so a tool
 * can load a whole config and report every machine's problems at once.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { MachineRoutesError } from '../errors.js';

interface IssueScope {
  readonly issues: MachineRoutesError[];
}

const scope = new AsyncLocalStorage<IssueScope>();

/** The collecting scope `defineMachine` reports to, if it runs inside one. */
export function currentIssueScope(): IssueScope | undefined {
  return scope.getStore();
}

/** Runs `fn` synchronously with issue collection on; returns what it recorded. */
export function collectIssuesSync(fn: () => void): MachineRoutesError[] {
  const store: IssueScope = { issues: [] };
  scope.run(store, fn);
  return store.issues;
}

/**
 * Runs `fn` (for example `() => import(configPath)`) with `defineMachine` recording its problems
 * instead of throwing. Returns `fn`'s result, the error it threw (if any) and every issue.
 *
 * @example const { issues } = await collectDefinitionIssues(() => import('./machines.ts'))
 */
export async function collectDefinitionIssues<T>(
  fn: () => Promise<T>,
): Promise<{ result: T | undefined; error?: unknown; issues: MachineRoutesError[] }> {
  const store: IssueScope = { issues: [] };
  return scope.run(store, async () => {
    try {
      const result = await fn();
      return { result, issues: store.issues };
    } catch (error) {
      return { result: undefined, error, issues: store.issues };
    }
  });
}
