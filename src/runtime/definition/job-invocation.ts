/**
 * Delegating states with `job` (job actors): their definition-time checks and normalized form.
 * The state's `target` (fire-and-forget) is normalized with its transitions as an `@always`
 * transition (definition/transitions.ts): the job starts when the step settles, before
 * `@always` runs, so the state is entered, the job requested, and left in one step.
 */
import { InvalidStateConfigException } from '../errors.js';
import {
  invocationRecords,
  normalizeInput,
  timeoutDelay,
  type JobInvocation,
} from './invocation.js';
import type { IssueCollector } from './issues.js';
import { isJobDefinition, type JobDefinition } from './job.js';
import type { StateNode } from './state-node.js';

/** Function names that say nothing about the job (`{ job: async () => ... }` is named `job`). */
const GENERIC_NAMES = new Set(['', 'job', 'run', 'anonymous']);

/** Checks the `job` keys of `node` and returns its invocation, or `null` when unusable. */
export function normalizeJobInvocation(
  node: StateNode,
  machineId: string,
  issues: IssueCollector,
): JobInvocation | null {
  const config = node.config;
  let valid = true;
  const problem = (key: string, message: string, fix?: string): void => {
    issues.add(InvalidStateConfigException, { path: node.route, key }, message, fix);
    valid = false;
  };

  const job = toJobDefinition(config.job);
  if (job === null) {
    problem(
      'job',
      `it has invalid 'job' value. Must be an async function (input, { signal, idempotencyKey, instance, actor }) => output, or defineJob({ input, output, run }).`,
    );
    return null;
  }
  if (config.machine !== undefined) {
    problem(
      'job',
      `it cannot have both 'job' and 'machine'.`,
      `Keep 'machine' for a child machine or 'job' for a single asynchronous call.`,
    );
  }
  // Parallel states are reported by validateStateConfig.
  if (node.type === 'parallel') return null;
  if (node.type !== 'atomic') {
    problem(
      'job',
      `it is ${node.type} and cannot run a job: only atomic states delegate.`,
      `Move 'job' to an atomic state.`,
    );
  }
  if (config.forward !== undefined) {
    problem(
      'forward',
      `it has 'forward' with 'job'. A job actor receives no events.`,
      `Remove 'forward', or use machine: <child machine> to forward events.`,
    );
  }
  if (config.queue !== undefined) {
    problem(
      'queue',
      `it has 'queue' with 'job'. A job always runs on the job queue.`,
      `Remove 'queue'.`,
    );
  }
  const hasDone = node.on.has('@done') || config.on?.['@done'] !== undefined;
  const target = config.target;
  if (target !== undefined && typeof target !== 'string') {
    problem('target', `it has invalid 'target': use the key or path of the state to move to.`);
  }
  if (hasDone && target !== undefined) {
    problem(
      'target',
      `it cannot have both '@done' and 'target' with 'job'.`,
      `Use '@done' to await the job's result, or 'target' to move on at once (fire-and-forget).`,
    );
  } else if (!hasDone && target === undefined) {
    problem(
      'job',
      `it has 'job' without '@done' or 'target'.`,
      `Add on: { '@done': '<next state>' } to await its result, or target: '<next state>' to move on at once.`,
    );
  }
  const fireAndForget = !hasDone;
  if (fireAndForget && target !== undefined) {
    for (const key of ['@fail', '@timeout'] as const) {
      if (config.on?.[key] !== undefined) {
        problem(
          key,
          `it has '${key}' with 'target'. A fire-and-forget job (target, no '@done') reports no outcome.`,
          `Use on: { '@done': ... } instead of target, or remove '${key}'.`,
        );
      }
    }
    if (config.on?.['@always'] !== undefined) {
      problem('target', `it has both 'target' and an '@always' transition.`, `Keep one of them.`);
    }
  }
  const mapInput = normalizeInput(config.input, 'it', problem);
  const timeoutSeconds = fireAndForget ? null : timeoutDelay(node, 'it', problem);
  if (!valid) return null;

  const name = jobName(job, config.job, node.key);
  return Object.freeze({
    kind: 'job',
    async: true,
    name,
    job,
    fireAndForget,
    mapInput,
    timeoutSeconds,
    records: invocationRecords(machineId, name),
  });
}

function toJobDefinition(value: unknown): JobDefinition<unknown, unknown> | null {
  if (isJobDefinition(value)) return value;
  if (typeof value !== 'function') return null;
  return Object.freeze({
    kind: 'job',
    name: null,
    input: null,
    output: null,
    run: value as JobDefinition<unknown, unknown>['run'],
  });
}

function jobName(job: JobDefinition<unknown, unknown>, raw: unknown, stateKey: string): string {
  const named = job.name ?? (typeof raw === 'function' ? raw.name : '');
  return GENERIC_NAMES.has(named) ? stateKey : named;
}
