/**
 * A node:test reporter for `npm run test:compat`: writes one JSON line with the counts of a suite run
 * (tests, not suites), the names of the failed tests and the tests' diagnostics (what a version
 * lacks or what was fitted to it), for the per-version summary.
 */
export default async function* compatReporter(source) {
	const summary = { passed: 0, failed: 0, skipped: 0, failures: [], notes: [] };
	for await (const event of source) {
		const { type, data } = event;
		if (type === 'test:diagnostic' && data.nesting > 0) summary.notes.push(data.message);
		if ((type !== 'test:pass' && type !== 'test:fail') || data.details?.type === 'suite') continue;
		if (data.skip !== undefined || data.todo !== undefined) summary.skipped++;
		else if (type === 'test:pass') summary.passed++;
		else {
			summary.failed++;
			summary.failures.push(data.name);
		}
	}
	yield `${JSON.stringify(summary)}\n`;
}
