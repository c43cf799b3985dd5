// Prints the plain `N passed, N failed[, N skipped]` line from vitest's JSON report.
// A test file that failed without a failed test (it did not load, or a beforeAll hook failed
// and its tests were reported skipped) counts as one failure: it must not pass.
import { readFileSync } from 'node:fs';

const path = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(path, 'utf8'));
} catch (error) {
  console.log(`no vitest report at ${path}: ${error.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const brokenFiles = (report.testResults ?? []).filter(
  (file) =>
    file.status === 'failed' &&
    !(file.assertionResults ?? []).some((test) => test.status === 'failed'),
).length;
// vitest's own exit status: unhandled errors fail the run but appear in no count of the report.
const exitStatus = Number(process.argv[3] ?? 0);
const unhandled = exitStatus !== 0 && (report.numFailedTests ?? 0) + brokenFiles === 0 ? 1 : 0;
if (unhandled)
  console.log(`vitest exited ${exitStatus} with no failed test: unhandled errors (see above)`);
const failed = (report.numFailedTests ?? 0) + brokenFiles + unhandled;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
