/**
 * English errors chosen by error.code (API document §7) and the facts of the route (§5), descriptions
 * for support, secret redaction, the facts an error carries.
 */
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import {
	type ErrorFacts,
	chargeHint,
	errorFacts,
	factFields,
	imagePackError,
	errorDescription,
	redact,
} from '../../nodes/ImagePack/shared/errors';
import { SCOPE_OPERATIONS, codeOf, englishMessage } from '../../nodes/ImagePack/shared/codes';
import { testNode as node } from '../harness/n8n';
import { ROUTES } from '../../nodes/ImagePack/transport/routes';

const { generate: GENERATE, listPublications: LIST, getPublication: DETAIL, file: FILE } = ROUTES;
const CJK = /[\u3000-\u9fff\uff00-\uffef]/;

const info = (code: string, httpStatus: number, extra: Partial<ErrorFacts> = {}) => ({
	code: codeOf(code),
	httpStatus,
	...extra,
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
	// Every code of §7, with words the message must carry.
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

describe('errorDescription', () => {
	it('carries the code, status, request id and the API’s own message, in that order', () => {
		expect(
			errorDescription(
				info('insufficient_credits', 402, {
					requestId: 'req_1',
					apiMessage: '积分不足：需要 32 积分',
				}),
			),
		).toBe(
			'code: insufficient_credits · HTTP status: 402 · request id: req_1 · API message: 积分不足：需要 32 积分',
		);
	});

	it('leaves out what is unknown and appends the extra text', () => {
		expect(errorDescription(info('non_json_response', 502))).toBe(
			'code: non_json_response · HTTP status: 502',
		);
		expect(
			errorDescription(
				info('rate_limited', 429, { requestId: 'req_2' }),
				'gave up after 4 attempts',
			),
		).toBe('code: rate_limited · HTTP status: 429 · request id: req_2 · gave up after 4 attempts');
		expect(errorDescription(info('internal_error', 500, { apiMessage: '' }), '')).toBe(
			'code: internal_error · HTTP status: 500',
		);
	});
});

describe('redact', () => {
	const secret = ['sk', 'live', 'a1b2c3d4e5f6'].join('_');

	it('replaces every occurrence of the key', () => {
		expect(redact(`key ${secret} and again ${secret}.`, secret)).toBe(
			'key sk_*** and again sk_***.',
		);
		expect(redact(`Bearer ${secret}`, secret)).not.toContain(secret);
	});

	it('leaves text without the key alone', () => {
		expect(redact('nothing secret here', secret)).toBe('nothing secret here');
		expect(redact('', secret)).toBe('');
	});

	it('does nothing for a missing or too short secret (it would shred ordinary words)', () => {
		expect(redact('a short sk text', undefined)).toBe('a short sk text');
		expect(redact('a short sk text', '')).toBe('a short sk text');
		expect(redact('a short sk text', 'sk_')).toBe('a short sk text');
		expect(redact('abcd abcd', 'abcd')).toBe('sk_*** sk_***');
	});

	it('treats the key literally, not as a pattern', () => {
		const odd = ['sk', 'a.b*c$'].join('_');
		expect(redact(`x ${odd} sk_aXbbc$`, odd)).toBe('x sk_*** sk_aXbbc$');
	});
});

describe('imagePackError and errorFacts: facts travel on the error, not in its text', () => {
	it('an API answer becomes a NodeApiError whose facts read back exactly', () => {
		const error = imagePackError(
			node,
			{
				code: 'insufficient_credits',
				httpStatus: 402,
				requestId: 'req_1',
				charge: 'not_charged',
				apiMessage: '积分不足',
				itemIndex: 2,
			},
			{ message: 'Not enough credits', description: 'code: insufficient_credits' },
		);
		expect(error).toBeInstanceOf(NodeApiError);
		expect(error.message).toBe('Not enough credits');
		expect(error.description).toBe('code: insufficient_credits');
		expect(errorFacts(error)).toEqual({
			code: 'insufficient_credits',
			httpStatus: 402,
			requestId: 'req_1',
			charge: 'not_charged',
			apiMessage: '积分不足',
			reason: 'Not enough credits',
		});
		expect(factFields(errorFacts(error))).toEqual({
			code: 'insufficient_credits',
			httpStatus: 402,
			requestId: 'req_1',
			charge: 'not_charged',
			apiMessage: '积分不足',
			sessionId: null,
			parameter: null,
		});
	});

	it('an error found before sending is a NodeOperationError naming the item, its reason without it', () => {
		const error = imagePackError(
			node,
			{ code: 'invalid_parameter', parameter: 'ratio', charge: 'not_sent', itemIndex: 0 },
			{ message: 'Ratio "4:5" is not allowed', namesItem: true },
		);
		expect(error).toBeInstanceOf(NodeOperationError);
		expect(error.message).toBe('Item 0: Ratio "4:5" is not allowed');
		expect(errorFacts(error)).toMatchObject({
			code: 'invalid_parameter',
			reason: 'Ratio "4:5" is not allowed',
		});
		expect(error.context.parameter).toBe('ratio');
	});

	it('may have been charged: the hint names the session, in the message when no failure status came back', () => {
		const timeout = imagePackError(
			node,
			{ code: 'timeout', httpStatus: 0, charge: 'may_have_been_charged', sessionId: 's_42' },
			{ message: 'No answer in time' },
		);
		expect(timeout.message).toBe(`No answer in time. ${chargeHint('s_42')}`);
		expect(timeout.message).toContain('check session s_42');
		expect(timeout.description).toBe(chargeHint('s_42'));
		expect(factFields(errorFacts(timeout))).toMatchObject({
			httpStatus: null,
			charge: 'may_have_been_charged',
			sessionId: 's_42',
		});
		const gateway = imagePackError(
			node,
			{ code: 'non_json_response', httpStatus: 502, charge: 'may_have_been_charged' },
			{ message: 'Not JSON', description: 'HTTP status: 502' },
		);
		expect(gateway.message).toBe('Not JSON');
		expect(gateway.description).toBe(`HTTP status: 502 · ${chargeHint()}`);
		expect(gateway.description).toContain('the newest "API generation" session');
	});

	it('masks the secret in the message, the description and every fact', () => {
		const key = ['sk', 'live', 'abcdef123456'].join('_');
		const error = imagePackError(
			node,
			{
				code: 'invalid_request',
				httpStatus: 400,
				charge: 'not_charged',
				apiMessage: `bad ${key}`,
				requestId: key,
			},
			{ message: `echo ${key}`, description: `said ${key}`, secret: key },
		);
		expect(JSON.stringify([error.message, error.description, error.context])).not.toContain(key);
		expect(errorFacts(error)).toMatchObject({
			apiMessage: 'bad sk_***',
			requestId: 'sk_***',
			reason: 'echo sk_***',
		});
	});

	const nulls = {
		code: null,
		httpStatus: null,
		requestId: null,
		charge: 'not_sent',
		apiMessage: null,
		sessionId: null,
		parameter: null,
	};

	it('errors that are not ours get nulls, "not_sent" and their message as the reason', () => {
		const read = (error: unknown) => ({
			...factFields(errorFacts(error)),
			reason: errorFacts(error).reason,
		});
		expect(read(new Error('plain'))).toEqual({ ...nulls, reason: 'plain' });
		expect(read(new NodeOperationError(node, 'bad parameter'))).toEqual({
			...nulls,
			reason: 'bad parameter',
		});
		expect(read({ context: { code: 7, httpStatus: '402', requestId: 5 } })).toMatchObject(nulls);
		expect(read({ context: { httpStatus: -1 } }).httpStatus).toBeNull();
	});

	it.each([null, undefined, 'a string', 42])('does not throw for %p', (value) => {
		expect({ ...factFields(errorFacts(value)), reason: errorFacts(value).reason }).toEqual({
			...nulls,
			reason: String(value),
		});
	});
});
