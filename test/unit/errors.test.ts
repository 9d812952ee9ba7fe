/** Descriptions for support, secret redaction, the facts an error carries. */
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
import { codeOf } from '../../nodes/ImagePack/shared/codes';
import { testNode as node } from '../harness/n8n';

const info = (code: string, httpStatus: number, extra: Partial<ErrorFacts> = {}) => ({
	code: codeOf(code),
	httpStatus,
	...extra,
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
