// Public surface of jobs/ (re-exported by src/runtime/index.ts): the durable job queues.
export type {
  DurableJobQueue,
  DurableJobQueueOptions,
  DurableJobRequest,
  FailedJob,
  JobErrorListener,
  JobQueueSettings,
  JobQueueStopOptions,
  JobQueueWaitOptions,
} from './types.js';
export { DEFAULT_JOB_QUEUE_SETTINGS, loadJobQueueConfig } from './config.js';
export {
  EmbeddedJobQueue,
  createJobsDatabase,
  type EmbeddedJobQueueOptions,
} from './embedded-job-queue.js';
export { openJobQueue, defaultJobSchema, type OpenJobQueueOptions } from './open-job-queue.js';
export {
  InMemoryJobQueue,
  type InMemoryJobQueueOptions,
  type Json,
  type JobHandler,
  type JobInfo,
  type JobOutbox,
  type JobQueue,
  type JobRequest,
} from './job-queue.js';
