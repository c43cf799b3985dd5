/**
 * `runQueuedListener`: the step of a `listener.run` job, pure. A queued listener runs on the
 * instance's latest committed state (as the original's ListenerJob restores the machine), not on
 * the state of the step that queued it: the machine may have moved on since. The step records
 * `<m>.listen.queue.<listener>.started`, runs the listener (its context changes are kept),
 * records `.completed`, then settles like any macrostep (events the listener raised). A done
 * instance takes the records and context changes and stays done.
 */
import { BehaviorNotFoundException, MachineNotFoundException } from '../errors.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ListenerEffect } from './effects.js';
import { macrostepFromSnapshot } from './macrostep-context.js';
import { finishMacrostep, settle } from './macrostep.js';
import { queuedListenerRecord } from './microstep.js';
import { resumeScenario } from './scenarios.js';
import type { MacrostepOptions, MacrostepResult, MachineSnapshot } from './types.js';

/** What a `listener.run` job names: the listener by phase and position, and the queuing event. */
export type QueuedListenerRun = Omit<ListenerEffect, 'kind' | 'params'>;

/**
 * The step running one queued listener on `snapshot`. Throws `BehaviorNotFoundException` when
 * the definition no longer has that listener queued at that position (a deployment changed
 * `listen` while the job waited), and whatever the listener throws (the job is retried).
 */
export function runQueuedListener(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  run: QueuedListenerRun,
  options: MacrostepOptions = {},
): MacrostepResult {
  if (snapshot.machineId !== definition.id || snapshot.id !== run.id) {
    throw new MachineNotFoundException(
      `Queued listener '${run.listener}' of machine '${run.machineId}' instance '${run.id}' cannot run on instance '${snapshot.id}' of machine '${snapshot.machineId}'.`,
      { machine: definition.id, key: run.id },
    );
  }
  const listener = definition.listeners[run.phase][run.index];
  if (listener === undefined || !listener.queued || listener.name !== run.listener) {
    throw new BehaviorNotFoundException(
      `Machine '${definition.id}': queued listener '${run.listener}' is no longer at position ${run.index} of listen.${run.phase}. ` +
        `Keep queued listeners in place while their jobs may still wait, or drain the queue before changing listen.`,
      { machine: definition.id, path: `listen.${run.phase}`, key: run.listener },
    );
  }
  const macrostep = macrostepFromSnapshot(definition, snapshot, run.event, {
    now: options.now,
    machines: options.machines,
    maxTransitionDepth: options.maxTransitionDepth,
    traceBehaviors: options.traceBehaviors,
    // Queued under a scenario: the listener's step plays it too (scenario isolation).
    scenario: resumeScenario(definition, run.scenario),
  });
  macrostep.record(queuedListenerRecord(definition.id, listener.name, 'started'));
  macrostep.own();
  macrostep.call('listener', listener, () => listener.run(macrostep.argsFor(listener)));
  macrostep.record(queuedListenerRecord(definition.id, listener.name, 'completed'));
  if (snapshot.status === 'done') {
    // Nothing accepts events any more: raised ones are dropped, the instance stays done.
    macrostep.history.seal(macrostep.context);
    return {
      snapshot: macrostep.snapshot('done'),
      history: macrostep.history.records,
      validationFailure: null,
      effects: macrostep.effects,
    };
  }
  settle(macrostep);
  return finishMacrostep(macrostep, snapshot);
}
