/** Names of the jobs delegation runs on the queue (child machines, messaging, job actors). */
export const DELEGATION_JOBS = {
  startChild: 'machine-routes.child.start',
  completeChild: 'machine-routes.child.complete',
  /** `@timeout` of a child machine or a job actor (it works on `machine_children` rows). */
  timeoutChild: 'machine-routes.child.timeout',
  send: 'machine-routes.send',
  /** Runs a job actor's function, then applies its outcome (or hands it to `jobOutcome`). */
  runJob: 'machine-routes.job.run',
  /** Applies a job actor's outcome whose parent was locked past the lock timeout. */
  jobOutcome: 'machine-routes.job.outcome',
} as const;
