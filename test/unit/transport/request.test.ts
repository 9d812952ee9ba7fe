/** The request loop's waits: Retry-After, read tolerantly. */
import { retryAfterSeconds } from '../../../nodes/ImagePack/transport/request';

describe('retryAfterSeconds', () => {
	const now = Date.UTC(2026, 9, 1, 12, 0, 0);

	it.each([
		['120', 120],
		[' 7 ', 7],
		['0', 0],
		['1.5', 1.5],
		[30, 30],
		[0, 0],
	])('reads delta seconds %p as %p', (header, seconds) => {
		expect(retryAfterSeconds(header, now)).toBe(seconds);
	});

	it('reads HTTP dates relative to now, never negative', () => {
		expect(retryAfterSeconds('Thu, 01 Oct 2026 12:00:30 GMT', now)).toBe(30);
		expect(retryAfterSeconds('Thu, 01 Oct 2026 12:02:00 GMT', now)).toBe(120);
		// The obsolete formats HTTP still allows.
		expect(retryAfterSeconds('Thursday, 01-Oct-26 12:00:10 GMT', now)).toBe(10);
		expect(
			retryAfterSeconds('Thu Oct  1 12:00:05 2026', Date.parse('Thu Oct  1 12:00:00 2026')),
		).toBe(5);
		expect(retryAfterSeconds('Thu, 01 Oct 2026 11:59:00 GMT', now)).toBe(0);
		expect(retryAfterSeconds('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(0);
	});

	it('uses the current time by default', () => {
		const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
		const seconds = retryAfterSeconds(inTenSeconds);
		expect(seconds).toBeGreaterThan(8);
		expect(seconds).toBeLessThanOrEqual(10);
	});

	it.each([
		['absent', undefined],
		['null', null],
		['empty', ''],
		['blank', '   '],
		['a word', 'soon'],
		['seconds with a unit', '5 seconds'],
		['a negative number as text', '-5'],
		['a negative number', -5],
		['a word and a number', 'foo 1'],
		['a bare year-like number with a dash', '-1'],
		['hex', '0x10'],
		['exponent', '1e3'],
		['an object', { seconds: 5 }],
		['an array', ['5']],
		['NaN', Number.NaN],
	])('returns undefined for %s', (_label, header) => {
		expect(retryAfterSeconds(header, now)).toBeUndefined();
	});
});
