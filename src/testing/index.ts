/**
 * `machine-routes/testing`: a test kit for your own machines, for any test runner (vitest,
 * jest, node:test): a runtime on virtual time, instances started in any state, fakes of job
 * actors and child machines, transition tables, in-process HTTP, and coverage of the
 * transitions a run took. See docs/testing.md.
 */
export {
  createTestRuntime,
  TestRuntime,
  type SettleReport,
  type TestInstance,
  type TestRuntimeOptions,
} from './test-runtime.js';
export { toMilliseconds, type Duration } from './duration.js';
export {
  hang,
  reject,
  resolve,
  Fakes,
  type Fake,
  type FakeCall,
  type FakeOutcome,
  type InstanceRef,
  type SentEvent,
} from './fakes.js';
export { resolveConfiguration, type StartAtOptions, type StateSelection } from './start-at.js';
export {
  CoverageRecorder,
  type CoverageFile,
  type MachineCoverageData,
  type TakenTransition,
} from './coverage.js';
export {
  ImpossibleConfigurationException,
  InvalidDurationException,
  InvalidTestContextException,
  TransitionTableFailure,
  UnknownFakeTargetException,
  UnsettledTimeException,
} from './errors.js';
export {
  assertTransitions,
  type TransitionRow,
  type TransitionRowResult,
} from './transition-table.js';
export {
  httpDriver,
  type HttpDriver,
  type InjectableApp,
  type RequestListener,
  type TestRequest,
  type TestResponse,
} from './http.js';
export {
  generatePathTests,
  type PathTest,
  type PathTestOptions,
  type PathTests,
} from './path-tests.js';
