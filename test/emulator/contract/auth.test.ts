/**
 * Contract: authentication (`Authorization: Bearer <key>`) on every endpoint, the scope table, the
 * key error codes (401 unauthorized, 401 invalid_api_key, 403 insufficient_scope), per-key rate
 * limiting (429 rate_limited + Retry-After) and X-Request-Id on every response.
 */
import { call, expectError, setup } from './helpers';
import type { CallOptions } from './helpers';

const { emu } = setup();

type Endpoint = { name: string; scope: string; run: (options: CallOptions) => ReturnType<typeof call> };

/** One call per endpoint, each one valid when the key is right. */
async function endpoints(): Promise<Endpoint[]> {
	const [image] = (await emu().control.seedImages()).images;
	const record = await emu().control.publish();
	return [
		{ name: 'generate', scope: 'generate:write', run: (o) => call(emu(), 'POST', '/api/v1/generate', { body: { prompt: 'a cup' }, ...o }) },
		{ name: 'list publications', scope: 'documents:read', run: (o) => call(emu(), 'GET', '/api/v1/image-pack-publications', o) },
		{ name: 'publication detail', scope: 'documents:read', run: (o) => call(emu(), 'GET', `/api/v1/image-pack-publications/${record.id}`, o) },
		{ name: 'file', scope: 'assets:read', run: (o) => call(emu(), 'GET', image.url, o) },
	];
}

test('rule 1: Authorization: Bearer <key> works on every endpoint', async () => {
	for (const endpoint of await endpoints()) {
		const reply = await endpoint.run({});
		expect([endpoint.name, reply.status]).toEqual([endpoint.name, endpoint.name === 'file' ? 302 : 200]);
	}
});

test('rule 3: created keys start with sk_ and are shown whole once (the key value is the credential)', async () => {
	const key = await emu().control.createKey({ scopes: ['documents:read'] });
	expect(key.key).toMatch(/^sk_[0-9a-f]{16,}$/);
	expect(emu().apiKey).toMatch(/^sk_/);
	expect((await call(emu(), 'GET', '/api/v1/image-pack-publications', { key: key.key })).status).toBe(200);
});

test('rule 5: a missing key → 401 unauthorized (also a non-Bearer or empty Authorization)', async () => {
	for (const endpoint of await endpoints()) {
		expectError(await endpoint.run({ key: null }), 401, 'unauthorized');
		expectError(await endpoint.run({ key: null, headers: { authorization: 'Basic dXNlcjpwYXNz' } }), 401, 'unauthorized');
		expectError(await endpoint.run({ key: null, headers: { authorization: 'Bearer ' } }), 401, 'unauthorized');
	}
});

test('rule 5: invalid, revoked or expired key → 401 invalid_api_key', async () => {
	const revoked = await emu().control.createKey();
	await emu().control.revokeKey(revoked.key);
	const now = (await emu().control.now()).now;
	const expired = await emu().control.createKey({ expiresAt: now - 1 });
	const expiring = await emu().control.createKey({ expiresAt: now + 60_000 });
	for (const endpoint of await endpoints()) {
		expectError(await endpoint.run({ key: 'sk_not_a_real_key' }), 401, 'invalid_api_key');
		expectError(await endpoint.run({ key: revoked.key }), 401, 'invalid_api_key');
		expectError(await endpoint.run({ key: expired.key }), 401, 'invalid_api_key');
	}
	expect((await call(emu(), 'GET', '/api/v1/image-pack-publications', { key: expiring.key })).status).toBe(200);
	await emu().control.advanceClock(60_000);
	expectError(await call(emu(), 'GET', '/api/v1/image-pack-publications', { key: expiring.key }), 401, 'invalid_api_key');
});

test('rule 4 + 5: each endpoint needs its scope, otherwise 403 insufficient_scope', async () => {
	const list = await endpoints();
	for (const scope of ['generate:write', 'assets:read', 'documents:read']) {
		const key = (await emu().control.createKey({ scopes: [scope] })).key;
		for (const endpoint of list) {
			const reply = await endpoint.run({ key });
			if (endpoint.scope === scope) expect(reply.status).toBeLessThan(400);
			else expectError(reply, 403, 'insufficient_scope');
		}
	}
	const none = (await emu().control.createKey({ scopes: [] })).key;
	for (const endpoint of list) expectError(await endpoint.run({ key: none }), 403, 'insufficient_scope');
});

test('a key of another account sees that account only', async () => {
	const other = await emu().control.createAccount();
	const key = (await emu().control.createKey({ accountId: other.accountId })).key;
	const mine = await emu().control.publish();
	const list = await call(emu(), 'GET', '/api/v1/image-pack-publications', { key });
	expect(list.json.items).toEqual([]);
	expectError(await call(emu(), 'GET', `/api/v1/image-pack-publications/${mine.id}`, { key }), 404, 'not_found');
});

test('per-key rate limit → 429 rate_limited with Retry-After; other keys unaffected; the window slides', async () => {
	await emu().control.setRateLimit({ perKeyPerMinute: 3 });
	const other = (await emu().control.createKey()).key;
	for (let i = 0; i < 3; i++) expect((await call(emu(), 'GET', '/api/v1/image-pack-publications')).status).toBe(200);
	const limited = await call(emu(), 'GET', '/api/v1/image-pack-publications');
	expectError(limited, 429, 'rate_limited');
	expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
	expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
	// Counted across endpoints, per key.
	expectError(await call(emu(), 'POST', '/api/v1/generate', { body: { prompt: 'a cup' } }), 429, 'rate_limited');
	expect((await call(emu(), 'GET', '/api/v1/image-pack-publications', { key: other })).status).toBe(200);
	await emu().control.advanceClock(60_000);
	expect((await call(emu(), 'GET', '/api/v1/image-pack-publications')).status).toBe(200);
	await emu().control.setRateLimit({ perKeyPerMinute: null });
	for (let i = 0; i < 5; i++) expect((await call(emu(), 'GET', '/api/v1/image-pack-publications')).status).toBe(200);
});

test('X-Request-Id on every response: success, errors, redirect, signed file, unknown route', async () => {
	const [image] = (await emu().control.seedImages()).images;
	const redirect = await call(emu(), 'GET', image.url);
	const replies = [
		await call(emu(), 'GET', '/api/v1/image-pack-publications'),
		await call(emu(), 'GET', '/api/v1/image-pack-publications', { key: null }),
		redirect,
		await call(emu(), 'GET', redirect.headers.location, { key: null }),
		await call(emu(), 'GET', '/api/v2/nothing'),
	];
	const ids = replies.map((r) => r.headers['x-request-id']);
	for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]+$/);
	expect(new Set(ids).size).toBe(ids.length);
	expectError(replies[4], 404, 'not_found');
});

test('error messages are Chinese (even with Accept-Language en)', async () => {
	const reply = await call(emu(), 'POST', '/api/v1/generate', {
		body: {},
		headers: { 'accept-language': 'en' },
	});
	expect(reply.json.error.message).toMatch(/[\u4e00-\u9fff]/);
});
