/**
 * Human output of `machine-routes instances`: a page as a table with the command that shows the
 * next one, and one instance's record as sections of tables.
 */
import type { InstanceRecord, Page } from '../../runtime/engine/operations/instance-reads.js';
import type { CliIo } from '../io.js';
import { formatTable } from '../table.js';

/** A page's table, or a line saying it is empty, then the cursor of the next page. */
export function printPage<T>(io: CliIo, page: Page<T>, table: (items: T[]) => string): void {
  if (page.items.length === 0) io.stdout('No rows.');
  else io.stdout(table(page.items));
  if (page.nextCursor !== null) io.stdout(`\nMore: --cursor ${page.nextCursor}`);
}

/** One instance's record, a section per part. */
export function printInstance(io: CliIo, record: InstanceRecord): void {
  const { instance, lock } = record;
  const sections: string[] = [
    formatTable(
      ['FIELD', 'VALUE'],
      [
        ['id', instance.id],
        ['machine', instance.machineId],
        ['status', instance.status],
        ['sequence', String(instance.sequence)],
        ['created', instance.createdAt],
        ['updated', instance.updatedAt],
        ['business key', instance.businessKey ?? ''],
        [
          'parent',
          instance.parent === null ? '' : `${instance.parent.machineId} ${instance.parent.id}`,
        ],
        ['scenario', record.scenario === null ? '' : record.scenario.slug],
      ],
    ),
    formatTable(
      ['STATE', 'SINCE'],
      record.states.map((state) => [state.id, state.enteredAt]),
    ),
    `Context: ${JSON.stringify(record.context)}`,
    lock === null
      ? 'Lock: none'
      : formatTable(
          ['LOCK HOLDER', 'TAKEN BY', 'SINCE', 'EXPIRES', 'EXPIRED'],
          [
            [
              lock.ownerId,
              lock.context ?? '',
              lock.acquiredAt,
              lock.expiresAt,
              lock.expired ? 'yes' : 'no',
            ],
          ],
        ),
    record.timers.length === 0
      ? 'Timers: none'
      : formatTable(
          ['TIMER', 'EVENT', 'DUE', 'FIRES', 'REGISTERED'],
          record.timers.map((timer) => [
            timer.key,
            timer.eventType,
            timer.dueAt ?? '(done)',
            String(timer.fireCount),
            timer.registered ? 'yes' : 'no',
          ]),
        ),
    record.children.length === 0
      ? 'Children: none'
      : formatTable(
          ['CHILD', 'MACHINE', 'STATE', 'STATUS', 'CREATED', 'COMPLETED'],
          record.children.map((child) => [
            child.childRootEventId ?? child.id,
            child.childMachineId,
            child.parentStateId,
            child.status,
            child.createdAt,
            child.completedAt ?? '',
          ]),
        ),
    record.failedJobs.length === 0
      ? 'Failed jobs: none'
      : formatTable(
          ['FAILED JOB', 'NAME', 'ATTEMPTS', 'ERROR'],
          record.failedJobs.map((job) => [
            job.id,
            job.name,
            String(job.attempts),
            job.lastError.split('\n')[0] ?? '',
          ]),
        ),
  ];
  io.stdout(sections.join('\n\n'));
}
