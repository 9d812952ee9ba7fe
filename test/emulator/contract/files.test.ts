/**
 * Contract: the file download (`GET /api/file/<name>`) — 302 to a signed link on another host,
 * valid one hour, needing no key; real PNGs at the reported size for every ratio × resolution, with
 * stable bytes per image.
 */
import { createHash } from 'crypto';

import { dimensions } from '../catalog';
import type { Ratio, Resolution } from '../catalog';
import { call, decodePng, expectError, generate, setup } from './helpers';

const { emu } = setup();

const HOUR = 60 * 60 * 1000;

async function signedLink(url: string, key?: string): Promise<string> {
	const reply = await call(emu(), 'GET', url, { key });
	expect(reply.status).toBe(302);
	return reply.headers.location;
}

test('302 to a direct link on a different host:port, fetched without credentials', async () => {
	const gen = await generate(emu(), { prompt: 'a cup', model: 'nano-banana-2', ratio: '1:1', resolution: '1K' });
	const image = gen.json.images[0];
	await emu().control.clearRequests();
	const redirect = await call(emu(), 'GET', image.url);
	expect(redirect.status).toBe(302);
	expect(redirect.headers['x-request-id']).toMatch(/^req_/);
	const location = new URL(redirect.headers.location);
	expect(location.origin).toBe(emu().fileBaseUrl);
	expect(location.origin).not.toBe(new URL(emu().baseUrl).origin);
	const file = await call(emu(), 'GET', redirect.headers.location, { key: null });
	expect(file.status).toBe(200);
	expect(file.headers['content-type']).toBe('image/png');
	expect(file.headers['x-request-id']).toMatch(/^req_/);
	expect(decodePng(file.bytes)).toEqual({ width: image.width, height: image.height });

	const log = await emu().control.requests();
	expect(log.map((e) => [e.listener, e.route, e.status])).toEqual([
		['api', 'file', 302],
		['files', 'signedFile', 200],
	]);
	expect(log[0].headers.authorization).toBe(`Bearer ${emu().apiKey}`);
	expect(log[1].headers.authorization).toBeUndefined();
});

test('the link is valid for one hour (emulator clock)', async () => {
	const [image] = (await emu().control.seedImages()).images;
	const link = await signedLink(image.url);
	const { now } = await emu().control.now();
	expect(Number(new URL(link).searchParams.get('expires'))).toBeGreaterThanOrEqual(now + HOUR - 1000);
	await emu().control.advanceClock(HOUR - 5000);
	expect((await call(emu(), 'GET', link, { key: null })).status).toBe(200);
	await emu().control.advanceClock(10_000);
	expectError(await call(emu(), 'GET', link, { key: null }), 403, 'link_expired');
	// Asking the file endpoint again gives a fresh link.
	expect((await call(emu(), 'GET', await signedLink(image.url), { key: null })).status).toBe(200);
});

test('a tampered link is 403 invalid_signature', async () => {
	const [image, other] = (await emu().control.seedImages({ count: 2 })).images;
	const link = new URL(await signedLink(image.url));
	const badSig = new URL(link);
	badSig.searchParams.set('signature', '0'.repeat(64));
	const longer = new URL(link);
	longer.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + HOUR));
	const swapped = new URL(link.toString().replace(image.filename, other.filename));
	const unsigned = new URL(link.origin + link.pathname);
	for (const url of [badSig, longer, swapped, unsigned]) {
		expectError(await call(emu(), 'GET', url.toString(), { key: null }), 403, 'invalid_signature');
	}
});

test('requested with the key of the owning account; others get 404 not_found', async () => {
	const [image] = (await emu().control.seedImages()).images;
	const other = await emu().control.createAccount();
	const otherKey = (await emu().control.createKey({ accountId: other.accountId })).key;
	expectError(await call(emu(), 'GET', image.url, { key: otherKey }), 404, 'not_found');
	expectError(await call(emu(), 'GET', '/api/file/nothing.png'), 404, 'not_found');
});

test('deleted or cleaned images are gone (endpoint and already issued links)', async () => {
	const [deleted, cleaned] = (await emu().control.seedImages({ count: 2 })).images;
	const link = await signedLink(deleted.url);
	await emu().control.deleteImage(deleted.filename); // by filename works too
	await emu().control.cleanImage(cleaned.id);
	expectError(await call(emu(), 'GET', deleted.url), 404, 'not_found');
	expectError(await call(emu(), 'GET', cleaned.url), 404, 'not_found');
	expectError(await call(emu(), 'GET', link, { key: null }), 404, 'not_found');
});

describe('PNG bytes: real, exact size, stable', () => {
	const ratios: Ratio[] = ['1:1', '3:4', '4:5', '16:9', '9:16'];
	const resolutions: Resolution[] = ['1K', '2K', '4K'];

	test.each(resolutions)('%s: every ratio decodes at the stated size; the long side is 1024/2048/4096', async (resolution) => {
		for (const ratio of ratios) {
			const [image] = (await emu().control.seedImages({ ratio, resolution })).images;
			expect({ width: image.width, height: image.height }).toEqual(dimensions(ratio, resolution));
			expect(Math.max(image.width, image.height)).toBe({ '1K': 1024, '2K': 2048, '4K': 4096 }[resolution]);
			const file = await call(emu(), 'GET', await signedLink(image.url), { key: null });
			expect(decodePng(file.bytes)).toEqual({ width: image.width, height: image.height });
			expect(Number(file.headers['content-length'])).toBe(file.bytes.length);
		}
	});

	test('a generated 4K image really is 4K', async () => {
		const gen = await generate(emu(), { prompt: 'a cup', model: 'gpt-image-2', ratio: '9:16', resolution: '4K' });
		const image = gen.json.images[0];
		expect(image).toMatchObject({ width: 2304, height: 4096 });
		const file = await call(emu(), 'GET', await signedLink(image.url), { key: null });
		expect(decodePng(file.bytes)).toEqual({ width: 2304, height: 4096 });
	});

	test('same image → same bytes (matching the control API sha256); different images → different bytes', async () => {
		const [a, b] = (await emu().control.seedImages({ count: 2 })).images;
		const first = await call(emu(), 'GET', await signedLink(a.url), { key: null });
		const again = await call(emu(), 'GET', await signedLink(a.url), { key: null });
		const other = await call(emu(), 'GET', await signedLink(b.url), { key: null });
		expect(first.bytes.equals(again.bytes)).toBe(true);
		expect(first.bytes.equals(other.bytes)).toBe(false);
		expect(createHash('sha256').update(first.bytes).digest('hex')).toBe(a.sha256);
	});
});
