/**
 * Hostile and broken servers: scripted servers that answer like the API but redirect, echo the key,
 * stream forever, trickle, cut bodies short or send absurd shapes. The nodes run in real n8n
 * execution contexts; the servers count what reached them.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import { ImagePackTrigger } from '../../../nodes/ImagePack/ImagePackTrigger.node';
import { limits, retryPolicy } from '../../../nodes/ImagePack/transport/limits';
import { PollingWorkflow, runNode } from '../../harness/n8n';
import {
	type ScriptedServer,
	apiErrorBody,
	startScriptedServer,
} from '../../harness/scripted-server';

// A made-up key: every test checks it never leaves its origin and never comes back out.
const KEY = ['sk', 'hostile', '0123456789abcdef'].join('_');
const GENERATE = 'POST /api/v1/generate';
const LIST = 'GET /api/v1/image-pack-publications';
const DETAIL = 'GET /api/v1/image-pack-publications/7';

let api: ScriptedServer;
let other: ScriptedServer;
const savedPolicy = { ...retryPolicy };
const savedLimits = { ...limits };

beforeAll(async () => {
	api = await startScriptedServer();
	other = await startScriptedServer();
	retryPolicy.backoffMs = 5;
});

afterAll(async () => {
	Object.assign(retryPolicy, savedPolicy);
	await api.close();
	await other.close();
});

beforeEach(() => {
	api.seen.length = 0;
	other.seen.length = 0;
	Object.assign(limits, savedLimits);
});

type Failure = Error & { description?: string; context?: IDataObject };

async function run(
	parameters: INodeParameters,
	options: { items?: INodeExecutionData[]; continueOnFail?: boolean; baseUrl?: string } = {},
) {
	const [output] = await runNode({
		nodeType: new ImagePack(),
		parameters,
		items: options.items,
		continueOnFail: options.continueOnFail,
		credentials: { baseUrl: options.baseUrl ?? api.url, apiKey: KEY },
	});
	return output;
}

async function runError(
	parameters: INodeParameters,
	options: { items?: INodeExecutionData[] } = {},
) {
	try {
		await run(parameters, options);
	} catch (error) {
		return error as Failure;
	}
	throw new Error('expected the node to fail');
}

/** Everything a failure or an output shows: message, description, context, JSON. */
function shown(value: unknown): string {
	if (value instanceof Error) {
		const failure = value as Failure;
		return JSON.stringify({
			message: failure.message,
			description: failure.description,
			context: failure.context,
		});
	}
	return JSON.stringify(value);
}

const generate = (parameters: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A white sneaker',
	model: 'nano-banana-2',
	...parameters,
});

function okGeneration(images = 1): IDataObject {
	return {
		ok: true,
		turn_id: 't_1',
		session_id: 's_1',
		credits_charged: 16 * images,
		duration_ms: 5,
		warnings: [],
		images: Array.from({ length: images }, (_unused, index) => ({
			id: `img_${index}`,
			filename: `a_${index}.png`,
			url: `/api/file/a_${index}.png`,
			width: 1,
			height: 1,
		})),
	};
}

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

describe('Get Many with Return All is bounded and ordered', () => {
	const getMany = { resource: 'publication', operation: 'getMany', returnAll: true };
	const record = (id: number) => ({ id, pack_id: `pk_${id}`, version: 1 });

	it('a server that ignores since_id is an error naming the fault, after one page', async () => {
		api.script(LIST, (_request, reply) =>
			reply.send({ items: [record(1), record(2)], next_since_id: 2 }),
		);
		const error = await runError(getMany);
		expect(error.message).toMatch(/returned a record with id 1 for since_id=2/);
		expect(api.seen).toHaveLength(2);
	});

	it('a server that keeps sending full pages stops at the bound', async () => {
		let next = 0;
		api.script(LIST, (_request, reply) => {
			const items = Array.from({ length: 200 }, (_unused, index) => record(next + index + 1));
			next += 200;
			return reply.send({ items, next_since_id: next });
		});
		const error = await runError(getMany);
		expect(error.message).toMatch(/Return All stops at 100000 publications/);
		expect(error.description).toMatch(/Since ID/);
		expect(api.seen).toHaveLength(500);
	}, 60_000);

	it('short pages that creep forward stop at the page bound', async () => {
		let cursor = 0;
		api.script(LIST, (_request, reply) => {
			cursor += 1;
			return reply.send({ items: [record(cursor)], next_since_id: cursor });
		});
		const error = await runError(getMany);
		expect(error.message).toMatch(/or 1000 pages/);
		expect(api.seen).toHaveLength(1000);
	}, 60_000);

	it('records come out by ascending id, each once, whatever the server’s order', async () => {
		api.script(
			LIST,
			(_request, reply) =>
				reply.send({ items: [record(5), record(3), record(5), record(4)], next_since_id: 5 }),
			(_request, reply) => reply.send({ items: [record(7), record(6)], next_since_id: 7 }),
			(_request, reply) => reply.send({ items: [], next_since_id: 7 }),
		);
		const output = await run(getMany);
		expect(output.map((item) => item.json.id)).toEqual([3, 4, 5, 6, 7]);
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

describe('bad option values fail before any request, naming item, parameter and values', () => {
	it.each([
		[
			'timeoutSeconds',
			-5,
			/Timeout \(Seconds\) "-5" is not allowed\. Allowed values: numbers from 1 to 3600/,
		],
		['timeoutSeconds', 3_000_000, /numbers from 1 to 3600/],
		['timeoutSeconds', 0, /numbers from 1 to 3600/],
		['timeoutSeconds', 'soon', /"soon" is not allowed/],
		['maxCreditsPerItem', -1, /Max Credits per Item "-1"/],
		['maxCreditsPerItem', 'NaN', /Max Credits per Item "NaN"/],
		[
			'concurrency',
			2.5,
			/Concurrency "2.5" is not allowed\. Allowed values: whole numbers from 1 to 8/,
		],
		['maxFileSizeMb', 0, /Max File Size \(MB\) "0"/],
		['acceptLanguage', 'fr', /Accept Language "fr" is not allowed\. Allowed values: en, zh-CN/],
	])('%s = %p', async (name, value, message) => {
		const items = [{ json: {} }, { json: {} }];
		const error = await runError(
			generate({
				options: { [name]: `={{ $itemIndex === 1 ? ${JSON.stringify(value)} : undefined }}` },
			}),
			{ items },
		);
		expect(error.message).toMatch(/^Item 1: /);
		expect(error.message).toMatch(message);
		expect(error.description).toContain(`Parameter "${name}" of item 1`);
		expect(api.seen).toHaveLength(0);
	});

	it.each([
		['an object', '={{ { a: 1 } }}', /Prompt must be text/],
		['only NUL characters', '={{ "\\u0000\\u0000" }}', /control character U\+0000/],
	])('a prompt that is %s', async (_name, prompt, message) => {
		const error = await runError(generate({ prompt }));
		expect(error.message).toMatch(message);
		expect(api.seen).toHaveLength(0);
	});
});

describe('any answer shape after a 200 keeps the paid result', () => {
	it.each([
		['images: [null]', { ...okGeneration(0), images: [null] }, /images\[0\] is not an image/],
		['warnings: [null]', { ...okGeneration(1), warnings: [null] }, /a warning is not an object/],
		['no images', { ok: true, turn_id: 't_9', session_id: 's_9' }, /no images list/],
		['images is a string', { ...okGeneration(0), images: 'x' }, /no images list/],
		['an array body', [1, 2], /JSON but not an object/],
		['an empty body', '', /empty/],
	])('%s', async (_name, body, problem) => {
		api.script(GENERATE, (_request, reply) =>
			typeof body === 'string' ? reply.type('application/json').send(body) : reply.send(body),
		);
		api.script('GET /api/file/a_0.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1])),
		);
		const [item] = await run(generate());
		expect((item.json.answer_problems as string[]).join(' ')).toMatch(problem);
		expect(api.seen.filter((request) => request.method === 'POST')).toHaveLength(1);
	});

	it('a 10,000-entry images list for n = 1 downloads one image', async () => {
		api.script(GENERATE, (_request, reply) => reply.send(okGeneration(10_000)));
		api.script('GET /api/file/a_0.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1])),
		);
		const [item] = await run(generate());
		expect(Object.keys(item.binary ?? {})).toEqual(['image_0']);
		expect(api.seen.filter((request) => request.method === 'GET')).toHaveLength(1);
		expect((item.json.answer_problems as string[]).join(' ')).toMatch(
			/lists 10000 images for 1 requested/,
		);
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
		const error = await runNode({
			nodeType: new ImagePack(),
			parameters: generate({ options: { downloadImages: false } }),
			items: [{ json: {} }, { json: {} }],
			continueOnFail: true,
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		}).catch((caught: Failure) => caught);
		expect((error as Failure).message).toMatch(/item 1 and the items after it were not started/);
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
		api.script('GET /api/file/slow.png', (_request, reply) => {
			reply.hijack();
			reply.raw.writeHead(200, { 'content-type': 'image/png' });
			reply.raw.write(Buffer.alloc(1000));
			stop.abort();
		});
		const error = await runNode({
			nodeType: new ImagePack(),
			parameters: { resource: 'file', operation: 'download', fileUrl: '/api/file/slow.png' },
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		}).catch((caught: Failure) => caught);
		expect((error as Failure).message).toMatch(/stopped/);
	});

	it('Generate with one lane: a Stop during the downloads after the generations ends them', async () => {
		const stop = new AbortController();
		api.script(GENERATE, (_request, reply) => reply.send(okGeneration(1)));
		api.script('GET /api/file/a_0.png', (_request, reply) => {
			reply.hijack();
			reply.raw.writeHead(200, { 'content-type': 'image/png' });
			reply.raw.write(Buffer.alloc(1000));
			stop.abort();
		});
		const error = await runNode({
			nodeType: new ImagePack(),
			parameters: generate({ options: { concurrency: 1 } }),
			items: [{ json: {} }, { json: {} }, { json: {} }],
			credentials: { baseUrl: api.url, apiKey: KEY },
			abortSignal: stop.signal,
		}).catch((caught: Failure) => caught);
		expect((error as Failure).message).toMatch(/stopped/);
		// Every generation first, then one download, cut off: no further one starts.
		expect(api.seen.map((request) => request.method)).toEqual(['POST', 'POST', 'POST', 'GET']);
	});
});

async function waitUntil(check: () => boolean) {
	for (let tries = 0; tries < 200 && !check(); tries++) await sleep(50);
	expect(check()).toBe(true);
}

describe('Retry On Fail', () => {
	// Generate under Retry On Fail: test/integration/image/generate-retry.test.ts.
	it('the read operations keep it (a read can be repeated)', async () => {
		api.script(DETAIL, (_request, reply) => reply.send({ id: 7 }));
		const [[item]] = await runNode({
			nodeType: new ImagePack(),
			parameters: { resource: 'publication', operation: 'get', publicationId: '7' },
			credentials: { baseUrl: api.url, apiKey: KEY },
			retryOnFail: true,
		});
		expect(item.json.id).toBe(7);
	});
});
