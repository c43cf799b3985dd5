/**
 * The test kit's errors, each with a stable `code` like the runtime's: a test that misuses the
 * kit (an impossible state, a bad duration) fails with a message naming the machine, the key
 * and what to change.
 */
import { MachineRoutesError } from '../runtime/errors.js';

/**
 * `startAt` was given states no instance of the machine can be in together: an unknown state,
 * a state that is not a leaf, two children of one compound state, or a region of a parallel
 * state left without a state.
 */
export class ImpossibleConfigurationException extends MachineRoutesError {
  readonly code = 'MR_TEST_IMPOSSIBLE_CONFIGURATION';
}

/** `startAt` was given a context its machine's context schema refuses. */
export class InvalidTestContextException extends MachineRoutesError {
  readonly code = 'MR_TEST_INVALID_CONTEXT';
}

/** A duration the kit cannot read (`advance('30d')`, `advance(1500)`, `'1h30m'` are fine). */
export class InvalidDurationException extends MachineRoutesError {
  readonly code = 'MR_TEST_INVALID_DURATION';
}

/**
 * Virtual time did not settle: timers and jobs kept falling due at the same instant (an `every`
 * timer whose event re-enters its state, a job that re-enqueues itself forever).
 */
export class UnsettledTimeException extends MachineRoutesError {
  readonly code = 'MR_TEST_UNSETTLED_TIME';
}

/** A fake names a job or a child machine no machine of the test runtime delegates to. */
export class UnknownFakeTargetException extends MachineRoutesError {
  readonly code = 'MR_TEST_UNKNOWN_FAKE_TARGET';
}

/** One or more rows of a transition table did not hold; the message shows each step's history. */
export class TransitionTableFailure extends MachineRoutesError {
  readonly code = 'MR_TEST_TRANSITION_TABLE_FAILED';
}
