/**
 * signedFileLink: the file endpoint's 302 read, never followed. Scripted servers stand in for the API
 * and for the host of the signed links, so every request (and every header) that reached either is
 * counted; the call runs in a real n8n execution context through n8n's HTTP helpers.
 */
import type { IDataObject } from 'n8n-workflow';

import {
	SIGNED_LINK_MARGIN_MS,
	SIGNED_LINK_VALIDITY_MS,
} from '../../../nodes/ImagePack/transport/limits';
import { runNode } from '../../harness/n8n';
import { TransportProbe } from '../../harness/probe-node';
import { apiErrorBody } from '../../harness/scripted-server';
import { twoServers } from '../../harness/two-servers';

// A made-up key: every test checks it never reaches the link host or comes back out.
const KEY = ['sk', 'link', '0123456789abcdef'].join('_');
const FILE = 'GET /api/file/img_1.png';

const { api, other: files } = twoServers();

type Failure = Error & { description?: string; context?: IDataObject };

async function link(reference = '/api/file/img_1.png') {
	const [[item]] = await runNode({
		nodeType: new TransportProbe(),
		parameters: { action: 'link', path: reference, timeoutMs: 5000 },
		credentials: { baseUrl: api.url, apiKey: KEY },
	});
	return item.json as { url: string; expiresAt: string };
}

async function linkError(reference?: string): Promise<Failure> {
	try {
		await link(reference);
	} catch (error) {
		const failure = error as Failure;
		// Whatever went wrong, the key is in no part of the error.
		expect(JSON.stringify([failure.message, failure.description, failure.context])).not.toContain(
			KEY,
		);
		return failure;
	}
	throw new Error('expected no link');
}

const signed = () => `${files.url}/signed/img_1.png?expires=1&signature=abc`;

describe('signedFileLink', () => {
	it('one authenticated GET; the Location is handed out, not fetched; expiry = sent + 1 hour − margin', async () => {
		api.script(FILE, (_request, reply) => reply.code(302).header('location', signed()).send());
		const before = Date.now();
		const result = await link();
		const after = Date.now();
		expect(result.url).toBe(signed());
		const expires = Date.parse(result.expiresAt);
		const validity = SIGNED_LINK_VALIDITY_MS - SIGNED_LINK_MARGIN_MS;
		expect(expires).toBeGreaterThanOrEqual(before + validity);
		expect(expires).toBeLessThanOrEqual(after + validity);
		expect(SIGNED_LINK_MARGIN_MS).toBeGreaterThan(0);
		expect(api.seen).toHaveLength(1);
		expect(api.seen[0].headers.authorization).toBe(`Bearer ${KEY}`);
		expect(files.seen).toHaveLength(0);
	});

	it('accepts a file name and a relative Location (resolved against the API)', async () => {
		api.script(FILE, (_request, reply) =>
			reply.code(302).header('location', '/signed/img_1.png?sig=1').send(),
		);
		expect((await link('img_1.png')).url).toBe(`${api.url}/signed/img_1.png?sig=1`);
		expect(api.seen.map((seen) => seen.url)).toEqual(['/api/file/img_1.png']);
	});

	it('retries a 503 (a GET), then takes the redirect', async () => {
		api.script(
			FILE,
			(_request, reply) => reply.code(503).send(apiErrorBody('service_unavailable')),
			(_request, reply) => reply.code(302).header('location', signed()).send(),
		);
		expect((await link()).url).toBe(signed());
		expect(api.seen).toHaveLength(2);
	});

	it('a key without assets:read: insufficient_scope naming the scope, nothing else sent', async () => {
		api.script(FILE, (_request, reply) =>
			reply.code(403).send(apiErrorBody('insufficient_scope', '权限不足', 'req_scope')),
		);
		const failure = await linkError();
		expect(failure.message).toMatch(/lacks the assets:read scope/);
		expect(failure.context).toMatchObject({
			code: 'insufficient_scope',
			httpStatus: 403,
			requestId: 'req_scope',
			charge: 'not_charged',
		});
		expect(api.seen).toHaveLength(1);
	});

	it('a Location that carries the key (plain or escaped) is refused, not handed out', async () => {
		for (const location of [
			`${files.url}/f.png?token=${KEY}`,
			`${files.url}/f.png?token=${encodeURIComponent(KEY).replace(/_/g, '%5F')}`,
		]) {
			api.script(FILE, (_request, reply) => reply.code(302).header('location', location).send());
			const failure = await linkError();
			expect(failure.context?.code).toBe('bad_redirect');
			expect(failure.message).toMatch(/carries the API key/);
		}
		expect(files.seen).toHaveLength(0);
	});

	it('no Location, a javascript: Location or user:password in it: bad_redirect', async () => {
		const cases: Array<[string | undefined, RegExp]> = [
			[undefined, /has no Location header/],
			['javascript:alert(1)', /points to a javascript: address/],
			[`http://user:secret@127.0.0.1:1/f.png`, /carries credentials/],
		];
		for (const [location, words] of cases) {
			api.script(FILE, (_request, reply) => {
				if (location) reply.header('location', location);
				return reply.code(302).send();
			});
			const failure = await linkError();
			expect(failure.context?.code).toBe('bad_redirect');
			expect(failure.message).toMatch(words);
		}
	});

	it('a file served directly (200) is no link: no_signed_link, and the body is not read into the result', async () => {
		api.script(FILE, (_request, reply) =>
			reply.header('content-type', 'image/png').send(Buffer.alloc(1024)),
		);
		const failure = await linkError();
		expect(failure.context).toMatchObject({ code: 'no_signed_link', httpStatus: 200 });
		expect(failure.message).toMatch(/no link to open without the API key/);
	});

	it('a URL on another host has no signed link: refused before anything is sent', async () => {
		const failure = await linkError(`${files.url}/api/file/img_1.png`);
		expect(failure.context).toMatchObject({ code: 'not_api_file', charge: 'not_sent' });
		expect(failure.message).toMatch(/is not a file of the Image Pack API/);
		expect(api.seen).toHaveLength(0);
		expect(files.seen).toHaveLength(0);
	});
});
