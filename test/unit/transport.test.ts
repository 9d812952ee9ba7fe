/**
 * The pure helpers of the transport: where a file reference points and whether it may get the key
 * (PRODUCT.md §3: never send the key to another host), MIME types, network error codes, the route of
 * a path, tolerant parsing of error bodies and Retry-After.
 */
import { mimeTypeFor, resolveFileReference } from '../../nodes/ImagePack/transport/download';
import { networkErrorCode } from '../../nodes/ImagePack/transport/failures';
import { parseErrorBody, retryAfterSeconds } from '../../nodes/ImagePack/transport/receive';
import { routeOf } from '../../nodes/ImagePack/transport/routes';

describe('routeOf: the route, and so the scope (API document §5), of a path', () => {
	const LIST = '/api/v1/image-pack-publications';
	it.each([
		['/api/v1/generate', 'generate:write'],
		[LIST, 'documents:read'],
		[`${LIST}?since_id=0&limit=50`, 'documents:read'],
		[`${LIST}/42`, 'documents:read'],
		['/api/file/abc.png', 'assets:read'],
		['/api/file/a%20b.png', 'assets:read'],
		['/api/v2/generate', undefined],
		['/api/file', undefined],
		['/api/other', undefined],
		['', undefined],
	])('%p needs %p', (path, scope) => {
		expect(routeOf(path)?.scope).toBe(scope);
	});
});

const BASE = 'https://images.example.com';

describe('resolveFileReference', () => {
	it('puts a bare file name under /api/file/ on the credential’s host, authenticated', () => {
		expect(resolveFileReference('abc123.png', BASE)).toEqual({
			url: 'https://images.example.com/api/file/abc123.png',
			authenticated: true,
			fileName: 'abc123.png',
		});
	});

	it('encodes a bare file name and reports it decoded', () => {
		expect(resolveFileReference('my photo #1?.png', BASE)).toEqual({
			url: 'https://images.example.com/api/file/my%20photo%20%231%3F.png',
			authenticated: true,
			fileName: 'my photo #1?.png',
		});
		expect(resolveFileReference('../secret.png', BASE).url).toBe(
			'https://images.example.com/api/file/..%2Fsecret.png',
		);
	});

	it('trims surrounding whitespace', () => {
		expect(resolveFileReference('  /api/file/x.png \n', BASE).url).toBe(
			'https://images.example.com/api/file/x.png',
		);
		expect(resolveFileReference('\tx.png ', BASE).url).toBe(
			'https://images.example.com/api/file/x.png',
		);
	});

	it('joins an API path (images[].url, download_url) to the base URL, authenticated', () => {
		expect(resolveFileReference('/api/file/x.png', BASE)).toEqual({
			url: 'https://images.example.com/api/file/x.png',
			authenticated: true,
			fileName: 'x.png',
		});
		expect(resolveFileReference('/api/file/x.png?download=1', BASE)).toEqual({
			url: 'https://images.example.com/api/file/x.png?download=1',
			authenticated: true,
			fileName: 'x.png',
		});
		expect(resolveFileReference('/api/file/a%20b.png', BASE).fileName).toBe('a b.png');
	});

	it('keeps a path that only looks like another host on the credential’s host', () => {
		const resolved = resolveFileReference('//evil.example.net/api/file/x.png', BASE);
		expect(new URL(resolved.url).host).toBe('images.example.com');
		expect(resolved.authenticated).toBe(true);
	});

	it.each([
		'https://images.example.com/api/file/x.png',
		'https://IMAGES.example.com/api/file/x.png',
		'https://images.example.com:443/api/file/x.png',
		'HTTPS://images.example.com/api/file/x.png',
	])('authenticates a full URL on the same origin: %s', (reference) => {
		expect(resolveFileReference(reference, BASE)).toEqual({
			url: 'https://images.example.com/api/file/x.png',
			authenticated: true,
			fileName: 'x.png',
		});
	});

	it.each([
		['another host', 'https://cdn.example.net/signed/x.png?sig=1'],
		['a sub-domain', 'https://evil.images.example.com/api/file/x.png'],
		['a look-alike host', 'https://images.example.com.evil.net/api/file/x.png'],
		['another port', 'https://images.example.com:8443/api/file/x.png'],
		['another scheme', 'http://images.example.com/api/file/x.png'],
		['user info', 'https://images.example.com@evil.net/api/file/x.png'],
	])('never authenticates %s', (_label, reference) => {
		const resolved = resolveFileReference(reference, BASE);
		expect(resolved.authenticated).toBe(false);
		expect(resolved.url).toBe(new URL(reference).toString());
		expect(resolved.fileName).toBe('x.png');
	});

	it('compares ports exactly on a base URL with a port', () => {
		const base = 'http://127.0.0.1:41234';
		expect(resolveFileReference('http://127.0.0.1:41234/api/file/x.png', base).authenticated).toBe(
			true,
		);
		expect(resolveFileReference('http://127.0.0.1:41235/signed/x.png', base).authenticated).toBe(
			false,
		);
		expect(resolveFileReference('http://localhost:41234/api/file/x.png', base).authenticated).toBe(
			false,
		);
		expect(resolveFileReference('x.png', base).url).toBe('http://127.0.0.1:41234/api/file/x.png');
	});

	it('tolerates a base URL with trailing slashes', () => {
		for (const base of [`${BASE}/`, `${BASE}//`]) {
			expect(resolveFileReference('x.png', base)).toEqual({
				url: 'https://images.example.com/api/file/x.png',
				authenticated: true,
				fileName: 'x.png',
			});
			expect(resolveFileReference('/api/file/x.png', base).url).toBe(
				'https://images.example.com/api/file/x.png',
			);
			expect(
				resolveFileReference('https://images.example.com/api/file/x.png', base).authenticated,
			).toBe(true);
			expect(resolveFileReference('https://other.example.com/x.png', base).authenticated).toBe(
				false,
			);
		}
	});

	it('keeps a base URL’s path prefix (API paths are relative to {base_url})', () => {
		const base = 'https://example.com/imagepack';
		expect(resolveFileReference('x.png', base)).toEqual({
			url: 'https://example.com/imagepack/api/file/x.png',
			authenticated: true,
			fileName: 'x.png',
		});
		expect(resolveFileReference('/api/file/x.png', base).url).toBe(
			'https://example.com/imagepack/api/file/x.png',
		);
		expect(resolveFileReference('x.png', `${base}/`).url).toBe(
			'https://example.com/imagepack/api/file/x.png',
		);
		// A full URL on the same origin is the same server, whatever its path.
		expect(
			resolveFileReference('https://example.com/imagepack/api/file/x.png', base).authenticated,
		).toBe(true);
		expect(
			resolveFileReference('https://example.org/imagepack/api/file/x.png', base).authenticated,
		).toBe(false);
	});

	it('names a reference without a file name "file"', () => {
		expect(resolveFileReference('https://cdn.example.net/', BASE).fileName).toBe('file');
	});

	it('does not throw on a malformed percent escape', () => {
		const resolved = resolveFileReference('/api/file/100%.png', BASE);
		expect(resolved.authenticated).toBe(true);
		expect(resolved.fileName).toBe('100%.png');
	});
});

describe('mimeTypeFor', () => {
	it.each([
		['a.png', 'image/png'],
		['a.PNG', 'image/png'],
		['a.jpg', 'image/jpeg'],
		['a.jpeg', 'image/jpeg'],
		['a.JPEG', 'image/jpeg'],
		['a.webp', 'image/webp'],
		['a.gif', 'image/gif'],
		['a.avif', 'image/avif'],
		['archive.tar.png', 'image/png'],
		['a.bmp', 'application/octet-stream'],
		['noextension', 'application/octet-stream'],
		['', 'application/octet-stream'],
	])('guesses %p from the extension: %s', (fileName, mimeType) => {
		expect(mimeTypeFor(fileName)).toBe(mimeType);
	});

	it('prefers a declared Content-Type, without parameters and in lower case', () => {
		expect(mimeTypeFor('a.png', 'image/webp')).toBe('image/webp');
		expect(mimeTypeFor('a.bin', 'Image/PNG; charset=binary')).toBe('image/png');
		expect(mimeTypeFor('a', ' image/jpeg ;q=1')).toBe('image/jpeg');
	});

	it('ignores generic or empty Content-Types and falls back to the extension', () => {
		expect(mimeTypeFor('a.png', 'application/octet-stream')).toBe('image/png');
		expect(mimeTypeFor('a.png', 'binary/octet-stream')).toBe('image/png');
		expect(mimeTypeFor('a.png', 'Application/Octet-Stream; x=1')).toBe('image/png');
		expect(mimeTypeFor('a.png', '')).toBe('image/png');
		expect(mimeTypeFor('a.png', undefined)).toBe('image/png');
	});
});

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
