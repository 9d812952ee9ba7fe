/** Prints one plain closing line ("jest: N passed, N failed, N skipped") that CI tooling can read. */
class SummaryReporter {
	onRunComplete(_contexts, results) {
		const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
		process.stdout.write(`\njest: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped\n`);
	}
}
module.exports = SummaryReporter;
