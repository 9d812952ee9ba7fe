/**
 * The transport against hostile and broken servers: scripted servers that answer like the API but
 * redirect, echo the key, stream forever, trickle or cut bodies short. The nodes run in real n8n
 * execution contexts; the servers count what reached them. (Generate's options and odd answers:
 * image/generate-hostile.test.ts; the publication reads: publication/hostile.test.ts.)
 */
import type { INodeParameters } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import { ImagePackTrigger } from '../../../nodes/ImagePack/ImagePackTrigger.node';
import { limits } from '../../../nodes/ImagePack/transport/limits';
import { PollingWorkflow, runNode } from '../../harness/n8n';
import { type Handler, type ScriptedServer, apiErrorBody } from '../../harness/scripted-server';
import {
	type Failure,
	KEY,
	generate,
	okGeneration,
	shown,
	twoServers,
} from '../../harness/two-servers';
const GENERATE = 'POST /api/v1/generate';
const LIST = 'GET /api/v1/image-pack-publications';
const DETAIL = 'GET /api/v1/image-pack-publications/7';

const { api, other, run, runError } = twoServers();

const REDIRECTS = [301, 302, 303, 307, 308];

describe('the key never leaves the credential’s origin', () => {
	const endpoints: Array<[string, string, INodeParameters]> = [
		['Generate', GENERATE, generate({ options: { downloadImages: false } })],
		['Get Publication', DETAIL, { resource: 'publication', operation: 'get', publicationId: '7' }],
		['Get Many', LIST, { resource: 'publication', operation: 'getMany', returnAll: true }],
	];

	describe.each(endpoints)('%s', (_name, route, parameters) => {
		it.each(REDIRECTS)(
			'a %i to another port is an error naming the target, not followed',
			async (status) => {
				const target = `${other.url}${route.split(' ')[1]}`;
				api.script(route, (_request, reply) =>
					reply.code(status).header('location', target).send(),
				);
				other.script(route, (_request, reply) => reply.send(okGeneration()));
				const error = await runError(parameters);
				expect(error.message).toContain(`redirect (HTTP ${status}) to ${target}`);
				expect(error.description).toContain('the API key was not sent there');
				expect(other.seen).toHaveLength(0);
				expect(api.seen).toHaveLength(1);
				expect(shown(error)).not.toContain(KEY);
			},
		);

		it('a redirect to the same path on the same origin is not followed either', async () => {
			api.script(route, (_request, reply) =>
				reply.code(307).header('location', route.split(' ')[1]).send(),
			);
			await runError(parameters);
			expect(api.seen).toHaveLength(1);
		});
	});

	it('a redirect from the trigger’s list is reported and not followed', async () => {
		api.script(LIST, (_request, reply) =>
			reply.code(302).header('location', `${other.url}/api/v1/image-pack-publications`).send(),
		);
		const workflow = new PollingWorkflow({
			nodeType: new ImagePackTrigger(),
			parameters: { includeManifest: false },
			credentials: { baseUrl: api.url, apiKey: KEY },
		});
		await expect(workflow.poll('manual')).rejects.toThrow(/redirect \(HTTP 302\)/);
		expect(other.seen).toHaveLength(0);
	});

	it('a file URL on the same host but another port or scheme gets no key', async () => {
		const port = Number(new URL(api.url).port);
		other.script('GET /api/file/x.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1])),
		);
		// Same host name, other port: another origin.
		await run({ resource: 'file', operation: 'download', fileUrl: `${other.url}/api/file/x.png` });
		expect(other.seen[0].headers.authorization).toBeUndefined();
		expect(port).not.toBe(Number(new URL(other.url).port));
	});

	describe('the file endpoint’s redirect is followed by hand, without the key', () => {
		const download = { resource: 'file', operation: 'download', fileUrl: '/api/file/x.png' };

		it.each(REDIRECTS)(
			'%i to another host: the signed link gets no Authorization',
			async (status) => {
				api.script('GET /api/file/x.png', (_request, reply) =>
					reply.code(status).header('location', `${other.url}/signed/x.png`).send(),
				);
				other.script('GET /signed/x.png', (_request, reply) =>
					reply.type('image/png').send(Buffer.from([1, 2])),
				);
				const [item] = await run(download);
				expect(item.binary?.data.fileName).toBe('x.png');
				expect(other.seen).toHaveLength(1);
				expect(other.seen[0].headers.authorization).toBeUndefined();
			},
		);

		it('a signed link that redirects back to the API origin still gets no key', async () => {
			api.script('GET /api/file/x.png', (_request, reply) =>
				reply.code(302).header('location', `${other.url}/hop`).send(),
			);
			other.script('GET /hop', (_request, reply) =>
				reply.code(302).header('location', `${api.url}/bounce`).send(),
			);
			api.script('GET /bounce', (_request, reply) =>
				reply.type('image/png').send(Buffer.from([3])),
			);
			await run(download);
			const bounce = api.seen.find((request) => request.url === '/bounce');
			expect(bounce?.headers.authorization).toBeUndefined();
		});

		it.each([
			['data:', 'data:image/png;base64,iVBORw0KGgo='],
			['file:', 'file:///etc/passwd'],
			['javascript:', 'javascript:alert(1)'],
			['ftp:', 'ftp://127.0.0.1/x.png'],
		])('a %s target is refused', async (_scheme, location) => {
			api.script('GET /api/file/x.png', (_request, reply) =>
				reply.code(302).header('location', location).send(),
			);
			const error = await runError(download);
			expect(error.message).toBe('The file endpoint redirected somewhere the node does not follow');
			expect(error.description).toMatch(/never followed/);
		});

		it('a Location that is not a URL is a clear error, not a bare "Invalid URL"', async () => {
			api.script('GET /api/file/x.png', (_request, reply) =>
				reply.code(302).header('location', 'http://[::1').send(),
			);
			const error = await runError(download);
			expect(error.message).toBe('The file endpoint redirected somewhere the node does not follow');
			expect(error.description).toMatch(/points to "http:\/\/\[::1", which is not a valid URL/);
		});

		it('an endless redirect chain stops after the bounded number of hops', async () => {
			api.script('GET /api/file/x.png', (_request, reply) =>
				reply.code(302).header('location', `${other.url}/loop`).send(),
			);
			other.script('GET /loop', (_request, reply) =>
				reply.code(302).header('location', `${other.url}/loop`).send(),
			);
			const error = await runError(download);
			expect(error.description).toMatch(/at most 5 redirects are followed/);
			expect(other.seen).toHaveLength(limits.maxSignedLinkRedirects);
		});

		it('a redirect without Location is a clear error', async () => {
			api.script('GET /api/file/x.png', (_request, reply) => reply.code(302).send());
			const error = await runError(download);
			expect(error.description).toContain('has no Location header');
		});
	});
});

describe('a generation reaches the network at most once per item', () => {
	const cases: Array<[string, (server: ScriptedServer) => void]> = [
		...REDIRECTS.map((status): [string, (server: ScriptedServer) => void] => [
			`${status} to the same path`,
			(server) =>
				server.script(GENERATE, (_request, reply) =>
					reply.code(status).header('location', '/api/v1/generate').send(),
				),
		]),
		[
			'307 to a closed port',
			(server) =>
				server.script(GENERATE, (_request, reply) =>
					reply.code(307).header('location', 'http://127.0.0.1:9/api/v1/generate').send(),
				),
		],
		[
			'a reset',
			(server) =>
				server.script(GENERATE, (request, reply) => {
					reply.hijack();
					request.raw.socket.destroy();
				}),
		],
		[
			'a 502 HTML page',
			(server) =>
				server.script(GENERATE, (_request, reply) =>
					reply.code(502).type('text/html').send('<h1>bad gateway</h1>'),
				),
		],
		[
			'a 503 without body',
			(server) => server.script(GENERATE, (_request, reply) => reply.code(503).send()),
		],
		[
			'a 500 internal_error',
			(server) =>
				server.script(GENERATE, (_request, reply) =>
					reply.code(500).send(apiErrorBody('internal_error')),
				),
		],
		[
			'a body cut short',
			(server) =>
				server.script(GENERATE, (_request, reply) => {
					reply.hijack();
					reply.raw.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
					reply.raw.end('{"ok": true, "turn_id": "t_');
					reply.raw.socket?.destroy();
				}),
		],
	];

	it.each(cases)(
		'%s: one request for each of 3 items, with Continue On Fail',
		async (_name, script) => {
			script(api);
			const items = [{ json: {} }, { json: {} }, { json: {} }];
			const output = await run(generate({ options: { downloadImages: false } }), {
				items,
				continueOnFail: true,
			});
			expect(output).toHaveLength(3);
			expect(api.seen.filter((request) => request.method === 'POST')).toHaveLength(3);
			expect(other.seen).toHaveLength(0);
			expect(shown(output)).not.toContain(KEY);
		},
	);
});

describe('the key is masked in everything that leaves the node', () => {
	it('echoed in request_id, code, message and X-Request-Id of an error', async () => {
		api.script(GENERATE, (_request, reply) =>
			reply
				.code(400)
				.header('x-request-id', `req_${KEY}`)
				.send({ error: { code: `bad_${KEY}`, message: `key ${KEY}`, request_id: `req_${KEY}` } }),
		);
		const error = await runError(generate());
		expect(shown(error)).not.toContain(KEY);
		expect(shown(error)).toContain('sk_***');
		const [item] = await run(generate(), { continueOnFail: true });
		expect(shown(item)).not.toContain(KEY);
	});

	it('echoed in a successful answer and its X-Request-Id', async () => {
		api.script(GENERATE, (_request, reply) =>
			reply.header('x-request-id', KEY).send({
				...okGeneration(0),
				turn_id: `t_${KEY}`,
				nested: [{ deeper: { k: KEY } }],
				[KEY]: 1,
			}),
		);
		const [item] = await run(generate());
		expect(shown(item)).not.toContain(KEY);
		expect(item.json.request_id).toBe('sk_***');
	});

	it('a key cut in the middle by a length limit leaves no prefix of it', async () => {
		const padding = 'x'.repeat(190);
		api.script(GENERATE, (_request, reply) =>
			reply.code(502).type('text/html').send(`<p>${padding}${KEY}</p>`),
		);
		const error = await runError(generate());
		expect(shown(error)).not.toContain(KEY.slice(0, 12));
	});

	it('the key escaped as JSON unicode is still masked once decoded', async () => {
		const escaped = [...KEY]
			.map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
			.join('');
		api.script(DETAIL, (_request, reply) =>
			reply.type('application/json').send(`{"id": 7, "note": "${escaped}"}`),
		);
		const [item] = await run({ resource: 'publication', operation: 'get', publicationId: '7' });
		expect(shown(item)).not.toContain(KEY);
	});
});

describe('two accounts in one run: a key never crosses items', () => {
	const KEY_B = ['sk', 'hostile', 'b', 'fedcba9876543210'].join('_');
	const rows = [{ json: { apiKey: KEY } }, { json: { apiKey: KEY_B } }];
	const twoKeys = async (parameters: INodeParameters) =>
		(
			await runNode({
				nodeType: new ImagePack(),
				parameters,
				items: rows,
				continueOnFail: true,
				credentials: { baseUrl: api.url, apiKey: '={{ $json.apiKey }}' },
			})
		)[0];
	const bearer = (request: { headers: Record<string, unknown> }) =>
		String(request.headers.authorization ?? '');

	it('each row is sent with its own key, and an echoed key is masked in its own row', async () => {
		api.script(GENERATE, (request, reply) =>
			reply.header('x-request-id', bearer(request)).send({
				...okGeneration(0),
				turn_id: `t_${bearer(request)}`,
			}),
		);
		const output = await twoKeys(generate({ options: { downloadImages: false } }));
		expect(api.seen.map(bearer)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY_B}`]);
		for (const item of output) {
			expect(shown(item)).not.toContain(KEY);
			expect(shown(item)).not.toContain(KEY_B);
			expect(item.json.request_id).toBe('Bearer sk_***');
		}
	});

	it('an error of one row names neither key; the other row goes on with its own', async () => {
		api.script(
			GENERATE,
			(request, reply) =>
				reply
					.code(400)
					.send({ error: { code: 'invalid_request', message: `bad ${bearer(request)}` } }),
			(_request, reply) => reply.send(okGeneration(0)),
		);
		const [failed, generated] = await twoKeys(generate({ options: { downloadImages: false } }));
		expect(shown(failed)).not.toContain(KEY);
		expect(shown(failed)).toContain('sk_***');
		expect(generated.json.turn_id).toBeDefined();
		expect(api.seen.map(bearer)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY_B}`]);
	});

	it('each row’s file is asked with its own key, and its signed link gets none', async () => {
		api.script('GET /api/file/x.png', (_request, reply) =>
			reply.code(302).header('location', `${other.url}/signed/x.png`).send(),
		);
		other.script('GET /signed/x.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1, 2])),
		);
		const output = await twoKeys({
			resource: 'file',
			operation: 'download',
			fileUrl: '/api/file/x.png',
		});
		expect(output).toHaveLength(2);
		expect(api.seen.map(bearer)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY_B}`]);
		expect(other.seen.map((request) => request.headers.authorization)).toEqual([
			undefined,
			undefined,
		]);
	});
});

describe('time and size are bounded', () => {
	it('a generate answer that trickles one byte at a time stops at the Timeout', async () => {
		api.script(GENERATE, async (_request, reply) => {
			reply.hijack();
			reply.raw.writeHead(200, { 'content-type': 'application/json' });
			for (let index = 0; index < 200 && !reply.raw.destroyed; index++) {
				reply.raw.write(' ');
				await sleep(100);
			}
			reply.raw.end('{}');
		});
		const error = await runError(
			generate({ options: { timeoutSeconds: 2, downloadImages: false } }),
		);
		expect(error.message).toMatch(/did not answer within 2 seconds/);
		expect(error.message).toMatch(/may have been charged/);
		expect(api.seen).toHaveLength(1);
	}, 30_000);

	it('a JSON answer over the cap is refused without reading it all', async () => {
		limits.maxJsonBytes = 64 * 1024;
		api.script(DETAIL, (_request, reply) => reply.send({ id: 7, blob: 'x'.repeat(200 * 1024) }));
		const error = await runError({ resource: 'publication', operation: 'get', publicationId: '7' });
		expect(error.message).toBe(
			'The Image Pack API answered with more data than an API answer can hold',
		);
	});

	it('a file that streams forever stops at the Max File Size', async () => {
		api.script('GET /api/file/huge.png', (_request, reply) => {
			reply.hijack();
			reply.raw.writeHead(200, { 'content-type': 'image/png' });
			const chunk = Buffer.alloc(64 * 1024, 1);
			const pump = () => {
				while (!reply.raw.destroyed && reply.raw.write(chunk)) {
					/* fill the buffer */
				}
				if (!reply.raw.destroyed) reply.raw.once('drain', pump);
			};
			pump();
		});
		const error = await runError({
			resource: 'file',
			operation: 'download',
			fileUrl: '/api/file/huge.png',
			options: { maxFileSizeMb: 1 },
		});
		expect(error.message).toMatch(/larger than 1 MiB, the Max File Size/);
	});

	it('a file announced larger than the cap is refused before reading', async () => {
		api.script('GET /api/file/big.png', (_request, reply) =>
			reply
				.type('image/png')
				.header('content-length', String(3 * 1024 * 1024))
				.send(Buffer.alloc(3 * 1024 * 1024)),
		);
		const error = await runError({
			resource: 'file',
			operation: 'download',
			fileUrl: '/api/file/big.png',
			options: { maxFileSizeMb: 1 },
		});
		expect(error.message).toMatch(/larger than 1 MiB/);
	});

	it('a file body cut short gives a message, not an empty one', async () => {
		api.script('GET /api/file/cut.png', (_request, reply) => {
			reply.hijack();
			reply.raw.writeHead(200, { 'content-type': 'image/png', 'content-length': '1000' });
			reply.raw.write(Buffer.alloc(10));
			void sleep(100).then(() => reply.raw.socket?.destroy());
		});
		const error = await runError({
			resource: 'file',
			operation: 'download',
			fileUrl: '/api/file/cut.png',
		});
		expect(error.message).toMatch(/cut off before it was complete/);
	});
});

describe('file URLs and names from odd answers', () => {
	it('an unparsable file URL is a clear error before any request', async () => {
		const error = await runError({
			resource: 'file',
			operation: 'download',
			fileUrl: 'http://[::1',
		});
		expect(error.message).toBe('Item 0: File URL "http://[::1" is not a valid URL');
		expect(api.seen).toHaveLength(0);
	});

	it('a malformed Content-Disposition falls back to the file’s name', async () => {
		api.script('GET /api/file/shoe.png', (_request, reply) =>
			reply
				.type('image/png')
				.header('content-disposition', "attachment; filename*=UTF-8''%E0%A4%A.png")
				.send(Buffer.from([1])),
		);
		const [item] = await run({
			resource: 'file',
			operation: 'download',
			fileUrl: '/api/file/shoe.png',
		});
		expect(item.json.filename).toBe('%E0%A4%A.png');
	});
});

describe('Stop: the execution’s cancel signal ends every wait', () => {
	it('a generate in flight is aborted, reported as possibly charged in its session, and no further item starts', async () => {
		const stop = new AbortController();
		let closed = false;
		api.script(GENERATE, async (request, reply) => {
			request.raw.socket.once('close', () => (closed = true));
			stop.abort();
			await sleep(20_000);
			return reply.send(okGeneration(0));
		});
		const items = [{ json: {} }, { json: {} }, { json: {} }];
		const error = await runNode({
			nodeType: new ImagePack(),
			parameters: generate({ sessionId: 's_42', options: { downloadImages: false } }),
			items,
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		}).catch((caught: Failure) => caught);
		expect((error as Failure).message).toMatch(
			/The execution was stopped while waiting for the Image Pack API/,
		);
		expect((error as Failure).message).toMatch(/may have been charged: check session s_42/);
		expect(api.seen.filter((request) => request.method === 'POST')).toHaveLength(1);
		await waitUntil(() => closed);
	});

	it('with Continue On Fail the stopped item is reported and the rest are not started', async () => {
		const stop = new AbortController();
		api.script(GENERATE, async (_request, reply) => {
			stop.abort();
			await sleep(20_000);
			return reply.send(okGeneration(0));
		});
		const [output] = await runNode({
			nodeType: new ImagePack(),
			parameters: generate({ options: { downloadImages: false } }),
			items: [{ json: {} }, { json: {} }],
			continueOnFail: true,
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		});
		// Both in the output (issue 56): the cut request may have been charged, the next never left.
		const errors = output.map(
			(item) => item.json.error as { code: string; charge: string; message: string },
		);
		expect(errors.map(({ code, charge }) => [code, charge])).toEqual([
			['cancelled', 'may_have_been_charged'],
			['cancelled', 'not_sent'],
		]);
		expect(errors[1].message).toMatch(/item 1 and the items after it were not started/);
		expect(api.seen.filter((request) => request.method === 'POST')).toHaveLength(1);
	});

	it('a Retry-After wait ends at Stop', async () => {
		const stop = new AbortController();
		api.script(LIST, (_request, reply) => {
			stop.abort();
			return reply.code(429).header('retry-after', '30').send(apiErrorBody('rate_limited'));
		});
		const error = await runNode({
			nodeType: new ImagePack(),
			parameters: { resource: 'publication', operation: 'getMany' },
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		}).catch((caught: Failure) => caught);
		expect((error as Failure).message).toMatch(/stopped/);
		expect(api.seen).toHaveLength(1);
	});

	it('a download in progress ends at Stop', async () => {
		const stop = new AbortController();
		api.script('GET /api/file/slow.png', stopMidBody(stop));
		const error = await runNode({
			nodeType: new ImagePack(),
			parameters: { resource: 'file', operation: 'download', fileUrl: '/api/file/slow.png' },
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		}).catch((caught: Failure) => caught);
		expect((error as Failure).message).toMatch(/stopped/);
	});

	it('Generate with one lane: a Stop during the downloads after the generations ends them, every paid item kept', async () => {
		const stop = new AbortController();
		api.script(GENERATE, (_request, reply) => reply.send(okGeneration(1)));
		api.script('GET /api/file/a_0.png', stopMidBody(stop));
		const output = await runNode({
			nodeType: new ImagePack(),
			parameters: generate({ options: { concurrency: 1 } }),
			items: [{ json: {} }, { json: {} }, { json: {} }],
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		});
		// Paid for: each item keeps its result, the downloads the Stop cut reported on it (issue 56).
		expect(output[0].map((item) => item.json.turn_id)).toEqual(['t_1', 't_1', 't_1']);
		for (const item of output[0]) {
			expect(item.json.download_errors).toEqual([
				expect.objectContaining({ error: expect.stringMatching(/stopped/) }),
			]);
		}
		// Every generation first, then one download, cut off: no further one starts.
		expect(api.seen.map((request) => request.method)).toEqual(['POST', 'POST', 'POST', 'GET']);
	});
});

/** Answers 200 with the first bytes of a file that never ends, and presses Stop meanwhile. */
function stopMidBody(stop: AbortController): Handler {
	return (_request, reply) => {
		reply.hijack();
		reply.raw.writeHead(200, { 'content-type': 'image/png' });
		reply.raw.write(Buffer.alloc(1000));
		stop.abort();
	};
}

async function waitUntil(check: () => boolean) {
	for (let tries = 0; tries < 200 && !check(); tries++) await sleep(50);
	expect(check()).toBe(true);
}
