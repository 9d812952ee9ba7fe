/** Reading failures: network error codes, and tolerant parsing of error bodies. */
import { networkErrorCode, parseErrorBody } from '../../../nodes/ImagePack/transport/answers';

describe('networkErrorCode', () => {
	const withCode = (code: unknown, message = 'request failed') =>
		Object.assign(new Error(message), { code });

	it.each([
		'ECONNREFUSED',
		'ECONNRESET',
		'ENOTFOUND',
		'EAI_AGAIN',
		'ETIMEDOUT',
		'EPIPE',
		'ECONNABORTED',
		'ERR_SOCKET_CLOSED',
	])('reads %s from the error itself', (code) => {
		expect(networkErrorCode(withCode(code))).toBe(code);
	});

	it('follows the cause chain (n8n wraps the original error)', () => {
		const root = withCode('ECONNREFUSED');
		const wrapped = Object.assign(new Error('outer'), {
			cause: Object.assign(new Error('middle'), { cause: root }),
		});
		expect(networkErrorCode(wrapped)).toBe('ECONNREFUSED');
		// The outermost recognisable code wins.
		expect(networkErrorCode(Object.assign(withCode('ECONNRESET'), { cause: root }))).toBe(
			'ECONNRESET',
		);
	});

	it('skips codes that are not network codes on the way down', () => {
		const root = withCode('ECONNRESET');
		expect(networkErrorCode(Object.assign(withCode(404), { cause: root }))).toBe('ECONNRESET');
		expect(networkErrorCode(Object.assign(withCode('econnreset'), { cause: root }))).toBe(
			'ECONNRESET',
		);
		expect(networkErrorCode(withCode('NodeApiError'))).toBeUndefined();
	});

	it('looks at most four levels deep', () => {
		let error: Error = withCode('ECONNRESET', 'plain');
		for (let depth = 0; depth < 4; depth++)
			error = Object.assign(new Error('plain'), { cause: error });
		expect(networkErrorCode(error)).toBeUndefined();
	});

	it('recognises timeouts and hang-ups by their message', () => {
		expect(networkErrorCode(new Error('timeout of 60000ms exceeded'))).toBe('ETIMEDOUT');
		expect(networkErrorCode(new Error('Request Timeout'))).toBe('ETIMEDOUT');
		expect(networkErrorCode(new Error('socket hang up'))).toBe('ECONNRESET');
	});

	it.each([
		['an HTTP error', new Error('Request failed with status code 500')],
		['undefined', undefined],
		['null', null],
		['a string', 'ECONNRESET'],
		['an empty object', {}],
	])('returns undefined for %s', (_label, error) => {
		expect(networkErrorCode(error)).toBeUndefined();
	});
});

describe('parseErrorBody', () => {
	it('reads the documented JSON error body', () => {
		const body = JSON.stringify({
			error: { code: 'insufficient_credits', message: '积分不足', request_id: 'req_body' },
		});
		expect(parseErrorBody(402, body, 'req_header')).toEqual({
			code: 'insufficient_credits',
			httpStatus: 402,
			requestId: 'req_body',
			apiMessage: '积分不足',
		});
	});

	it('falls back to the X-Request-Id header and tolerates a missing or odd message', () => {
		expect(parseErrorBody(401, '{"error":{"code":"invalid_api_key"}}', 'req_h')).toEqual({
			code: 'invalid_api_key',
			httpStatus: 401,
			requestId: 'req_h',
			apiMessage: undefined,
		});
		expect(
			parseErrorBody(400, '{"error":{"code":"invalid_request","message":42,"request_id":7}}'),
		).toEqual({
			code: 'invalid_request',
			httpStatus: 400,
			requestId: undefined,
			apiMessage: undefined,
		});
	});

	it('turns an HTML page into non_json_response with its text, tags removed', () => {
		const html = `<html><head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>`;
		const parsed = parseErrorBody(502, html, 'req_proxy');
		expect(parsed.code).toBe('non_json_response');
		expect(parsed.httpStatus).toBe(502);
		expect(parsed.requestId).toBe('req_proxy');
		expect(parsed.apiMessage).toBe('502 Bad Gateway 502 Bad Gateway nginx');
		expect(parsed.apiMessage).not.toMatch(/[<>]/);
	});

	it('keeps at most 200 characters of a long page', () => {
		const parsed = parseErrorBody(500, `<p>${'x'.repeat(1000)}</p>`);
		expect(parsed.apiMessage).toHaveLength(200);
	});

	it.each(['', '   ', '\n'])(
		'turns the empty body %p into non_json_response without a message',
		(text) => {
			expect(parseErrorBody(503, text)).toEqual({
				code: 'non_json_response',
				httpStatus: 503,
				requestId: undefined,
				apiMessage: undefined,
			});
		},
	);

	it.each([
		['JSON without error', '{"message":"bad"}'],
		['error without code', '{"error":{"message":"bad"}}'],
		['a numeric code', '{"error":{"code":400}}'],
		['error as a string', '{"error":"bad"}'],
		['JSON null', 'null'],
		['a JSON string', '"bad"'],
		['a JSON array', '[1,2]'],
	])('turns %s into unknown_error, keeping the text', (_label, text) => {
		const parsed = parseErrorBody(400, text, 'req_x');
		expect(parsed.code).toBe('unknown_error');
		expect(parsed.httpStatus).toBe(400);
		expect(parsed.requestId).toBe('req_x');
		expect(parsed.apiMessage).toBe(text);
	});
});
