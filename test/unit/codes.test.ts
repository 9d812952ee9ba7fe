/** The table of error codes: which rows carry each rule (each rule was a list of its own before). */
import { CODES, type Code, codeOf, isCode, rule } from '../../nodes/ImagePack/shared/codes';

const withRule = (
	key: 'retryOnFail' | 'keyWide' | 'endsPoll' | 'retryAfter' | 'refunded' | 'stopped',
) => (Object.keys(CODES) as Code[]).filter((code) => rule(code)[key] === true).sort();

describe('CODES', () => {
	it('Retry On Fail sends again only what a try a second later can get past', () => {
		expect(withRule('retryOnFail')).toEqual([
			'cancelled',
			'internal_error',
			'network_error',
			'rate_limited',
		]);
	});

	it('errors that hold for the whole key, those that end a poll, and the transport’s own', () => {
		expect(withRule('keyWide')).toEqual([
			'cancelled',
			'insufficient_scope',
			'invalid_api_key',
			'unauthorized',
		]);
		expect(withRule('endsPoll')).toEqual(['rate_limited', 'timeout']);
		expect(withRule('retryAfter')).toEqual(['rate_limited']);
		expect(withRule('refunded')).toEqual(['internal_error']);
		expect(withRule('stopped')).toEqual(['cancelled']);
	});

	it('a code the API adds later is kept as sent, with every rule off', () => {
		const code = codeOf('content_policy');
		expect(code).toBe('content_policy');
		expect(isCode(code)).toBe(false);
		expect(rule(code)).toEqual({});
		expect(rule(undefined)).toEqual({});
		expect(isCode('toString')).toBe(false); // not an inherited property either
	});
});
