/** The one reader of number parameters, against real properties of the node (Generate's options). */
import { generateOptions } from '../../nodes/ImagePack/actions/image/generate/description';
import { boundedNumber } from '../../nodes/ImagePack/shared/parameters';
import { issueOf } from './issue';

describe('boundedNumber: a number option read against its own definition', () => {
	const option = (name: string) => generateOptions.find((property) => property.name === name)!;

	it.each([undefined, null, ''])('%p is the property’s default', (value) => {
		expect(boundedNumber(option('maxCreditsPerItem'), value)).toBe(0);
		expect(boundedNumber(option('timeoutSeconds'), value)).toBe(330);
	});

	it('takes numbers and numeric text within the bounds, the bounds included', () => {
		expect(boundedNumber(option('timeoutSeconds'), '1')).toBe(1);
		expect(boundedNumber(option('timeoutSeconds'), 3600)).toBe(3600);
		expect(boundedNumber(option('timeoutSeconds'), ' 2.5 ')).toBe(2.5);
	});

	it.each([-5, NaN, Infinity, 'lots', ' ', {}, [3], true, 1_000_001])(
		'refuses %p instead of silently dropping the guard, naming the parameter and the range',
		(value) => {
			const issue = issueOf(() => boundedNumber(option('maxCreditsPerItem'), value));
			expect(issue.parameter).toBe('maxCreditsPerItem');
			expect(issue.message).toMatch(/^Max Credits per Item ".*" is not allowed\. /);
			expect(issue.message).toContain('Allowed values: numbers from 0 to 1000000');
		},
	);

	it('a whole-number option (numberPrecision 0) refuses fractions', () => {
		expect(boundedNumber(option('concurrency'), '8')).toBe(8);
		expect(issueOf(() => boundedNumber(option('concurrency'), 1.5)).message).toBe(
			'Concurrency "1.5" is not allowed. Allowed values: whole numbers from 1 to 8',
		);
	});
});
