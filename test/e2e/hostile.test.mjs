/**
 * Hostile servers in the pinned n8n: the packed package runs with `n8n execute` against an "API" that
 * redirects, echoes the key and sends a file that never ends, next to a second server on another port
 * that records whatever reaches it. The harness covers every variant (test/integration/transport/hostile.test.ts);
 * this file proves the classes hold inside a real n8n, with n8n's own HTTP helpers and binary data.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';

import { chain, node, withCredential } from './fixtures.mjs';
import { createUserFolder, executeWorkflow, importCredential, importWorkflow, packPackage } from './n8n.mjs';

const IMAGE_PACK = 'n8n-nodes-imagepack.imagePack';
const API_KEY = 'sk_e2e_hostile_0123456789abcdef';

/** A loopback server that records every request and answers with `respond(request, response)`. */
async function recordingServer(respond) {
	const seen = [];
	const server = http.createServer((request, response) => {
		seen.push({ method: request.method, url: request.url, authorization: request.headers.authorization });
		request.resume();
		respond(request, response);
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	const origin = `http://127.0.0.1:${server.address().port}`;
	return {
		origin,
		seen,
		close: () => new Promise((resolve) => server.close(resolve).closeAllConnections()),
	};
}

describe('hostile servers in n8n 2.41.1 (n8n execute)', () => {
	let api;
	let elsewhere;
	let userFolder;
	/** Bytes the endless file sent before n8n hung up, and whether it did. */
	const endless = { bytes: 0, closed: false };
	const ids = {
		getRedirect: 'e2eHostileGet001',
		generateRedirectAway: 'e2eHostileGen001',
		generateRedirectSame: 'e2eHostileGen002',
		keyEcho: 'e2eHostileEcho01',
		endlessFile: 'e2eHostileFile01',
	};

	before(async () => {
		elsewhere = await recordingServer((request, response) => {
			if (request.url.startsWith('/signed/')) {
				// A signed link whose body never ends: 64 KiB chunks until the client hangs up.
				response.writeHead(200, { 'content-type': 'image/png' });
				const chunk = Buffer.alloc(64 * 1024, 7);
				const pump = () => {
					while (!response.destroyed && response.write(chunk)) endless.bytes += chunk.length;
					if (!response.destroyed) response.once('drain', pump);
				};
				response.on('close', () => (endless.closed = true));
				pump();
				return;
			}
			// Looks like a generate answer: must never be taken as one.
			response.writeHead(200, { 'content-type': 'application/json' });
			response.end(JSON.stringify({ ok: true, turn_id: 't_x', session_id: 's_x', credits_charged: 0, images: [], warnings: [] }));
		});
		api = await recordingServer((request, response) => {
			const path = request.url.split('?')[0];
			const redirect = (status, location) => {
				response.writeHead(status, { location });
				response.end();
			};
			if (path === '/api/v1/image-pack-publications/1') return redirect(302, `${elsewhere.origin}/steal`);
			if (path === '/api/v1/image-pack-publications/7') {
				response.writeHead(200, { 'content-type': 'application/json', 'x-request-id': API_KEY });
				return response.end(
					JSON.stringify({ id: 7, pack_id: API_KEY, version: 1, style_code: `token ${API_KEY}`, manifest: { schemaVersion: 3, note: API_KEY } }),
				);
			}
			if (path === '/api/v1/generate') return redirect(307, `${elsewhere.origin}/api/v1/generate`);
			// Behind the second credential's Base URL (…/same): a 307 back to the very same path.
			if (path === '/same/api/v1/generate') return redirect(307, '/same/api/v1/generate');
			if (path.startsWith('/api/file/')) return redirect(302, `${elsewhere.origin}/signed/${path.slice('/api/file/'.length)}`);
			response.writeHead(404, { 'content-type': 'application/json' });
			response.end(JSON.stringify({ ok: false, error: { code: 'not_found', message: 'not found' } }));
		});

		const credential = { id: 'imagePackHostile', name: 'Image Pack (hostile)', type: 'imagePackApi', data: { baseUrl: api.origin, apiKey: API_KEY } };
		const samePath = { ...credential, id: 'imagePackHostile2', name: 'Image Pack (hostile, same path)', data: { baseUrl: `${api.origin}/same`, apiKey: API_KEY } };
		const generate = () =>
			node('Generate', IMAGE_PACK, { resource: 'image', operation: 'generate', prompt: 'A white mug', options: { downloadImages: false } });
		const workflows = [
			chain(ids.getRedirect, 'e2e hostile: get redirected away', [
				node('Get', IMAGE_PACK, { resource: 'publication', operation: 'get', publicationId: { __rl: true, mode: 'id', value: '1' } }),
			]),
			chain(ids.generateRedirectAway, 'e2e hostile: generate redirected away', [generate()]),
			chain(ids.keyEcho, 'e2e hostile: key echoed', [
				node('Get', IMAGE_PACK, { resource: 'publication', operation: 'get', publicationId: { __rl: true, mode: 'id', value: '7' } }),
			]),
			chain(ids.endlessFile, 'e2e hostile: endless file', [
				node('Download', IMAGE_PACK, {
					resource: 'file',
					operation: 'download',
					fileUrl: '/api/file/img_endless.png',
					options: { maxFileSizeMb: 2 },
				}),
			]),
		].map((workflow) => withCredential(workflow, credential));
		workflows.push(withCredential(chain(ids.generateRedirectSame, 'e2e hostile: generate redirected to itself', [generate()]), samePath));
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		await importCredential(userFolder.dir, [credential, samePath]);
		await importWorkflow(userFolder.dir, workflows);
	});

	after(async () => {
		await api?.close();
		await elsewhere?.close();
		userFolder?.cleanup();
	});

	const run = async (id) => {
		api.seen.length = 0;
		elsewhere.seen.length = 0;
		const result = await executeWorkflow(userFolder.dir, id);
		assert.ok(!`${result.stdout}${result.stderr}`.includes(API_KEY), 'the key appears nowhere in what n8n printed');
		return result;
	};

	it('a redirect from Get Publication is an error naming its target; nothing reaches the other port', async () => {
		const result = await run(ids.getRedirect);
		assert.equal(result.ok, false);
		assert.match(JSON.stringify(result.nodeError('Get') ?? result.error), new RegExp(`redirect.*${elsewhere.origin.replace(/[.:/]/g, '.')}`, 'i'));
		assert.equal(api.seen.length, 1);
		assert.equal(api.seen[0].authorization, `Bearer ${API_KEY}`, 'the key goes to the credential’s origin');
		assert.deepEqual(elsewhere.seen, []);
	});

	it('a 307 from Generate to another port: one POST, no request elsewhere, "may have been charged"', async () => {
		const result = await run(ids.generateRedirectAway);
		assert.equal(result.ok, false);
		const posts = api.seen.filter((request) => request.method === 'POST');
		assert.equal(posts.length, 1, 'the generation request reached the network once');
		assert.deepEqual(elsewhere.seen, [], 'neither the key nor the body followed the redirect');
		const error = JSON.stringify(result.nodeError('Generate') ?? result.error);
		assert.match(error, /redirect \(HTTP 307\)/);
		assert.match(error, /may have been charged/);
	});

	it('a 307 from Generate back to the same path: still one POST', async () => {
		const result = await run(ids.generateRedirectSame);
		assert.equal(result.ok, false);
		assert.deepEqual(
			api.seen.filter((request) => request.method === 'POST').map((request) => request.url),
			['/same/api/v1/generate'],
		);
		const error = JSON.stringify(result.nodeError('Generate') ?? result.error);
		assert.match(error, /redirect \(HTTP 307\)/);
		assert.match(error, /may have been charged/);
	});

	it('a key echoed in the body and X-Request-Id never reaches the output', async () => {
		const result = await run(ids.keyEcho);
		assert.ok(result.ok, result.stdout + result.stderr);
		const [item] = result.nodeOutput('Get');
		assert.equal(item.json.id, 7);
		assert.ok(!JSON.stringify(item).includes(API_KEY), 'masked in json and request_id');
	});

	it('an endless signed link stops at Max File Size with a clear error; the link got no key', async () => {
		const result = await run(ids.endlessFile);
		assert.equal(result.ok, false);
		assert.match(JSON.stringify(result.nodeError('Download') ?? result.error), /Max File Size|larger than|size/i);
		const signed = elsewhere.seen.filter((request) => request.url.startsWith('/signed/'));
		assert.equal(signed.length, 1);
		assert.equal(signed[0].authorization, undefined, 'the signed link is fetched without the key');
		assert.ok(endless.closed, 'n8n hung up on the endless body');
		assert.ok(endless.bytes < 64 * 1024 * 1024, `stopped early (${endless.bytes} bytes sent)`);
	});
});
