/**
 * The table of error codes: English messages chosen by error.code (the API's messages are Chinese
 * and may change; its codes are the contract) and the facts of the route (the scope it needs), and
 * which rows carry each rule.
 */
import {
	CODES,
	type Code,
	SCOPE_OPERATIONS,
	codeOf,
	englishMessage,
	isCode,
	rule,
} from '../../nodes/ImagePack/shared/codes';
import { ROUTES } from '../../nodes/ImagePack/transport/connection';

const { generate: GENERATE, listPublications: LIST, getPublication: DETAIL, file: FILE } = ROUTES;
const CJK = /[\u3000-\u9fff\uff00-\uffef]/;
const info = (code: string, httpStatus: number, extra: { apiMessage?: string } = {}) => ({
	code: codeOf(code),
	httpStatus,
	...extra,
});

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
			'record_failed',
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

describe('SCOPE_OPERATIONS', () => {
	it('names the operations of each of the three documented scopes', () => {
		expect(Object.keys(SCOPE_OPERATIONS).sort()).toEqual([
			'assets:read',
			'documents:read',
			'generate:write',
		]);
		expect(SCOPE_OPERATIONS['generate:write']).toContain('Generate');
		expect(SCOPE_OPERATIONS['assets:read']).toContain('Download File');
		expect(SCOPE_OPERATIONS['documents:read']).toContain('Get Publication');
		expect(SCOPE_OPERATIONS['documents:read']).toContain('Trigger');
	});
});

describe('englishMessage', () => {
	// Every code the API answers with, with words the message must carry.
	it.each([
		['invalid_request', 400, /rejected the request as invalid/],
		['invalid_model', 400, /does not support the requested model/],
		['reference_image_missing', 400, /reference image/i],
		['unauthorized', 401, /No API key/],
		['invalid_api_key', 401, /invalid, revoked or expired/],
		['insufficient_credits', 402, /Not enough credits/],
		['session_not_found', 404, /session does not exist/],
		['rate_limited', 429, /rate limit/],
		['new_user_daily_limit', 429, /2000 credits in 24 hours/],
		['internal_error', 500, /refunded/],
	])('%s (HTTP %i) has its own English message', (code, status, words) => {
		const message = englishMessage(info(code, status, { apiMessage: '参数错误' }), GENERATE);
		expect(message).toMatch(words);
		expect(message).not.toMatch(CJK);
		expect(message).not.toContain('参数错误');
	});

	it('gives every documented code a different message (429s and 401s told apart by code)', () => {
		const codes = [
			'invalid_request',
			'invalid_model',
			'reference_image_missing',
			'unauthorized',
			'invalid_api_key',
			'insufficient_credits',
			'session_not_found',
			'rate_limited',
			'new_user_daily_limit',
			'internal_error',
		];
		const messages = codes.map((code) => englishMessage(info(code, 400), GENERATE));
		expect(new Set(messages).size).toBe(codes.length);
	});

	it.each([
		[GENERATE, 'generate:write', 'Generate'],
		[LIST, 'documents:read', 'Get Many Publications'],
		[DETAIL, 'documents:read', 'Get Publication'],
		[FILE, 'assets:read', 'Download File'],
	])('insufficient_scope on %o names the scope %s and what needs it', (route, scope, operation) => {
		const message = englishMessage(info('insufficient_scope', 403), route);
		expect(message).toContain(`lacks the ${scope} scope`);
		expect(message).toContain(operation);
		expect(message).toContain('developer center');
	});

	it('insufficient_scope on a path of unknown scope still says what happened', () => {
		expect(englishMessage(info('insufficient_scope', 403), undefined)).toBe(
			'The API key lacks the scope this operation needs',
		);
	});

	it('says which thing was not found', () => {
		expect(englishMessage(info('not_found', 404), DETAIL)).toBe(
			'The publication does not exist or belongs to another account',
		);
		expect(englishMessage(info('publication_not_found', 404), DETAIL)).toBe(
			'The publication does not exist or belongs to another account',
		);
		expect(englishMessage(info('not_found', 404), FILE)).toBe(
			'The file does not exist or belongs to another account',
		);
		expect(englishMessage(info('non_json_response', 404), FILE)).toBe(
			'The Image Pack API answered with something that is not JSON',
		);
		expect(englishMessage(info('not_found', 404), LIST)).toBe(
			'Not found, or it belongs to another account',
		);
		expect(englishMessage(info('whatever', 404), GENERATE)).toBe(
			'Not found, or it belongs to another account',
		);
		// A documented 404 code keeps its own message.
		expect(englishMessage(info('session_not_found', 404), GENERATE)).toBe(
			'The session does not exist or belongs to another account',
		);
	});

	it('covers bodies that carry no usable code', () => {
		expect(englishMessage(info('non_json_response', 502), GENERATE)).toBe(
			'The Image Pack API answered with something that is not JSON',
		);
		expect(englishMessage(info('expired_link', 403), FILE)).toContain('expired');
	});

	it('promises a refund for internal_error only on generate', () => {
		expect(englishMessage(info('internal_error', 500), GENERATE)).toContain('refunded');
		for (const route of [LIST, DETAIL, FILE]) {
			const message = englishMessage(info('internal_error', 500), route);
			expect(message).not.toContain('refund');
			expect(message).toContain('HTTP 500');
		}
	});

	it('still says what happened for unknown codes', () => {
		expect(englishMessage(info('service_unavailable', 503), GENERATE)).toBe(
			'The Image Pack API failed with HTTP 503',
		);
		expect(englishMessage(info('unknown_error', 500), LIST)).toBe(
			'The Image Pack API failed with HTTP 500',
		);
		expect(englishMessage(info('invalid_ratio', 400), GENERATE)).toBe(
			'The Image Pack API returned an error (code "invalid_ratio", HTTP 400)',
		);
		expect(englishMessage(info('teapot', 418), GENERATE)).toContain('HTTP 418');
	});
});
