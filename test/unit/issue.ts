import { ValidationIssue } from '../../nodes/ImagePack/shared/parameters';

/** The ValidationIssue `run` throws; fails the test when it throws something else or nothing. */
export function issueOf(run: () => unknown): ValidationIssue {
	try {
		run();
	} catch (error) {
		expect(error).toBeInstanceOf(ValidationIssue);
		return error as ValidationIssue;
	}
	throw new Error('expected a ValidationIssue');
}
