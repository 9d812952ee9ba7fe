/**
 * Where a call goes: the route, and so the scope of an API key it needs, of a path; where a file
 * reference points and whether it may get the key (never sent to another host).
 */
import { resolveFileReference, routeOf } from '../../../nodes/ImagePack/transport/connection';

describe('routeOf: the route, and so the scope an API key needs, of a path', () => {
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
