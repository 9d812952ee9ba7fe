import type { NodeApiError } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { retryPolicy } from '../../../nodes/ImagePack/transport/limits';
import { runNode } from '../../harness/n8n';
import { TransportProbe } from '../../harness/probe-node';
import { apiErrorBody, type Handler, startScriptedServer } from '../../harness/scripted-server';
import { twoServers } from '../../harness/two-servers';

// A made-up key: the tests check it never leaks into errors.
const KEY = ['sk', 'test', '0123456789abcdef'].join('_');
const LIST = 'GET /api/v1/image-pack-publications';
const GENERATE = 'POST /api/v1/generate';

const { api, other: cdn } = twoServers();

async function probe(parameters: Record<string, string | number>, apiKey = KEY) {
	return await runNode({
		nodeType: new TransportProbe(),
		parameters,
		credentials: { baseUrl: `${api.url}/`, apiKey: `  ${apiKey}\n` },
	});
}

async function probeError(parameters: Record<string, string | number>): Promise<NodeApiError> {
	try {
		await probe(parameters);
	} catch (error) {
		return error as NodeApiError;
	}
	throw new Error('expected the request to fail');
}

describe('transport: requests', () => {
	it('joins the base URL, sends the trimmed key as Bearer and captures X-Request-Id', async () => {
		api.script(LIST, (_request, reply) =>
			reply.header('x-request-id', 'req_abc').send({ items: [], next_since_id: 0 }),
		);
		const [[item]] = await probe({ action: 'get' });
		expect(item.json).toEqual({
			body: { items: [], next_since_id: 0 },
			requestId: 'req_abc',
			status: 200,
		});
		expect(api.seen).toHaveLength(1);
		expect(api.seen[0].url).toBe('/api/v1/image-pack-publications?since_id=0&limit=50');
		expect(api.seen[0].headers.authorization).toBe(`Bearer ${KEY}`);
	});

	it('refuses a key without the sk_ prefix before sending anything', async () => {
		await expect(probe({ action: 'get' }, 'pk_wrong')).rejects.toThrow('must start with sk_');
		expect(api.seen).toHaveLength(0);
	});
});

describe('transport: every documented error code becomes an English NodeApiError', () => {
	const cases: Array<[number, string, RegExp]> = [
		[400, 'invalid_request', /rejected the request as invalid/],
		[400, 'invalid_model', /does not support the requested model/],
		[400, 'reference_image_missing', /reference image no longer exists/],
		[401, 'unauthorized', /No API key reached/],
		[401, 'invalid_api_key', /invalid, revoked or expired/],
		[402, 'insufficient_credits', /Not enough credits/],
		[403, 'insufficient_scope', /lacks the generate:write scope, which Generate need/],
		[404, 'session_not_found', /session does not exist/],
		[429, 'new_user_daily_limit', /younger than 7 days/],
		[500, 'internal_error', /credits were refunded/],
		[418, 'some_future_code', /returned an error \(code "some_future_code", HTTP 418\)/],
	];

	it.each(cases)('HTTP %i %s', async (status, code, message) => {
		api.script(GENERATE, (_request, reply) =>
			reply
				.code(status)
				.header('x-request-id', 'req_42')
				.send(apiErrorBody(code, `中文消息 ${KEY}`, 'req_42')),
		);
		const error = await probeError({ action: 'post', path: '/api/v1/generate' });
		expect(error.constructor.name).toBe('NodeApiError');
		expect(error.message).toMatch(message);
		expect(error.httpCode).toBe(String(status));
		expect(error.description).toContain(`code: ${code}`);
		expect(error.description).toContain(`HTTP status: ${status}`);
		expect(error.description).toContain('request id: req_42');
		expect(error.description).toContain('API message: 中文消息');
		// The key echoed by the server never reaches the user.
		expect(JSON.stringify({ m: error.message, d: error.description })).not.toContain(KEY);
		expect(api.seen).toHaveLength(1);
	});

	it('maps a 404 on a publication to a publication message', async () => {
		api.script('GET /api/v1/image-pack-publications/7', (_request, reply) =>
			reply.code(404).send(apiErrorBody('not_found')),
		);
		const error = await probeError({ action: 'get', path: '/api/v1/image-pack-publications/7' });
		expect(error.message).toBe('The publication does not exist or belongs to another account');
	});

	it('turns an HTML error page into a clear error', async () => {
		api.script(GENERATE, (_request, reply) =>
			reply.code(502).type('text/html').send('<html><body><h1>502 Bad Gateway</h1></body></html>'),
		);
		const error = await probeError({ action: 'post', path: '/api/v1/generate' });
		expect(error.message).toBe('The Image Pack API answered with something that is not JSON');
		expect(error.description).toContain('HTTP status: 502');
		expect(error.description).toContain('502 Bad Gateway');
		// A gateway error on generate says nothing about whether it ran.
		expect(error.description).toContain('may have been charged');
		expect(api.seen).toHaveLength(1);
	});
});

describe('transport: retries', () => {
	it('retries 429 rate_limited after Retry-After, then succeeds', async () => {
		const limited: Handler = (_request, reply) =>
			reply.code(429).header('retry-after', '0').send(apiErrorBody('rate_limited'));
		api.script(GENERATE, limited, limited, (_request, reply) => reply.send({ ok: true }));
		const [[item]] = await probe({ action: 'post', path: '/api/v1/generate' });
		expect(item.json.body).toEqual({ ok: true });
		expect(api.seen).toHaveLength(3);
	});

	it('waits the Retry-After the service asks for', async () => {
		api.script(
			LIST,
			(_request, reply) =>
				reply.code(429).header('retry-after', '1').send(apiErrorBody('rate_limited')),
			(_request, reply) => reply.send({ items: [] }),
		);
		await probe({ action: 'get' });
		expect(api.seen).toHaveLength(2);
		// The second request came after the requested second, not after the 5 ms backoff.
		expect(api.seen[1].at - api.seen[0].at).toBeGreaterThanOrEqual(950);
	});

	it('gives up on 429 after the bounded number of retries', async () => {
		api.script(LIST, (_request, reply) =>
			reply.code(429).header('retry-after', '0').send(apiErrorBody('rate_limited')),
		);
		const error = await probeError({ action: 'get' });
		expect(error.message).toBe('The API key is over its rate limit');
		expect(error.description).toContain(
			`gave up after ${retryPolicy.rateLimitRetries + 1} attempts`,
		);
		expect(api.seen).toHaveLength(retryPolicy.rateLimitRetries + 1);
	});

	it('does not wait for a Retry-After beyond the bound', async () => {
		api.script(LIST, (_request, reply) =>
			reply.code(429).header('retry-after', '3600').send(apiErrorBody('rate_limited')),
		);
		const error = await probeError({ action: 'get' });
		expect(error.description).toContain('asked to wait 3600 seconds');
		expect(api.seen).toHaveLength(1);
	});

	it('never retries new_user_daily_limit', async () => {
		api.script(GENERATE, (_request, reply) =>
			reply.code(429).send(apiErrorBody('new_user_daily_limit')),
		);
		await probeError({ action: 'post', path: '/api/v1/generate' });
		expect(api.seen).toHaveLength(1);
	});

	it('retries an idempotent GET on 502/503/504', async () => {
		api.script(
			LIST,
			(_request, reply) => reply.code(503).send('unavailable'),
			(_request, reply) => reply.code(504).send('timeout'),
			(_request, reply) => reply.header('x-request-id', 'req_ok').send({ items: [] }),
		);
		const [[item]] = await probe({ action: 'get' });
		expect(item.json.requestId).toBe('req_ok');
		expect(api.seen).toHaveLength(3);
	});

	it('retries a GET after a connection reset', async () => {
		api.script(
			LIST,
			(request, reply) => {
				reply.hijack();
				request.raw.socket.destroy();
			},
			(_request, reply) => reply.send({ items: [1] }),
		);
		const [[item]] = await probe({ action: 'get' });
		expect(item.json.body).toEqual({ items: [1] });
		expect(api.seen).toHaveLength(2);
	});

	it('retries a GET whose 200 body is not JSON, then reports it', async () => {
		api.script(LIST, (_request, reply) => reply.type('application/json').send('{"items": [tru'));
		const error = await probeError({ action: 'get' });
		expect(error.message).toBe('The Image Pack API answered with something that is not JSON');
		expect(api.seen).toHaveLength(retryPolicy.transientRetries + 1);
	});

	it('never re-sends generate after a reset: it may have been charged', async () => {
		api.script(GENERATE, (request, reply) => {
			reply.hijack();
			request.raw.socket.destroy();
		});
		const error = await probeError({ action: 'post', path: '/api/v1/generate' });
		expect(error.message).toContain(
			'The connection to the Image Pack API failed (the connection was reset',
		);
		expect(error.description).toContain('ECONNRESET');
		expect(error.message).toContain('may have been charged: check session s_probe');
		expect(api.seen).toHaveLength(1);
	});

	it('never re-sends generate after a timeout', async () => {
		api.script(GENERATE, async (_request, reply) => {
			await sleep(400);
			return reply.send({ ok: true });
		});
		const error = await probeError({ action: 'post', path: '/api/v1/generate', timeoutMs: 100 });
		expect(error.message).toContain('did not answer within');
		expect(error.message).toContain('may have been charged');
		expect(api.seen).toHaveLength(1);
	});

	it('never re-sends generate on a 503 either', async () => {
		api.script(GENERATE, (_request, reply) => reply.code(503).send(apiErrorBody('unavailable')));
		await probeError({ action: 'post', path: '/api/v1/generate' });
		expect(api.seen).toHaveLength(1);
	});

	it('reports an unreachable host without a retry storm', async () => {
		const closed = await startScriptedServer();
		const url = closed.url;
		await closed.close();
		const error = await runNode({
			nodeType: new TransportProbe(),
			parameters: { action: 'post', path: '/api/v1/generate' },
			credentials: { baseUrl: url, apiKey: KEY },
		}).catch((caught: NodeApiError) => caught);
		expect((error as NodeApiError).message).toContain(
			'could not be reached (the connection was refused)',
		);
		// Refused means nothing was sent, so no "may have been charged" warning.
		expect((error as NodeApiError).message).not.toContain('charged');
	});
});

describe('transport: file downloads', () => {
	it('follows the 302 to another host without the Authorization header', async () => {
		const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
		api.script('GET /api/file/shoe_1.png', (_request, reply) =>
			reply.code(302).header('location', `${cdn.url}/signed/shoe_1.png?sig=abc`).send(),
		);
		cdn.script('GET /signed/shoe_1.png', (_request, reply) => reply.type('image/png').send(png));
		const [[item]] = await probe({ action: 'download', path: '/api/file/shoe_1.png' });
		expect(api.seen[0].headers.authorization).toBe(`Bearer ${KEY}`);
		expect(cdn.seen).toHaveLength(1);
		expect(cdn.seen[0].url).toBe('/signed/shoe_1.png?sig=abc');
		expect(cdn.seen[0].headers.authorization).toBeUndefined();
		expect(item.json).toEqual({ fileName: 'shoe_1.png', mimeType: 'image/png' });
		expect(Buffer.from(item.binary!.data.data, 'base64')).toEqual(png);
		expect(item.binary!.data.fileName).toBe('shoe_1.png');
	});

	it('sends no key to a URL on another host', async () => {
		cdn.script('GET /elsewhere/a.png', (_request, reply) =>
			reply.type('image/png').send(Buffer.from([1, 2])),
		);
		await probe({ action: 'download', path: `${cdn.url}/elsewhere/a.png` });
		expect(api.seen).toHaveLength(0);
		expect(cdn.seen[0].headers.authorization).toBeUndefined();
	});

	it('reports an expired signed link', async () => {
		api.script('GET /api/file/old.png', (_request, reply) =>
			reply.code(302).header('location', `${cdn.url}/signed/old.png`).send(),
		);
		cdn.script('GET /signed/old.png', (_request, reply) => reply.code(403).send('expired'));
		const error = await probeError({ action: 'download', path: 'old.png' });
		expect(error.message).toContain('signed download link was refused');
	});
});

describe('transport: messages follow the route', () => {
	it('internal_error on a read does not promise a refund', async () => {
		api.script(LIST, (_request, reply) => reply.code(500).send(apiErrorBody('internal_error')));
		const error = await probeError({ action: 'get' });
		expect(error.message).toBe('The Image Pack API failed with an internal error (HTTP 500)');
	});
});
