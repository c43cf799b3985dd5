/**
 * Messaging between machines, the effectful half (the pure half, recording `send` effects, is
 * interpreter/messaging.ts): synchronous sends delivered right after the sender's commit, and
 * the `send` job of `dispatchTo` / `dispatchToParent`, retried while the target is busy or does
 * not accept the event yet.
 */
import {
  ForwardTargetUnavailableException,
  InstancePausedException,
  MachineAlreadyRunningException,
  NoTransitionDefinitionFoundException,
} from '../../errors.js';
import type { SendEffect } from '../../interpreter/effects.js';
import type { JobPayloads } from '../../interpreter/job-payloads.js';
import type { EngineContext } from '../context.js';
import { unknownMachine } from '../machine-registry.js';
import { enqueueJobs } from './job-requests.js';

/**
 * Delivers synchronous sends in order, after the sender's commit; a busy target gets the send
 * as a retried job. Not jobs themselves: a crash between the commit and their delivery loses
 * them (use `dispatchTo` for messages that must survive one).
 */
export async function deliverSends(
  ctx: EngineContext,
  sends: readonly SendEffect[],
): Promise<void> {
  for (const effect of sends) await deliver(ctx, effect);
}

async function deliver(ctx: EngineContext, effect: SendEffect): Promise<void> {
  const definition = ctx.registry.resolve(effect.target.machineId);
  if (definition === undefined) {
    ctx.onError(unknownMachine(effect.target.machineId), `sendTo ${effect.target.machineId}`);
    return;
  }
  try {
    await ctx.send(definition, effect.target.id, effect.event);
  } catch (error) {
    if (isRetryable(error)) {
      await retry(ctx, { effect, attempt: 2, exceptions: 0 });
      return;
    }
    // The sender has committed; its caller is not the place to fail.
    ctx.onError(
      error,
      `sendTo ${effect.target.machineId} ${effect.target.id} (${effect.event.type})`,
    );
  }
}

/** `send`: one try of an asynchronous send; schedules the next try or gives up. */
export async function runSendJob(ctx: EngineContext, job: JobPayloads['send']): Promise<void> {
  const { effect } = job;
  const definition = ctx.registry.resolve(effect.target.machineId);
  if (definition === undefined) {
    ctx.onError(unknownMachine(effect.target.machineId), `dispatchTo ${effect.target.machineId}`);
    return;
  }
  try {
    await ctx.send(definition, effect.target.id, effect.event);
  } catch (error) {
    // A target paused by an operator holds the message until resumed: tried again later, the
    // wait not counted as a try (a pause may last longer than every try).
    if (error instanceof InstancePausedException) {
      await retry(ctx, job);
      return;
    }
    const exceptions = job.exceptions + (isRetryable(error) ? 0 : 1);
    const { tries, exceptions: maxExceptions } = ctx.settings.sendRetry;
    if (job.attempt >= tries || exceptions >= maxExceptions) {
      ctx.onError(
        error,
        `dispatchTo ${effect.target.machineId} ${effect.target.id} (${effect.event.type}) given up after ${job.attempt} tries`,
      );
      return;
    }
    await retry(ctx, { effect, attempt: job.attempt + 1, exceptions });
  }
}

function retry(ctx: EngineContext, payload: JobPayloads['send']): Promise<void> {
  const delayMs = ctx.settings.sendRetry.delayMs;
  return enqueueJobs(ctx, [
    {
      kind: 'send',
      payload,
      ...(delayMs > 0 ? { runAt: new Date(ctx.now().getTime() + delayMs) } : {}),
    },
  ]);
}

/**
 * Failures that a later try may not meet: contention, an event not accepted yet, a target paused
 * by an operator.
 */
function isRetryable(error: unknown): boolean {
  return (
    error instanceof MachineAlreadyRunningException ||
    error instanceof InstancePausedException ||
    error instanceof NoTransitionDefinitionFoundException ||
    error instanceof ForwardTargetUnavailableException
  );
}
