/**
 * Attribute names of the package's spans and metrics: the OpenTelemetry semantic conventions'
 * where one exists (`http.*`, `db.*`, `messaging.*`, `error.type`), `machine_routes.*`
 * otherwise. docs/operating.md lists which span carries which. No payload or context value is
 * ever an attribute.
 */
export const ATTR = {
  httpMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpStatus: 'http.response.status_code',
  errorType: 'error.type',
  dbSystem: 'db.system.name',
  dbOperation: 'db.operation.name',
  messagingSystem: 'messaging.system',
  messagingOperation: 'messaging.operation.type',
  messagingDestination: 'messaging.destination.name',
  messagingMessageId: 'messaging.message.id',
  machine: 'machine_routes.machine',
  instanceId: 'machine_routes.instance.id',
  eventType: 'machine_routes.event.type',
  routeName: 'machine_routes.route',
  outcome: 'machine_routes.outcome',
  source: 'machine_routes.transition.source',
  target: 'machine_routes.transition.target',
  lockWaitMs: 'machine_routes.lock.wait_ms',
  commitRows: 'machine_routes.commit.rows',
  jobKind: 'machine_routes.job.kind',
  behaviorKind: 'machine_routes.behavior.kind',
  behaviorName: 'machine_routes.behavior.name',
  jobAttempt: 'machine_routes.job.attempt',
  jobFinal: 'machine_routes.job.final',
  timerKey: 'machine_routes.timer.key',
  timerDue: 'machine_routes.timer.due',
  childMachine: 'machine_routes.child.machine',
  childId: 'machine_routes.child.id',
  childMode: 'machine_routes.child.mode',
  childStatus: 'machine_routes.child.status',
  childOutcome: 'machine_routes.child.outcome',
} as const;
